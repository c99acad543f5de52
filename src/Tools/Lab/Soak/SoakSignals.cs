using System.Globalization;
using System.Text;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.Lab.Soak;

/// <summary>The lab system's signals as the soak reads them, and the verdict as its report shows it.</summary>
internal static class SoakSignals
{
    /// <summary>The load's requests, as the subject of the latency signal.</summary>
    public const string Requests = "requests";

    /// <summary>
    /// Components that keep what the load writes (redis-server the deliveries, the Cosmos DB emulator
    /// the packages, assignments and utilization, Prometheus the samples): their working sets grow by
    /// design while the load runs, so they are reported as stores, not judged as drift.
    /// </summary>
    public static readonly IReadOnlySet<string> Stores = new HashSet<string>(StringComparer.Ordinal) { "redis", "cosmos-emulator", "prometheus" };

    /// <summary>Scenario B's queue depth (waiting and scheduled messages); nothing for a system without Service Bus.</summary>
    public static IReadOnlyList<SoakGauge> Gauges(LocalDeployment deployment) => deployment.ServiceBus is { } serviceBus
        ?
        [
            new SoakGauge(DriftSignalKind.QueueDepth, PipelineScenario.Queue, async cancellationToken =>
            {
                var queue = (await serviceBus.MetricsAsync(cancellationToken).ConfigureAwait(false))[PipelineScenario.Queue];
                return queue.ActiveMessages + queue.ScheduledMessages;
            }),
        ]
        : [];

    /// <summary>
    /// Every signal on one time axis, seconds since the load started: the sampler's working sets and
    /// queue depth, each service's thread-pool queue (<paramref name="threadPool"/>, from
    /// <paramref name="threadPoolStart"/> on its sampler's clock) and the load's p99 per second.
    /// </summary>
    public static IReadOnlyList<DriftSeries> Series(
        IReadOnlyList<DriftSeries> sampled, IReadOnlyList<ThreadPoolSample> threadPool, double threadPoolStart, IReadOnlyList<SecondSample> load) =>
    [
        .. sampled.Select(s => s.Kind == DriftSignalKind.WorkingSet && Stores.Contains(s.Subject) ? s with { Kind = DriftSignalKind.StoredData } : s),
        .. threadPool.Where(t => t.Second >= threadPoolStart).GroupBy(t => t.Component).OrderBy(g => g.Key, StringComparer.Ordinal)
            .Select(g => new DriftSeries(DriftSignalKind.ThreadPoolQueue, g.Key, [.. g.Select(t => (t.Second - threadPoolStart, t.MaxQueueLength))])),
        new DriftSeries(DriftSignalKind.LatencyP99, Requests, [.. load.Where(s => s.P99Ms is not null).Select(s => ((double)s.Second, s.P99Ms!.Value))]),
    ];

    /// <summary>The verdict and a row per signal: its level, its first and last steady windows and its slope per hour.</summary>
    public static void AppendVerdict(StringBuilder md, SoakVerdict verdict)
    {
        md.AppendLine(CultureInfo.InvariantCulture, $"**Verdict: {verdict.Summary}.**").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture,
            $"The first {verdict.WarmUp.TotalSeconds:0} s are the warm-up, left out. The remaining {verdict.SteadyState.TotalSeconds:0} s are cut into {DriftAnalysis.Windows} windows; a line through the windows' means gives each signal's slope with its 95 % confidence interval, once over the whole steady state and once over its later half. A signal grows when both slopes are above zero with that confidence and at least the material growth (a tenth of its level per hour, and at least 20 MB, 1 item a minute or 20 ms per hour), and its last window is above its first. The stores ({string.Join(", ", Stores.Order(StringComparer.Ordinal))}) hold what the load writes; their growth is reported, not counted as drift. Every sample is in `soak/signals.csv` (docs/lab.md, Soak).")
            .AppendLine();
        md.AppendLine("| signal | level | first window | last window | slope per hour (95 % CI) | later half, per hour | material from | grows |")
            .AppendLine("|---|---:|---:|---:|---|---|---:|---|");
        foreach (var finding in verdict.Findings)
        {
            var unit = finding.Series.Unit;
            string PerHour(LinearTrend? trend) => trend is null
                ? "–"
                : $"{DriftFinding.Figure(trend.Slope * 3600)} ({DriftFinding.Figure(trend.SlopeLow * 3600)} to {DriftFinding.Figure(trend.SlopeHigh * 3600)}) {unit}/h";
            var grows = finding.IsDrift ? "**yes**" : finding.Grows ? "yes (a store: holds more data)" : "no";
            md.AppendLine(finding.Measured
                ? $"| {finding.Series.Name} | {DriftFinding.Figure(finding.Level)} {unit} | {DriftFinding.Figure(finding.Windows[0].Mean)} | {DriftFinding.Figure(finding.Windows[^1].Mean)} | {PerHour(finding.Whole)} | {PerHour(finding.LaterHalf)} | {DriftFinding.Figure(finding.Series.MaterialPerHour(finding.Level))} {unit}/h | {grows} |"
                : $"| {finding.Series.Name} | – | – | – | too few samples | – | – | – |");
        }

        md.AppendLine();
    }

    /// <summary>Every sample of every signal, one line each: <c>signal,subject,second,value</c>, seconds since the load started.</summary>
    public static async Task WriteCsvAsync(string path, SoakVerdict verdict, CancellationToken cancellationToken)
    {
        var csv = new StringBuilder("signal,subject,second,value\n");
        foreach (var series in verdict.Findings.Select(f => f.Series))
        {
            foreach (var (second, value) in series.Samples)
            {
                csv.AppendLine(CultureInfo.InvariantCulture, $"{series.Kind},{series.Subject},{second:0.###},{value:0.###}");
            }
        }

        Directory.CreateDirectory(Path.GetDirectoryName(path)!);
        await File.WriteAllTextAsync(path, csv.ToString(), cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The queue's depth over the soak, when the system has one.</summary>
    public static IEnumerable<ChartSpec> QueueChart(SoakVerdict verdict) =>
        verdict.Findings.Where(f => f.Series.Kind == DriftSignalKind.QueueDepth).Select(f => Charts.TimeSeries(
            "soak-queue.svg",
            "Soak: queue depth (waiting and scheduled messages)",
            [new Line(new Series(f.Series.Subject, [.. f.Series.Samples.Select(s => new TimePoint(s.Second, s.Value))]))],
            "messages"));
}
