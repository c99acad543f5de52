using System.Globalization;

namespace DroneDelivery.Lab.Soak;

/// <summary>What a soak watches for growth.</summary>
internal enum DriftSignalKind
{
    /// <summary>A component's working set (its largest process), MB.</summary>
    WorkingSet,

    /// <summary>
    /// A store's working set, MB: it holds what the load writes, so it grows by design while the load
    /// writes new items. Reported beside the verdict, not counted in it.
    /// </summary>
    StoredData,

    /// <summary>A service's thread-pool queue (its largest replica), work items waiting for a thread.</summary>
    ThreadPoolQueue,

    /// <summary>A queue's backlog: messages waiting (active and scheduled).</summary>
    QueueDepth,

    /// <summary>The load's p99 latency per second, ms.</summary>
    LatencyP99,
}

/// <summary>One signal over a soak: samples as (seconds since the load started, value).</summary>
internal sealed record DriftSeries(DriftSignalKind Kind, string Subject, IReadOnlyList<(double Second, double Value)> Samples)
{
    public string Name => Kind switch
    {
        DriftSignalKind.WorkingSet or DriftSignalKind.StoredData => $"{Subject} working set",
        DriftSignalKind.ThreadPoolQueue => $"{Subject} thread-pool queue",
        DriftSignalKind.QueueDepth => $"{Subject} queue depth",
        _ => $"{Subject} p99 latency",
    };

    public string Unit => Kind switch
    {
        DriftSignalKind.WorkingSet or DriftSignalKind.StoredData => "MB",
        DriftSignalKind.ThreadPoolQueue => "work items",
        DriftSignalKind.QueueDepth => "messages",
        _ => "ms",
    };

    /// <summary>
    /// The smallest growth worth naming, per hour: a tenth of the signal's level, and at least 20 MB,
    /// one work item or message a minute, or 20 ms. Below it a slope is noise or a plateau being
    /// approached, not a leak that matters within a day.
    /// </summary>
    public double MaterialPerHour(double level) => Math.Max(0.10 * Math.Abs(level), Kind switch
    {
        DriftSignalKind.WorkingSet or DriftSignalKind.StoredData => 20,
        DriftSignalKind.ThreadPoolQueue or DriftSignalKind.QueueDepth => 60,
        _ => 20,
    });
}

/// <summary>
/// One signal's steady state: the means of its windows, the line through all of them and through the
/// later half, and whether it grows (see <see cref="DriftAnalysis"/>).
/// </summary>
internal sealed record DriftFinding(DriftSeries Series, IReadOnlyList<(double Second, double Mean)> Windows, LinearTrend? Whole, LinearTrend? LaterHalf)
{
    public double Level => Windows.Count == 0 ? 0 : Windows.Average(w => w.Mean);

    public bool Measured => Whole is not null && LaterHalf is not null;

    public double PerHour => (Whole?.Slope ?? 0) * 3600;

    /// <summary>
    /// Grows: the slope over the steady state is above zero with 95 % confidence and at least
    /// <see cref="DriftSeries.MaterialPerHour"/>, both still are in the later half (a level settling
    /// towards a plateau slows down there), and the last window is above the first.
    /// </summary>
    public bool Grows =>
        Measured
        && Whole!.SlopeLow > 0
        && PerHour >= Series.MaterialPerHour(Level)
        && LaterHalf!.SlopeLow > 0
        && LaterHalf.Slope * 3600 >= Series.MaterialPerHour(Level)
        && Windows[^1].Mean > Windows[0].Mean;

    /// <summary>A store holding more data is reported, not counted as drift.</summary>
    public bool IsDrift => Grows && Series.Kind != DriftSignalKind.StoredData;

    /// <summary>"workflow working set grows 310 MB/h (95 % CI 250–370 MB/h; 212 → 236 MB in the steady state)".</summary>
    public string Describe() => Measured
        ? string.Create(CultureInfo.InvariantCulture,
            $"{Series.Name} {(Grows ? "grows" : "changes")} {Figure(PerHour)} {Series.Unit}/h (95 % CI {Figure(Whole!.SlopeLow * 3600)} to {Figure(Whole.SlopeHigh * 3600)} {Series.Unit}/h; {Figure(Windows[0].Mean)} → {Figure(Windows[^1].Mean)} {Series.Unit} in the steady state)")
        : $"{Series.Name}: too few samples in the steady state";

