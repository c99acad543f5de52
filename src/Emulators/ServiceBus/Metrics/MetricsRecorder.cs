using System.Globalization;
using System.Text;
using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus.Metrics;

/// <summary>Reads the queues' metrics, keeps a per-second series and renders Prometheus text.</summary>
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
            foreach (var queue in queues)
            {
                var (last, series) = _series[queue];
                var current = queue.Metrics.Read();
                series.Enqueue(new QueueSecond(now.ToUnixTimeSeconds(), current.Minus(last), queue.Counts().Active, queue.DeadLetterQueue?.Counts().Active ?? 0));
                while (series.Count > seriesSeconds)
                {
                    series.Dequeue();
                }

                _series[queue] = (current, series);
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
                series = [.. _series[queue].Series];
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
                oldest is { } at ? Math.Max(0, (now.UtcDateTime - at).TotalSeconds) : 0,
                series,
                activeSessions,
                lockedSessions));
        }

        return new EmulatorMetricsSnapshot(now, result) { Faults = faults.Counts() };
    }

    public string RenderPrometheus()
    {
        var snapshot = Snapshot();
        var text = new StringBuilder();
        Counter(EmulatorMetricNames.IncomingMessages, "Messages sent to the queue.", q => q.Counters.IncomingMessages);
        Counter(EmulatorMetricNames.OutgoingDeliveries, "Deliveries to receivers; every redelivery counts again.", q => q.Counters.OutgoingDeliveries);
        Counter(EmulatorMetricNames.CompletedMessages, "Messages completed.", q => q.Counters.Completed);
        Counter(EmulatorMetricNames.AbandonedMessages, "Messages abandoned.", q => q.Counters.Abandoned);
        Counter(EmulatorMetricNames.DeferredMessages, "Messages deferred.", q => q.Counters.Deferred);
        Counter(EmulatorMetricNames.LockLostSettlements, "Settlements or renewals refused because the lock was lost.", q => q.Counters.LockLostSettlements);
        Counter(EmulatorMetricNames.LockRenewals, "Locks renewed.", q => q.Counters.LockRenewals);
        Counter(EmulatorMetricNames.LockExpirations, "Locks that expired before settlement.", q => q.Counters.LockExpirations);
        Counter(EmulatorMetricNames.ExpiredMessages, "Messages whose time to live ran out.", q => q.Counters.ExpiredMessages);
        Counter(EmulatorMetricNames.SessionLockRenewals, "Session locks renewed.", q => q.Counters.SessionLockRenewals);
        Counter(EmulatorMetricNames.SessionLockExpirations, "Session locks that expired (their receivers were detached with session-lock-lost).", q => q.Counters.SessionLockExpirations);
        text.Append("# HELP ").Append(EmulatorMetricNames.DeadLetteredMessages).Append(" Messages moved to the dead-letter queue, by reason.\n");
        text.Append("# TYPE ").Append(EmulatorMetricNames.DeadLetteredMessages).Append(" counter\n");
        foreach (var queue in snapshot.Queues)
        {
            foreach (var (reason, count) in queue.DeadLetteredByReason)
            {
                text.Append(EmulatorMetricNames.DeadLetteredMessages).Append("{queue=\"").Append(Escape(queue.Queue)).Append("\",reason=\"").Append(Escape(reason)).Append("\"} ")
                    .Append(count.ToString(CultureInfo.InvariantCulture)).Append('\n');
            }
        }

        text.Append("# HELP ").Append(EmulatorMetricNames.InjectedFaults).Append(" Faults injected, by entity and kind (entity empty for a namespace pause).\n");
        text.Append("# TYPE ").Append(EmulatorMetricNames.InjectedFaults).Append(" counter\n");
        foreach (var fault in snapshot.Faults)
        {
            text.Append(EmulatorMetricNames.InjectedFaults).Append("{entity=\"").Append(Escape(fault.Entity)).Append("\",kind=\"").Append(Escape(fault.Kind)).Append("\"} ")
                .Append(fault.Count.ToString(CultureInfo.InvariantCulture)).Append('\n');
        }

        Gauge(EmulatorMetricNames.ActiveMessages, "Messages in the queue (available and locked).", q => q.ActiveMessages);
        Gauge(EmulatorMetricNames.LockedMessages, "Messages currently locked by receivers.", q => q.LockedMessages);
        Gauge(EmulatorMetricNames.ScheduledMessages, "Messages scheduled for a later enqueue time (not yet active).", q => q.ScheduledMessages);
        Gauge(EmulatorMetricNames.DeadLetterMessages, "Messages in the dead-letter queue.", q => q.DeadLetterMessages);
        Gauge(EmulatorMetricNames.OldestMessageAgeSeconds, "Age of the oldest message in the queue.", q => q.OldestMessageAgeSeconds);
        Gauge(EmulatorMetricNames.ActiveSessions, "Sessions holding at least one message (session-enabled entities).", q => q.ActiveSessions);
        Gauge(EmulatorMetricNames.LockedSessions, "Sessions locked by a session receiver.", q => q.LockedSessions);
        return text.ToString();

        void Counter(string name, string help, Func<QueueMetricsSnapshot, long> value) => Series(name, help, "counter", q => value(q).ToString(CultureInfo.InvariantCulture));

        void Gauge(string name, string help, Func<QueueMetricsSnapshot, double> value) => Series(name, help, "gauge", q => value(q).ToString("0.###", CultureInfo.InvariantCulture));

        void Series(string name, string help, string type, Func<QueueMetricsSnapshot, string> value)
        {
            text.Append("# HELP ").Append(name).Append(' ').Append(help).Append('\n');
            text.Append("# TYPE ").Append(name).Append(' ').Append(type).Append('\n');
            foreach (var queue in snapshot.Queues)
            {
                text.Append(name).Append("{queue=\"").Append(Escape(queue.Queue)).Append("\"} ").Append(value(queue)).Append('\n');
            }
        }
    }

    private static string Escape(string value) => value.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\"", "\\\"", StringComparison.Ordinal);
}
