using System.Buffers;
using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>Settings of the <c>delivery-requests</c> scenario.</summary>
public sealed partial record DeliveryRequestsScenarioOptions
{
    /// <summary>Ingestion's base URL, e.g. <c>http://127.0.0.1:5001/</c>.</summary>
    public required Uri Ingestion { get; init; }

    /// <summary>The base a relative <c>Location</c> header is resolved against; default <see cref="Ingestion"/>.</summary>
    public Uri? StatusBase { get; init; }

    public SeededOwners Owners { get; init; } = new();

    /// <summary>Seed of the owner, location, size and weight choices. Default 1.</summary>
    public int Seed { get; init; } = 1;

    /// <summary>Prefix of every package id (<c>{RunId}-{sequence}</c>), so runs never reuse ids; default random.</summary>
    public string RunId { get; init; } = Guid.NewGuid().ToString("N")[..12];

    /// <summary>When set, each accepted request is polled to completion; null measures acceptance only.</summary>
    public CompletionTracking? Completion { get; init; }

    /// <summary>The token each request (and its status polls) carries: that of the owner it requests for. Default none.</summary>
    public AccessTokens Tokens { get; init; } = AccessTokens.None;

    public Uri EffectiveStatusBase => StatusBase ?? Ingestion;

    internal static bool IsValidRunId(string runId) => RunIdPattern().IsMatch(runId);

    [GeneratedRegex("^[A-Za-z0-9_-]{1,32}$")]
    private static partial Regex RunIdPattern();
}

/// <summary>
/// Scenario B's request: <c>POST {ingestion}/api/deliveryrequests</c> with a delivery request for a seeded
/// owner, carrying that owner's token (<see cref="DeliveryRequestsScenarioOptions.Tokens"/>). A 202 is the response that counts as success, but it only means "queued": with
/// <see cref="DeliveryRequestsScenarioOptions.Completion"/> set, the scenario also follows each accepted
/// request's <c>Location</c> until the delivery exists, and reports completion latency — from the
/// request's intended send time to the first completed status — and completions per second.
/// </summary>
public sealed class DeliveryRequestsScenario(DeliveryRequestsScenarioOptions options) : LoadScenario
{
    private const double BaseLatitude = 47.50;
    private const double BaseLongitude = -122.40;
    private const double AreaDegrees = 0.30;
    private static readonly string[] s_sizes = ["Small", "Medium", "Large"];

    [ThreadStatic]
    private static ArrayBufferWriter<byte>? t_buffer;

    [ThreadStatic]
    private static Utf8JsonWriter? t_writer;

    public DeliveryRequestsScenarioOptions Options { get; } = options ?? throw new ArgumentNullException(nameof(options));

    public override string Name => "delivery-requests";

    public override Uri Target => Options.Ingestion;

    public override void Validate()
    {
        ValidateTarget(Options.Ingestion, "ingestion URL");
        if (Options.StatusBase is not null)
        {
            ValidateTarget(Options.StatusBase, "status base URL");
        }

        ArgumentNullException.ThrowIfNull(Options.Owners);
        Options.Owners.Validate();
        if (Options.RunId is null || !DeliveryRequestsScenarioOptions.IsValidRunId(Options.RunId))
        {
            throw new ArgumentException($"The run id must be 1-32 letters, digits, '-' or '_' (got '{Options.RunId}').");
        }

        Options.Completion?.Validate();
    }

    /// <summary>The JSON body of the request with the given sequence number, as the run sends it.</summary>
    public byte[] RequestBody(long sequence, DateTime nowUtc) => WriteBody(Options.Owners.AllIds(), sequence, nowUtc).ToArray();

    internal override ScenarioRun Start(ScenarioRunContext context) => new Run(this, context);

    private ReadOnlySpan<byte> WriteBody(string[] owners, long sequence, DateTime nowUtc)
    {
        var seed = Options.Seed;
        var buffer = t_buffer ??= new ArrayBufferWriter<byte>(1024);
        buffer.ResetWrittenCount();
        var writer = t_writer ??= new Utf8JsonWriter(buffer);
        writer.Reset(buffer);

        Span<char> text = stackalloc char[64];
        var pickupTime = TruncateToSeconds(nowUtc).AddMinutes(30 + SeededRandom.Below(SeededRandom.Hash(seed, sequence, 2), 90));
        var deadline = pickupTime.AddHours(2 + SeededRandom.Below(SeededRandom.Hash(seed, sequence, 3), 6));
        var weight = Math.Round(0.1 + (19.9 * SeededRandom.Unit(SeededRandom.Hash(seed, sequence, 4))), 1);

        writer.WriteStartObject();
        writer.WriteString("ownerId", OwnerOf(owners, sequence));
        writer.WriteString("pickupLocation", Location(text, seed, sequence, 5));
        writer.WriteString("dropoffLocation", Location(text, seed, sequence, 7));
        writer.WriteString("pickupTime", pickupTime);
        writer.WriteString("deadline", deadline);
        writer.WriteBoolean("expedited", SeededRandom.Unit(SeededRandom.Hash(seed, sequence, 9)) < 0.1);
        writer.WriteString("confirmationRequired", "None");
        writer.WriteStartObject("packageInfo");
        text.TryWrite(CultureInfo.InvariantCulture, $"{Options.RunId}-{sequence}", out var idLength);
        writer.WriteString("packageId", text[..idLength]);
        writer.WriteString("size", s_sizes[SeededRandom.Below(SeededRandom.Hash(seed, sequence, 10), s_sizes.Length)]);
        writer.WriteNumber("weight", weight);
        writer.WriteString("tag", "load-driver");
        writer.WriteEndObject();
        writer.WriteEndObject();
        writer.Flush();
        return buffer.WrittenSpan;
    }

