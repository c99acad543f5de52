using System.Globalization;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Measurement;

/// <summary>
/// One hop of a step — a caller's calls to one dependency — as the caller's own OpenTelemetry instruments measured
/// them over the step: calls per second, median and 99th-percentile duration (from the histogram's buckets), calls
/// that failed, and retries. <see cref="OnCriticalPath"/> marks the hop an operation waits for longest.
/// </summary>
internal sealed record Hop(string From, string To, double CallsPerSecond, double P50Ms, double P99Ms, long Errors, long Retries)
{
    public bool OnCriticalPath { get; init; }

    public string Name => $"{From} → {To}";
}

/// <summary>Every replica's <c>/metrics</c> samples of each service at one moment, by service name.</summary>
internal sealed record MetricsSnapshot(double Second, IReadOnlyDictionary<string, IReadOnlyList<PrometheusSample>> ByService)
{
    public static async Task<MetricsSnapshot> TakeAsync(SystemSampler sampler, IEnumerable<ServiceKind> services, CancellationToken cancellationToken)
    {
        var second = sampler.Now;
        var byService = new Dictionary<string, IReadOnlyList<PrometheusSample>>(StringComparer.Ordinal);
        foreach (var service in services)
        {
            byService[service.Name] = await sampler.ScrapeAsync(service, cancellationToken).ConfigureAwait(false);
        }

        return new MetricsSnapshot(second, byService);
    }

    public IReadOnlyList<PrometheusSample> Of(string service) => ByService.TryGetValue(service, out var samples) ? samples : [];
}

/// <summary>
/// The hops of a step, from two snapshots of the services' metrics: the instruments the services emit for their
/// calls (the gateway's and the Workflow's backend calls, the Cosmos DB client's HTTP calls, Delivery's Redis
/// commands, Ingestion's sends and the Workflow's message handling) and Polly's retry events.
/// </summary>
internal static class Hops
{
    private const string Retry = "OnRetry";

    /// <summary>Where each hop's figures come from: the caller, its duration histogram, and how a sample names the callee and a failure.</summary>
    private sealed record Source(string Caller, string Histogram, Func<PrometheusSample, string> Callee, Func<PrometheusSample, bool> Failed);

    private static readonly Source[] Sources =
    [
        new("gateway", "dronedelivery_gateway_backend_duration_seconds", s => s.Label("backend") ?? "?", s => s.Label("outcome") is not "succeeded"),
        new("workflow", "dronedelivery_workflow_backend_duration_seconds", s => s.Label("backend") ?? "?", s => s.Label("outcome") is not ("succeeded" or "notfound")),
        new("package", "dronedelivery_cosmos_call_duration_seconds", CosmosCallee, CosmosFailed),
        new("dronescheduler", "dronedelivery_cosmos_call_duration_seconds", CosmosCallee, CosmosFailed),
        new("delivery", "dronedelivery_delivery_redis_duration_seconds", s => $"Redis {s.Label("db_operation_name")}", s => s.Label("outcome") is not "success"),
        new("ingestion", "dronedelivery_ingestion_send_duration_seconds", _ => "Service Bus send", s => s.Label("outcome") is "failure"),
        new("workflow", "dronedelivery_workflow_process_duration_seconds", _ => "a message (whole handling)", s => s.Label("outcome") is not (null or "completed")),
    ];

    /// <summary>
    /// The hops between <paramref name="before"/> and <paramref name="after"/>, busiest caller first; a hop with no call
    /// in the window is left out. The critical path: the gateway's slowest backend (its three calls run in parallel,
    /// so an invoice waits for the slowest), and each other caller's slowest hop.
    /// </summary>
    public static IReadOnlyList<Hop> Between(MetricsSnapshot before, MetricsSnapshot after)
    {
        var seconds = Math.Max(1e-3, after.Second - before.Second);
        var hops = new List<Hop>();
        foreach (var source in Sources)
        {
            var previous = before.Of(source.Caller);
            var current = after.Of(source.Caller);
            foreach (var callee in current.Where(s => s.Name == source.Histogram + "_count").Select(source.Callee).Distinct().Order(StringComparer.Ordinal))
            {
                bool Mine(PrometheusSample s) => source.Callee(s) == callee;
                var calls = Delta(previous, current, source.Histogram + "_count", Mine);
                if (calls <= 0)
                {
                    continue;
                }

                var buckets = Buckets(previous, current, source.Histogram + "_bucket", Mine);
                var errors = Delta(previous, current, source.Histogram + "_count", s => Mine(s) && source.Failed(s));
                hops.Add(new Hop(
                    source.Caller,
                    callee,
                    calls / seconds,
                    Quantile(buckets, 0.50) * 1000,
                    Quantile(buckets, 0.99) * 1000,
                    (long)errors,
                    (long)Retries(source, callee, previous, current)));
            }
        }

        return MarkCriticalPath(hops);
    }

    /// <summary>Time HTTP requests of <paramref name="service"/> waited for a pooled connection between the snapshots: requests that waited, and their mean wait in ms.</summary>
    public static (long Waited, double MeanWaitMs) ConnectionPoolWaits(MetricsSnapshot before, MetricsSnapshot after, string service)
    {
        const string Metric = "http_client_request_time_in_queue_seconds";
        var waited = Delta(before.Of(service), after.Of(service), Metric + "_count", _ => true);
        var total = Delta(before.Of(service), after.Of(service), Metric + "_sum", _ => true);
        return ((long)waited, waited > 0 ? total / waited * 1000 : 0);
    }

