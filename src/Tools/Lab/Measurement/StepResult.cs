using System.Globalization;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver.Results;
using HdrHistogram;

namespace DroneDelivery.Lab.Measurement;

/// <summary>A value at a time, in seconds since the step's load started.</summary>
internal readonly record struct TimePoint(double Second, double Value);

/// <summary>A named series for a chart.</summary>
internal sealed record Series(string Name, IReadOnlyList<TimePoint> Points);

/// <summary>CPU of one component over a step: the average and the maximum of its per-second samples, % of one core.</summary>
internal sealed record CpuFigures(string Component, double AveragePercent, double MaxPercent);

/// <summary>Scenario A's Cosmos DB figures for one step.</summary>
internal sealed record CosmosFigures(
    string Container,
    long ThrottledRequests,
    long Operations,
    double RequestUnitsPerOperation,
    double CallsPerOperation,
    double ProvisionedPerPartition,
    IReadOnlyList<Series> ConsumedPerPartition,
    Series ThrottledPerSecond);

/// <summary>Scenario B's Service Bus and Redis figures for one step.</summary>
internal sealed record PipelineFigures(
    long Incoming,
    long Outgoing,
    long Completed,
    long Abandoned,
    long DeadLettered,
    long LockLost,
    long RedisOutOfMemoryErrors,
    long ActiveAtEnd,
    long ScheduledAtEnd,
    double MaxCompletionsPerSecond,
    Series IncomingPerSecond,
    Series OutgoingPerSecond,
    Series CompletionsPer5Seconds,
    Series DeadLetteredPerSecond)
{
    /// <summary>Mean time the workflow took to handle one message, settlement included (its process-duration histogram), in seconds.</summary>
    public double? MeanProcessSeconds { get; init; }

    /// <summary>Redis' memory when the load began and when the step was measured (<c>INFO memory</c>).</summary>
    public RedisMemory? Redis { get; init; }

    /// <summary>Messages completed in the 5-second bins that ended within the load (the drain's are not counted).</summary>
    public double CompletedDuringLoad(TimeSpan loadDuration) =>
        CompletionsPer5Seconds.Points.Where(p => p.Second + 5 <= loadDuration.TotalSeconds + 0.5).Sum(p => p.Value);
}

/// <summary>Redis' used memory at a step's start and end, and its <c>maxmemory</c> (0: unlimited), in bytes.</summary>
internal sealed record RedisMemory(long UsedAtStart, long UsedAtEnd, long Max)
{
    /// <summary>The end's used memory as a share of maxmemory; null when unlimited.</summary>
    public double? UsedShareAtEnd => Max > 0 ? UsedAtEnd / (double)Max : null;
}

/// <summary>The trace a step's report draws: its id, its root span's duration, its spans, how many traces it was chosen from, and its throttled calls.</summary>
internal sealed record StepTrace(string TraceId, double DurationMs, int Spans, int Traced, int Throttled);

/// <summary>Everything the lab measured in one step.</summary>
internal sealed record StepResult
{
    public required Step Step { get; init; }

    public required LoadTestResult Load { get; init; }

    public required IReadOnlyList<CpuFigures> Cpu { get; init; }

    public required IReadOnlyList<Series> CpuSeries { get; init; }

    /// <summary>Largest thread-pool queue seen per service.</summary>
    public required IReadOnlyDictionary<string, double> ThreadPoolQueueMax { get; init; }

    /// <summary>
    /// Longest time the lab's one-second sampling timer fired late during the step: the machine (or the
    /// lab itself) stood still that long. From <see cref="DisturbedAfterSeconds"/> on, the step's figures
    /// say more about the machine than about the system.
    /// </summary>
    public double LongestStallSeconds { get; init; }

    /// <summary>A stall at least this long marks the step as disturbed in the console and the report.</summary>
    public const double DisturbedAfterSeconds = 2;

    /// <summary>
    /// Cores the rest of the machine (processes the lab did not start, and a hypervisor's steal) took on
    /// average during the step. They are not the system's to use: the step's <see cref="Budget"/> leaves them out.
    /// </summary>
    public double OtherCores { get; init; }

    /// <summary>A stall (<see cref="DisturbedAfterSeconds"/>) marks the step as disturbed: its figures show the machine standing still.</summary>
    public bool Disturbed => LongestStallSeconds >= DisturbedAfterSeconds;

    /// <summary>What disturbed the step, for the console and the report; empty when nothing did.</summary>
    public string Disturbance => DescribeDisturbance(LongestStallSeconds);

    /// <summary>
    /// Set when an earlier attempt at this step was disturbed or machine-bound and the step was measured again:
    /// that attempt's longest stall, in seconds. These figures are the later attempt's.
    /// </summary>
    public double? EarlierAttemptStallSeconds { get; init; }

    /// <summary>With <see cref="EarlierAttemptStallSeconds"/>: why the earlier attempt was not kept.</summary>
    public string? EarlierAttemptReason { get; init; }

    internal static string DescribeDisturbance(double stallSeconds) =>
        stallSeconds >= DisturbedAfterSeconds
            ? string.Create(CultureInfo.InvariantCulture, $"the machine stood still for up to {stallSeconds:0.0} s (the lab's 1 s timer fired that late)")
            : string.Empty;

