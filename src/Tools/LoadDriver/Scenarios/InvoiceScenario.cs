using System.Globalization;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>Settings of the <c>invoice</c> scenario.</summary>
public sealed record InvoiceScenarioOptions
{
    /// <summary>The gateway's base URL, e.g. <c>http://127.0.0.1:5000/</c>.</summary>
    public required Uri Gateway { get; init; }

    public SeededOwners Owners { get; init; } = new();

    /// <summary>The year the data was seeded for.</summary>
    public required int Year { get; init; }

    /// <summary>First month asked for, 1-12; default 1.</summary>
    public int FirstMonth { get; init; } = 1;

    /// <summary>Last month asked for, 1-12; default 12.</summary>
    public int LastMonth { get; init; } = 12;

    /// <summary>Seed of the owner and month choices; the same seed asks the same sequence of invoices. Default 1.</summary>
    public int Seed { get; init; } = 1;

    /// <summary>The token each request carries: that of the owner whose invoice it asks for. Default none.</summary>
    public AccessTokens Tokens { get; init; } = AccessTokens.None;

    /// <summary>The most (owner, month) pairs the scenario prepares URLs for.</summary>
    public const int MaxPairs = 100_000;
}

/// <summary>
/// Scenario A's request: <c>GET {gateway}/api/invoices/{ownerId}?year={year}&amp;month={month}</c> for an owner
/// and month chosen at random (from the seed) among the seeded ones, carrying that owner's token
/// (<see cref="InvoiceScenarioOptions.Tokens"/>): each owner is a simulated user reading its own invoices. Success is any 2xx.
/// </summary>
public sealed class InvoiceScenario(InvoiceScenarioOptions options) : LoadScenario
{
    public InvoiceScenarioOptions Options { get; } = options ?? throw new ArgumentNullException(nameof(options));

    public override string Name => "invoice";

    public override Uri Target => Options.Gateway;

    public override void Validate()
    {
        ValidateTarget(Options.Gateway, "gateway URL");
        ArgumentNullException.ThrowIfNull(Options.Owners);
        Options.Owners.Validate();
        if (Options.Year is < 1 or > 9999)
        {
            throw new ArgumentException($"The year must be between 1 and 9999 (got {Options.Year}).");
        }

        if (Options.FirstMonth is < 1 or > 12 || Options.LastMonth is < 1 or > 12 || Options.FirstMonth > Options.LastMonth)
        {
            throw new ArgumentException($"The months must be 1-12 with the first not after the last (got {Options.FirstMonth}-{Options.LastMonth}).");
        }

        var pairs = (long)Options.Owners.Count * (Options.LastMonth - Options.FirstMonth + 1);
        if (pairs > InvoiceScenarioOptions.MaxPairs)
        {
            throw new ArgumentException($"Owners × months must be at most {InvoiceScenarioOptions.MaxPairs} (got {pairs}).");
        }
    }

    internal override ScenarioRun Start(ScenarioRunContext context) => new Run(this, BuildUris(), Options.Owners.AllIds());

    private int MonthCount => Options.LastMonth - Options.FirstMonth + 1;

    private int PickIndex(long sequence, int pairs) => SeededRandom.Below(SeededRandom.Hash(Options.Seed, sequence, 0), pairs);

    // Every (owner, month) URL is built once, so a request costs no formatting or URL parsing.
    private Uri[] BuildUris()
    {
        var gateway = Options.Gateway.AbsoluteUri.EndsWith('/') ? Options.Gateway : new Uri(Options.Gateway.AbsoluteUri + "/");
        var owners = Options.Owners.AllIds();
        var uris = new Uri[owners.Length * MonthCount];
        for (var o = 0; o < owners.Length; o++)
        {
            var ownerPath = Uri.EscapeDataString(owners[o]);
            for (var m = 0; m < MonthCount; m++)
            {
                var relative = string.Create(CultureInfo.InvariantCulture, $"api/invoices/{ownerPath}?year={Options.Year}&month={Options.FirstMonth + m}");
                uris[(o * MonthCount) + m] = new Uri(gateway, relative);
            }
        }

        return uris;
    }

    private sealed class Run(InvoiceScenario scenario, Uri[] uris, string[] owners) : ScenarioRun
    {
        public override async Task<int> SendAsync(HttpMessageInvoker http, long sequence, long intendedTimestamp, CancellationToken cancellationToken)
        {
            var index = scenario.PickIndex(sequence, uris.Length);
            using var request = new HttpRequestMessage(HttpMethod.Get, uris[index]);
            request.Headers.Authorization = scenario.Options.Tokens.For(owners[index / scenario.MonthCount]);
            using var response = await http.SendAsync(request, cancellationToken).ConfigureAwait(false);
            await ResponseBody.DrainAsync(response, cancellationToken).ConfigureAwait(false);
            return (int)response.StatusCode;
        }
    }
}