    /// <summary>The owner request <paramref name="sequence"/> is for: the simulated user sending it.</summary>
    private string OwnerOf(string[] owners, long sequence) => owners[SeededRandom.Below(SeededRandom.Hash(Options.Seed, sequence, 1), owners.Length)];

    private static ReadOnlySpan<char> Location(Span<char> text, int seed, long sequence, int purpose)
    {
        var latitude = BaseLatitude + (AreaDegrees * SeededRandom.Unit(SeededRandom.Hash(seed, sequence, purpose)));
        var longitude = BaseLongitude + (AreaDegrees * SeededRandom.Unit(SeededRandom.Hash(seed, sequence, purpose + 1)));
        text.TryWrite(CultureInfo.InvariantCulture, $"{latitude:F5},{longitude:F5}", out var length);
        return text[..length];
    }

    private static DateTime TruncateToSeconds(DateTime utc) =>
        new(utc.Ticks - (utc.Ticks % TimeSpan.TicksPerSecond), DateTimeKind.Utc);

    private static bool SameOrigin(Uri a, Uri b) =>
        Uri.Compare(a, b, UriComponents.SchemeAndServer, UriFormat.SafeUnescaped, StringComparison.OrdinalIgnoreCase) == 0;

    private sealed class Run : ScenarioRun
    {
        private readonly DeliveryRequestsScenario _scenario;
        private readonly ScenarioRunContext _context;
        private readonly string[] _owners;
        private readonly Uri _postUri;
        private readonly Uri _statusBase;
        private readonly CompletionTracker? _tracker;

        public Run(DeliveryRequestsScenario scenario, ScenarioRunContext context)
        {
            _scenario = scenario;
            _context = context;
            _owners = scenario.Options.Owners.AllIds();
            _postUri = new Uri(WithTrailingSlash(scenario.Options.Ingestion), "api/deliveryrequests");
            _statusBase = WithTrailingSlash(scenario.Options.EffectiveStatusBase);
            _tracker = scenario.Options.Completion is { } completion ? new CompletionTracker(completion, context) : null;
        }

        public override async Task<int> SendAsync(HttpMessageInvoker http, long sequence, long intendedTimestamp, CancellationToken cancellationToken)
        {
            // The writer's buffer belongs to this thread; copy the body out before the first await.
            var json = _scenario.WriteBody(_owners, sequence, DateTime.UtcNow);
            var length = json.Length;
            var body = ArrayPool<byte>.Shared.Rent(length);
            json.CopyTo(body);
            try
            {
                using var content = new ByteArrayContent(body, 0, length);
                content.Headers.TryAddWithoutValidation("Content-Type", "application/json");
                var authorization = _scenario.Options.Tokens.For(_scenario.OwnerOf(_owners, sequence));
                using var request = new HttpRequestMessage(HttpMethod.Post, _postUri) { Content = content };
                request.Headers.Authorization = authorization;
                using var response = await http.SendAsync(request, cancellationToken).ConfigureAwait(false);
                await ResponseBody.DrainAsync(response, cancellationToken).ConfigureAwait(false);
                var status = (int)response.StatusCode;
                if (status == 202 && _tracker is not null && sequence % _scenario.Options.Completion!.FollowOneIn == 0)
                {
                    Follow(response.Headers.Location, intendedTimestamp, authorization);
                }

                return status;
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(body);
            }
        }

        public override Task DrainAsync(CancellationToken cancellationToken) =>
            _tracker?.DrainAsync(cancellationToken) ?? Task.CompletedTask;

        public override ValueTask DisposeAsync() => _tracker?.DisposeAsync() ?? ValueTask.CompletedTask;

        private void Follow(Uri? location, long intendedTimestamp, System.Net.Http.Headers.AuthenticationHeaderValue? authorization)
        {
            if (location is null)
            {
                _context.Recorder.CountUntracked();
                _context.Recorder.RecordErrorSample("A 202 Accepted response had no Location header; its delivery was not followed.");
                return;
            }

            var statusUri = location.IsAbsoluteUri ? location : new Uri(_statusBase, location);
            // Only ever poll the hosts the driver was pointed at.
            if (!SameOrigin(statusUri, _scenario.Options.Ingestion) && !SameOrigin(statusUri, _statusBase))
            {
                _context.Recorder.CountRejected();
                _context.Recorder.RecordErrorSample($"A Location header pointed at {statusUri.GetLeftPart(UriPartial.Authority)}, which is not a target; it was not polled.");
                return;
            }

            _tracker!.Track(statusUri, intendedTimestamp, authorization);
        }

        private static Uri WithTrailingSlash(Uri uri) =>
            uri.AbsoluteUri.EndsWith('/') ? uri : new Uri(uri.AbsoluteUri + "/");
    }
}