    /// <summary>
    /// The model scale the step ran at: every rate of the emulated cloud and its users (RU/s, arrivals) times
    /// it, every injected latency divided by it (<c>ModelScale</c>). Rates ÷ scale and latencies × scale are
    /// the article-equivalent figures.
    /// </summary>
    public double Scale { get; init; } = 1;

    /// <summary>Successful requests per second the article's system would have served: <see cref="Throughput"/> ÷ <see cref="Scale"/>.</summary>
    public double ArticleThroughput => Throughput / Scale;

    /// <summary>The average latency at the article's speed: <see cref="AverageLatencyMs"/> × <see cref="Scale"/>.</summary>
    public double ArticleAverageLatencyMs => AverageLatencyMs * Scale;

    /// <summary>The whole system's CPU at the step's busiest <see cref="CpuBudget.WindowSeconds"/> seconds, in cores.</summary>
    public double SystemCpuPeakCores { get; init; }

    /// <summary>The whole system's CPU over the step, on average, in cores.</summary>
    public double SystemCpuAverageCores { get; init; }

    /// <summary>The whole system's CPU each second, in cores: what the budget is held to.</summary>
    public Series SystemCpuSeries { get; init; } = new("system", []);

    /// <summary>What the system could use in this step; null where it was not measured.</summary>
    public CpuBudget? Budget { get; init; }

    /// <summary>A service whose thread pool stayed saturated during the step, described; null when none did.</summary>
    public string? ThreadPoolSaturation { get; init; }

    /// <summary>
    /// Seconds the system's threads waited in a run queue for a core per second they ran on one, over the step
    /// (<see cref="RunQueueMeter"/>); null where it was not measured. Shown as the CPU's saturation, not judged: a
    /// fan-out wakes a dozen threads at once, which wait for one another even on a quiet machine, and the share
    /// keeps its level however small the scale (A3 under one core's quota: 1.23 at scales 0.14 and 0.1) while the
    /// model still decides the figures. Measured: 0.8–1.5 on two quiet cores, 0.7–1.4 under one core's quota,
    /// 1.7–2.5 beside two busy processes.
    /// </summary>
    public double? CoreWaitShare { get; init; }

    /// <summary>
    /// The machine, not the model, decided the step's figures: the system took more than its CPU budget at the
    /// step's peak, or a thread pool queued work for want of a core. Its verdicts are shown, not judged.
    /// </summary>
    public bool MachineBound => MachineBoundReason.Length > 0;

    /// <summary>Why the step is machine-bound; empty when it is not.</summary>
    public string MachineBoundReason
    {
        get
        {
            var causes = new List<string>();
            if (Budget is { } budget && SystemCpuPeakCores > budget.LimitCores)
            {
                causes.Add(string.Create(CultureInfo.InvariantCulture, $"the system took {SystemCpuPeakCores:0.00} cores at its busiest {CpuBudget.WindowSeconds} s, above its budget of {budget.Describe()}"));
            }

            if (ThreadPoolSaturation is { } saturation)
            {
                causes.Add(saturation);
            }

            return string.Join("; ", causes);
        }
    }

    public CosmosFigures? Cosmos { get; init; }

    /// <summary>Each caller's calls to each dependency over the step, from the services' own metrics (<see cref="Measurement.Hops"/>).</summary>
    public IReadOnlyList<Hop> Hops { get; init; } = [];

    /// <summary>The trace the step's report draws, or null when none was traced.</summary>
    public StepTrace? Trace { get; init; }

    /// <summary>The step's CPU profile of its busiest process (<c>run --profile</c>), or null.</summary>
    public Profiling.ProfiledProcess? Profile { get; init; }

    /// <summary>Per service, the HTTP requests that waited for a pooled connection during the step and their mean wait.</summary>
    public IReadOnlyDictionary<string, (long Waited, double MeanWaitMs)> ConnectionPoolWaits { get; init; } = new Dictionary<string, (long, double)>();

    /// <summary>Processes of each component while the step was measured (to turn average CPU into CPU seconds).</summary>
    public IReadOnlyDictionary<string, int> Processes { get; init; } = new Dictionary<string, int>();

    /// <summary>CPU seconds a component's processes used during the step: its average CPU per second × its processes.</summary>
    public double CpuSeconds(string component)
    {
        var series = CpuSeries.FirstOrDefault(s => s.Name == component);
        if (series is null)
        {
            return 0;
        }

        var total = 0.0;
        for (var i = 0; i < series.Points.Count; i++)
        {
            var interval = i == 0 ? 1 : series.Points[i].Second - series.Points[i - 1].Second;
            total += series.Points[i].Value / 100 * interval;
        }

        return total * Processes.GetValueOrDefault(component, 1);
    }

    public PipelineFigures? Pipeline { get; init; }

    /// <summary>Successful requests per second over the load phase.</summary>
    public double Throughput => Load.LoadDuration.TotalSeconds > 0 ? Load.Totals.Successes / Load.LoadDuration.TotalSeconds : 0;

    /// <summary>Mean request latency, ms.</summary>
    public double AverageLatencyMs => Load.RequestLatency.TotalCount > 0 ? Load.RequestLatency.GetMean() / 1000.0 : 0;

    public double PercentileMs(double percentile) =>
        Load.RequestLatency.TotalCount > 0 ? Load.RequestLatency.GetValueAtPercentile(percentile) / 1000.0 : 0;
}
