using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus.Metrics;

/// <summary>
/// Reads the queues' metrics for the JSON snapshot and keeps its per-second series (Prometheus reads <see cref="EmulatorInstruments"/>).
/// <paramref name="queues"/> changes as the administration API creates and deletes entities: a new one starts its series
/// when first seen, a deleted one's series goes with it.
/// </summary>
internal sealed class MetricsRecorder(IReadOnlyList<QueueEntity> queues, int seriesSeconds, TimeProvider time, FaultInjector faults)
{
    private readonly Dictionary<QueueEntity, (QueueCounters Last, Queue<QueueSecond> Series)> _series =
        queues.ToDictionary(q => q, q => (q.Metrics.Read(), new Queue<QueueSecond>()));
    private readonly Lock _sync = new();

    /// <summary>Records one second of deltas for every queue (called once a second).</summary>
    public void Sample(DateTimeOffset now)
    {
        lock (_sync)
        {
            var current = queues.ToHashSet();
            foreach (var gone in _series.Keys.Where(q => !current.Contains(q)).ToList())
            {
                _series.Remove(gone);
            }

            foreach (var queue in current)
            {
                var (last, series) = SeriesOf(queue);
                var counters = queue.Metrics.Read();
                series.Enqueue(new QueueSecond(now.ToUnixTimeSeconds(), counters.Minus(last), queue.Counts().Active, queue.DeadLetterQueue?.Counts().Active ?? 0));
                while (series.Count > seriesSeconds)
                {
                    series.Dequeue();
                }

                _series[queue] = (counters, series);
            }
        }
    }

    public EmulatorMetricsSnapshot Snapshot()
    {
        var now = time.GetUtcNow();
        var result = new List<QueueMetricsSnapshot>();
        foreach (var queue in queues)
        {
            var (active, locked, deferred, scheduled, oldest) = queue.Counts();
            var deadLetters = queue.DeadLetterQueue?.Counts().Active ?? 0;
            var (activeSessions, lockedSessions) = queue.SessionCounts();
            QueueSecond[] series;
            lock (_sync)
            {
                series = [.. SeriesOf(queue).Series];
            }

            result.Add(new QueueMetricsSnapshot(
                queue.Options.Name,
                queue.Metrics.Read(),
                new SortedDictionary<string, long>(queue.Metrics.DeadLettered, StringComparer.Ordinal),
                active,
                locked,
                deferred,
                scheduled,
                deadLetters,
                AgeSeconds(oldest, now),
                series,
                activeSessions,
                lockedSessions));
        }

        return new EmulatorMetricsSnapshot(now, result) { Faults = faults.Counts() };
    }

    /// <summary>
    /// A queue's series, started empty when the queue is new; its first second counts from zero, so what happened between
    /// its creation and its first sample is in it. Caller holds the lock.
    /// </summary>
    private (QueueCounters Last, Queue<QueueSecond> Series) SeriesOf(QueueEntity queue)
    {
        if (!_series.TryGetValue(queue, out var entry))
        {
            _series[queue] = entry = (new QueueCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), new Queue<QueueSecond>());
        }

        return entry;
    }

    /// <summary>Seconds since <paramref name="enqueued"/> (0 for an empty queue), as the JSON and the age gauge report it.</summary>
    internal static double AgeSeconds(DateTime? enqueued, DateTimeOffset now) =>
        enqueued is { } at ? Math.Max(0, (now.UtcDateTime - at).TotalSeconds) : 0;
}
