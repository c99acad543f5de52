using System.Globalization;
using DroneDelivery.LoadDriver;

namespace DroneDelivery.Lab.Reporting;

/// <summary>
/// The console's view of a long load (a step of <c>run</c>, a soak, a capacity rate, a chaos run): every
/// interval of its <see cref="TimeProvider"/>, one line with the load's elapsed and planned time, its users
/// (closed model) or offered rate (open model), the successful requests per second since the previous line,
/// the errors so far and, where the command has one, a figure of its own (a chaos run's faults injected so far):
/// <c>  soak  120/600 s: 20 users, 38.5 ok/s, 0 errors</c>. The load driver's once-a-second snapshots only
/// replace the latest one; a line is written on the reporter's own timer, and only for a snapshot not shown yet.
/// </summary>
internal sealed class ProgressReporter : IProgress<LoadProgress>, IDisposable
{
    /// <summary>How often a command prints its progress unless told otherwise.</summary>
    public static readonly TimeSpan DefaultInterval = TimeSpan.FromSeconds(10);

    private readonly string _label;
    private readonly Action<string> _log;
    private readonly Func<string?>? _detail;
    private readonly Lock _sync = new();
    private readonly ITimer _timer;
    private LoadProgress? _latest;
    private LoadProgress? _shown;

    /// <param name="label">What the load is (a step's id, <c>soak</c>, a capacity rate, <c>chaos</c>).</param>
    /// <param name="log">Receives each line.</param>
    /// <param name="time">Decides when a line is due.</param>
    /// <param name="interval">The time between two lines.</param>
    /// <param name="detail">A figure of the command's own, read when a line is written; null adds nothing.</param>
    public ProgressReporter(string label, Action<string> log, TimeProvider time, TimeSpan interval, Func<string?>? detail = null)
    {
        ArgumentNullException.ThrowIfNull(time);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(interval, TimeSpan.Zero);
        _label = label;
        _log = log;
        _detail = detail;
        _timer = time.CreateTimer(_ => WriteDue(), null, interval, interval);
    }

    public void Report(LoadProgress value) => Volatile.Write(ref _latest, value);

    public void Dispose() => _timer.Dispose();

    /// <summary>
    /// One line: <paramref name="progress"/>'s figures, its rate of successes since <paramref name="previous"/>
    /// (the snapshot of the line before; null for the first line, which counts from the load's start).
    /// </summary>
    internal static string Line(string label, LoadProgress progress, LoadProgress? previous, string? detail)
    {
        var seconds = (progress.Elapsed - (previous?.Elapsed ?? TimeSpan.Zero)).TotalSeconds;
        var okPerSecond = seconds > 0 ? (progress.Successes - (previous?.Successes ?? 0)) / seconds : 0;
        var load = progress.ActiveUsers is { } users ? $"{users} users, "
            : progress.TargetRate is { } rate ? string.Create(CultureInfo.InvariantCulture, $"{rate:0.#} req/s offered, ")
            : string.Empty;
        return string.Create(CultureInfo.InvariantCulture,
            $"  {label} {progress.Elapsed.TotalSeconds,4:0}/{progress.LoadDuration.TotalSeconds:0} s: {load}{okPerSecond:0.#} ok/s, {progress.Errors} errors{(detail is null ? string.Empty : ", " + detail)}{(progress.Draining ? " (draining)" : string.Empty)}");
    }

    private void WriteDue()
    {
        lock (_sync)
        {
            if (Volatile.Read(ref _latest) is not { } latest || ReferenceEquals(latest, _shown))
            {
                return;
            }

            var line = Line(_label, latest, _shown, _detail?.Invoke());
            _shown = latest;
            _log(line);
        }
    }
}
