using System.Collections.Concurrent;
using System.Diagnostics;

namespace DroneDelivery.Lab.Soak;

/// <summary>A level the soak reads at every sweep (a queue's depth); null when it cannot be read this time.</summary>
internal sealed record SoakGauge(DriftSignalKind Kind, string Subject, Func<CancellationToken, Task<double?>> ReadAsync);

/// <summary>
/// Samples what a soak watches for growth, at a fixed interval on the given clock: the working set of
/// each component (its largest process, from the processes it is given, whatever they are) and the
/// gauges. Its samples become <see cref="DriftSeries"/> on the soak's time axis.
/// </summary>
internal sealed class SoakSampler : IAsyncDisposable
{
    private readonly Func<IEnumerable<(string Component, int ProcessId)>> _processes;
    private readonly IReadOnlyList<SoakGauge> _gauges;
    private readonly TimeProvider _time;
    private readonly long _started;
    private readonly ConcurrentQueue<(DriftSignalKind Kind, string Subject, double Second, double Value)> _samples = new();
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private int _sweeps;

    public SoakSampler(Func<IEnumerable<(string Component, int ProcessId)>> processes, IReadOnlyList<SoakGauge> gauges, TimeSpan interval, TimeProvider time)
    {
        _processes = processes;
        _gauges = gauges;
        _time = time;
        _started = time.GetTimestamp();
        _loop = Task.Run(() => LoopAsync(interval));
    }

    /// <summary>Seconds since sampling started, on the sampler's clock.</summary>
    public double Now => _time.GetElapsedTime(_started).TotalSeconds;

    /// <summary>Sweeps completed so far.</summary>
    public int Sweeps => Volatile.Read(ref _sweeps);

    /// <summary>Every signal sampled, its seconds counted from <paramref name="origin"/> (a time on <see cref="Now"/>'s axis).</summary>
    public IReadOnlyList<DriftSeries> Series(double origin) =>
    [
        .. _samples.GroupBy(s => (s.Kind, s.Subject))
            .OrderBy(g => g.Key.Kind).ThenBy(g => g.Key.Subject, StringComparer.Ordinal)
            .Select(g => new DriftSeries(g.Key.Kind, g.Key.Subject, [.. g.Select(s => (s.Second - origin, s.Value))])),
    ];

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        await _loop.ConfigureAwait(false);
        _stop.Dispose();
    }

    private async Task LoopAsync(TimeSpan interval)
    {
        using var timer = new PeriodicTimer(interval, _time);
        try
        {
            do
            {
                await SweepAsync(_stop.Token).ConfigureAwait(false);
                Interlocked.Increment(ref _sweeps);
            }
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false));
        }
        catch (OperationCanceledException)
        {
        }
    }

    private async Task SweepAsync(CancellationToken cancellationToken)
    {
        var now = Now;
        foreach (var component in _processes().GroupBy(p => p.Component))
        {
            var megabytes = component.Select(p => WorkingSetMegabytes(p.ProcessId)).Max();
            if (megabytes is { } value)
            {
                _samples.Enqueue((DriftSignalKind.WorkingSet, component.Key, now, value));
            }
        }

        foreach (var gauge in _gauges)
        {
            try
            {
                if (await gauge.ReadAsync(cancellationToken).ConfigureAwait(false) is { } value)
                {
                    _samples.Enqueue((gauge.Kind, gauge.Subject, now, value));
                }
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException && !cancellationToken.IsCancellationRequested)
            {
                // A busy emulator misses one reading; the next one counts.
            }
        }
    }

    /// <summary>The process's working set, or null once it is gone.</summary>
    private static double? WorkingSetMegabytes(int processId)
    {
        try
        {
            using var process = Process.GetProcessById(processId);
            return process.WorkingSet64 / (1024.0 * 1024.0);
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException)
        {
            return null;
        }
    }
}