    internal static string Figure(double value) =>
        Math.Abs(value) >= 100 ? value.ToString("0", CultureInfo.InvariantCulture)
        : Math.Abs(value) >= 10 ? value.ToString("0.#", CultureInfo.InvariantCulture)
        : value.ToString("0.##", CultureInfo.InvariantCulture);
}

/// <summary>What a soak concludes: each signal's finding, and whether anything grows.</summary>
internal sealed record SoakVerdict(IReadOnlyList<DriftFinding> Findings, TimeSpan WarmUp, TimeSpan SteadyState)
{
    public IReadOnlyList<DriftFinding> Growing => [.. Findings.Where(f => f.IsDrift)];

    /// <summary>Stores whose working set grows with the data the load writes.</summary>
    public IReadOnlyList<DriftFinding> StoresGrowing => [.. Findings.Where(f => f.Grows && !f.IsDrift)];

    /// <summary>No signal had enough samples in the steady state to decide anything.</summary>
    public bool Inconclusive => !Findings.Any(f => f.Measured);

    /// <summary>0: no drift found; 1: something grows; 4: too little data to say.</summary>
    public int ExitCode => Growing.Count > 0 ? 1 : Inconclusive ? 4 : 0;

    public string Summary => (Growing.Count > 0
        ? "drift found: " + string.Join("; ", Growing.Select(f => f.Describe()))
        : Inconclusive
            ? "inconclusive: no signal had enough samples in the steady state"
            : string.Create(CultureInfo.InvariantCulture, $"no drift found ({Findings.Count(f => f.Measured)} signals over {SteadyState.TotalMinutes:0.#} min of steady state after a {WarmUp.TotalSeconds:0} s warm-up)"))
        + (StoresGrowing.Count == 0 ? string.Empty : "; stores holding the data the load writes: " + string.Join("; ", StoresGrowing.Select(f => f.Describe())));
}

/// <summary>
/// Decides whether anything grows over a soak. The warm-up (JIT, pools filling, caches, the first
/// garbage collections) is left out; the rest, the steady state, is cut into <see cref="Windows"/>
/// equal windows whose means are compared, and a line is fitted through them — once through all, once
/// through the later half — so one spike counts for one window, not for the trend.
/// </summary>
internal static class DriftAnalysis
{
    /// <summary>How many windows the steady state is cut into.</summary>
    public const int Windows = 12;

    /// <summary>Fewer windows with samples than this, over the whole steady state or its later half, decide nothing.</summary>
    public const int MinimumWindows = 4;

    /// <summary>The default warm-up of a soak: a fifth of it, at least a minute, at most half.</summary>
    public static TimeSpan DefaultWarmUp(TimeSpan duration) =>
        TimeSpan.FromTicks(Math.Min(duration.Ticks / 2, Math.Max(TimeSpan.FromMinutes(1).Ticks, duration.Ticks / 5)));

    public static SoakVerdict Decide(IEnumerable<DriftSeries> series, TimeSpan warmUp, TimeSpan duration) =>
        new([.. series.Select(s => Analyse(s, warmUp.TotalSeconds, duration.TotalSeconds))], warmUp, duration - warmUp);

    public static DriftFinding Analyse(DriftSeries series, double steadyFrom, double steadyTo)
    {
        var width = (steadyTo - steadyFrom) / Windows;
        var windows = new List<(double Second, double Mean)>();
        if (width > 0)
        {
            for (var i = 0; i < Windows; i++)
            {
                var (start, end) = (steadyFrom + (i * width), steadyFrom + ((i + 1) * width));
                var inside = series.Samples.Where(s => s.Second >= start && (s.Second < end || (i == Windows - 1 && s.Second <= end))).ToList();
                if (inside.Count > 0)
                {
                    windows.Add((start + (width / 2), inside.Average(s => s.Value)));
                }
            }
        }

        var laterHalf = windows.Where(w => w.Second >= steadyFrom + ((steadyTo - steadyFrom) / 2)).ToList();
        return new DriftFinding(
            series,
            windows,
            windows.Count >= MinimumWindows ? LinearTrend.Fit(windows) : null,
            laterHalf.Count >= MinimumWindows ? LinearTrend.Fit(laterHalf) : null);
    }
}
