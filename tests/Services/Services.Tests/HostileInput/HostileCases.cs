using System.Collections.Concurrent;
using System.Net;
using System.Text.Json;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Services.Tests.HostileInput;

/// <summary>
/// What every hostile request must get, and how many were sent per target: the figures are written to
/// <c>artifacts/test-results/hostile-input.txt</c> when the test run ends (docs/security.md quotes them).
/// </summary>
internal static class HostileCases
{
    /// <summary>Cases per target in every run.</summary>
    public const int PerTarget = 10_000;

    /// <summary>Longer than this is a hang: the server never answered.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    private static readonly ConcurrentDictionary<string, int> Counts = new(StringComparer.Ordinal);
    private static readonly ConcurrentDictionary<string, ConcurrentDictionary<string, int>> Statuses = new(StringComparer.Ordinal);

    static HostileCases() => AppDomain.CurrentDomain.ProcessExit += (_, _) => Write();

    /// <summary>Sends one case and checks its answer: never a 5xx, never a hang, and a 400 says what was wrong.</summary>
    public static async Task SendAsync(string target, HttpClient client, HttpRequestMessage request, Func<HttpResponseMessage, string?>? extraCheck = null)
    {
        Counts.AddOrUpdate(target, 1, (_, n) => n + 1);
        using var patience = new CancellationTokenSource(Patience);
        HttpResponseMessage response;
        try
        {
            response = await client.SendAsync(request, patience.Token);
        }
        catch (OperationCanceledException) when (patience.IsCancellationRequested)
        {
            throw new InvalidOperationException($"{request.Method} {request.RequestUri} got no answer within {Patience.TotalSeconds} s (a hang).");
        }

        using (response)
        {
            var status = (int)response.StatusCode;
            var body = await response.Content.ReadAsStringAsync(patience.Token);
            // Kestrel's HTTP parser refuses some request targets (a NUL in the decoded path) before the
            // application sees the request: the protocol's own 400, empty, and the connection closed.
            var parserRefusal = status == 400 && body.Length == 0 && response.Headers.ConnectionClose == true;
            Statuses.GetOrAdd(target, _ => new()).AddOrUpdate(parserRefusal ? "400 (HTTP parser)" : status.ToString(System.Globalization.CultureInfo.InvariantCulture), 1, (_, n) => n + 1);
            if (status >= 500)
            {
                throw new InvalidOperationException($"{request.Method} {request.RequestUri} answered {status}: {Shorten(body)}");
            }

            if (status == 400 && !parserRefusal)
            {
                CheckNamesTheProblem(request, response, body);
            }

            if (extraCheck?.Invoke(response) is { } failure)
            {
                throw new InvalidOperationException($"{request.Method} {request.RequestUri} answered {status}: {failure}");
            }
        }
    }

    /// <summary>A 400 is problem details that says what was wrong: the invalid fields, or the reason the request was unreadable.</summary>
    private static void CheckNamesTheProblem(HttpRequestMessage request, HttpResponseMessage response, string body)
    {
        if (response.Content.Headers.ContentType?.MediaType != "application/problem+json")
        {
            throw new InvalidOperationException($"{request.Method} {request.RequestUri}: a 400 without problem details: {Shorten(body)}");
        }

        using var problem = JsonDocument.Parse(body);
        var root = problem.RootElement;
        var names = root.TryGetProperty("errors", out var errors) && errors.ValueKind == JsonValueKind.Object && errors.EnumerateObject().Any();
        var explains = root.TryGetProperty("detail", out var detail) && detail.ValueKind == JsonValueKind.String && detail.GetString()!.Length > 0;
        if (!names && !explains)
        {
            throw new InvalidOperationException($"{request.Method} {request.RequestUri}: a 400 naming nothing: {Shorten(body)}");
        }
    }

    /// <summary>Cases run per target so far, with the answers' status codes.</summary>
    public static string Describe() =>
        string.Join(Environment.NewLine, Counts.OrderBy(c => c.Key, StringComparer.Ordinal).Select(c =>
            $"{c.Key}: {c.Value} cases; statuses {string.Join(", ", Statuses.GetValueOrDefault(c.Key, new()).OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key}×{s.Value}"))}"));

    private static void Write()
    {
        if (Counts.IsEmpty)
        {
            return;
        }

        try
        {
            var directory = RepositoryLayout.InRepository("artifacts", "test-results");
            Directory.CreateDirectory(directory);
            File.WriteAllText(Path.Combine(directory, "hostile-input.txt"), $"{DateTimeOffset.UtcNow:u}{Environment.NewLine}{Describe()}{Environment.NewLine}");
        }
        catch (IOException)
        {
            // The figures are also in each test's output.
        }
    }

    private static string Shorten(string text) => text.Length <= 400 ? text : text[..400] + "…";
}