    private const string CosmosDb = "Cosmos DB";

    /// <summary>
    /// A Cosmos DB hop: the container and the kind of call, e.g. <c>Cosmos DB utilization query</c> — one per
    /// container, as the case study reasons about each container's RU/s. A sample without a container (an account
    /// or database call, or a service from before the container was a label) names the kind only.
    /// </summary>
    private static string CosmosCallee(PrometheusSample sample) => sample.Label("db_collection_name") is { } container and not "none"
        ? $"{CosmosDb} {container} {sample.Label("db_operation_name")}"
        : $"{CosmosDb} {sample.Label("db_operation_name")}";

    /// <summary>Whether <paramref name="hop"/> is a caller's Cosmos DB calls of one kind (e.g. <c>query</c>), whichever container.</summary>
    public static bool IsCosmos(Hop hop, string kind) =>
        hop.To.StartsWith(CosmosDb + " ", StringComparison.Ordinal) && hop.To.EndsWith(" " + kind, StringComparison.Ordinal);

    /// <summary>A Cosmos DB call that failed: a 4xx or 5xx other than 404 (an answer) and 429 (throttled, which the SDK retries: a retry, not an error).</summary>
    private static bool CosmosFailed(PrometheusSample sample) =>
        int.TryParse(sample.Label("http_response_status_code"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var status) && status >= 400 && status is not 404 and not 429;

    /// <summary>
    /// Retries of a hop: Polly's retry events of the caller's pipeline named after the callee (the HTTP backends), or
    /// for Cosmos DB the throttled calls, each of which the SDK retries.
    /// </summary>
    private static double Retries(Source source, string callee, IReadOnlyList<PrometheusSample> before, IReadOnlyList<PrometheusSample> after)
    {
        if (callee.StartsWith(CosmosDb, StringComparison.Ordinal))
        {
            return Delta(before, after, source.Histogram + "_count", s => source.Callee(s) == callee && s.Label("http_response_status_code") == "429");
        }

        return Delta(before, after, "resilience_polly_strategy_events_total", s => s.Label("event_name") == Retry && s.Label("pipeline_name") == callee);
    }

    private static IReadOnlyList<Hop> MarkCriticalPath(List<Hop> hops)
    {
        // A caller's slowest hop by median; "a message (whole handling)" contains the Workflow's other hops.
        var critical = hops.Where(h => !h.To.StartsWith("a message", StringComparison.Ordinal))
            .GroupBy(h => h.From)
            .Select(g => g.MaxBy(h => h.P50Ms)!)
            .ToHashSet();
        return [.. hops.Select(h => critical.Contains(h) ? h with { OnCriticalPath = true } : h)];
    }

    /// <summary>The increase of the matching samples' sum between the snapshots (a replica restarted meanwhile counts from 0).</summary>
    private static double Delta(IReadOnlyList<PrometheusSample> before, IReadOnlyList<PrometheusSample> after, string name, Func<PrometheusSample, bool> match)
    {
        double Sum(IReadOnlyList<PrometheusSample> samples) => samples.Where(s => s.Name == name && match(s) && double.IsFinite(s.Value)).Sum(s => s.Value);
        return Math.Max(0, Sum(after) - Sum(before));
    }

    /// <summary>The histogram's cumulative bucket counts gained between the snapshots, by upper bound.</summary>
    private static SortedDictionary<double, double> Buckets(IReadOnlyList<PrometheusSample> before, IReadOnlyList<PrometheusSample> after, string name, Func<PrometheusSample, bool> match)
    {
        static double Bound(PrometheusSample s) => s.Label("le") is "+Inf" or null ? double.PositiveInfinity : double.Parse(s.Label("le")!, CultureInfo.InvariantCulture);
        var buckets = new SortedDictionary<double, double>();
        foreach (var group in after.Where(s => s.Name == name && match(s)).GroupBy(Bound))
        {
            buckets[group.Key] = group.Sum(s => s.Value);
        }

        foreach (var group in before.Where(s => s.Name == name && match(s)).GroupBy(Bound))
        {
            buckets[group.Key] = Math.Max(0, buckets.GetValueOrDefault(group.Key) - group.Sum(s => s.Value));
        }

        return buckets;
    }

    /// <summary>
    /// The <paramref name="q"/> quantile of a cumulative histogram, interpolated linearly inside its bucket (as
    /// PromQL's histogram_quantile does); in the last, unbounded bucket, the largest finite bound.
    /// </summary>
    internal static double Quantile(SortedDictionary<double, double> cumulative, double q)
    {
        if (cumulative.Count == 0)
        {
            return 0;
        }

        var total = cumulative.Last().Value;
        if (total <= 0)
        {
            return 0;
        }

        var rank = q * total;
        var (lower, below) = (0.0, 0.0);
        foreach (var (bound, count) in cumulative)
        {
            if (count >= rank)
            {
                if (double.IsPositiveInfinity(bound))
                {
                    return lower;
                }

                return count == below ? bound : lower + ((bound - lower) * (rank - below) / (count - below));
            }

            (lower, below) = (bound, count);
        }

        return lower;
    }
}
