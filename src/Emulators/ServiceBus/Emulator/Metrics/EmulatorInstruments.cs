using System.Diagnostics.Metrics;
using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus.Metrics;

/// <summary>
/// The emulator's instruments, on a Meter of its own (named <see cref="MeterName"/>, outside the
/// services' <c>DroneDelivery.*</c> so that a service hosted in the same process does not read it).
/// Nothing is recorded twice: each entity's counters (<see cref="QueueMetrics"/>, which the JSON
/// snapshot and its per-second series read too), its current counts and the injected faults are
/// observed from the model when a reader collects, so a scrape and the JSON agree.
/// </summary>
internal sealed class EmulatorInstruments : IDisposable
{
    public const string MeterName = "ServiceBusEmulator";

    private readonly IReadOnlyList<QueueEntity> _queues;

    public EmulatorInstruments(IReadOnlyList<QueueEntity> queues, FaultInjector faults, TimeProvider time)
    {
        _queues = queues;
        Meter = new Meter(MeterName);
        Counter(EmulatorMetricNames.IncomingMessages, c => c.IncomingMessages, "Messages sent to the queue.");
        Counter(EmulatorMetricNames.OutgoingDeliveries, c => c.OutgoingDeliveries, "Deliveries to receivers; every redelivery counts again.");
        Counter(EmulatorMetricNames.CompletedMessages, c => c.Completed, "Messages completed.");
        Counter(EmulatorMetricNames.AbandonedMessages, c => c.Abandoned, "Messages abandoned.");
        Counter(EmulatorMetricNames.DeferredMessages, c => c.Deferred, "Messages deferred.");
        Counter(EmulatorMetricNames.LockLostSettlements, c => c.LockLostSettlements, "Settlements or renewals refused because the lock was lost.");
        Counter(EmulatorMetricNames.LockRenewals, c => c.LockRenewals, "Locks renewed.");
        Counter(EmulatorMetricNames.LockExpirations, c => c.LockExpirations, "Locks that expired before settlement.");
        Counter(EmulatorMetricNames.ExpiredMessages, c => c.ExpiredMessages, "Messages whose time to live ran out.");
        Counter(EmulatorMetricNames.SessionLockRenewals, c => c.SessionLockRenewals, "Session locks renewed.");
        Counter(EmulatorMetricNames.SessionLockExpirations, c => c.SessionLockExpirations, "Session locks that expired (their receivers were detached with session-lock-lost).");
        Meter.CreateObservableCounter(
            EmulatorMetricNames.DeadLetteredMessages,
            () => _queues.SelectMany(q => q.Metrics.DeadLettered.Select(reason => new Measurement<long>(
                reason.Value,
                QueueTag(q),
                new KeyValuePair<string, object?>(EmulatorMetricNames.ReasonLabel, reason.Key)))),
            description: "Messages moved to the dead-letter queue, by reason.");
        Meter.CreateObservableCounter(
            EmulatorMetricNames.InjectedFaults,
            () => faults.Counts().Select(f => new Measurement<long>(
                f.Count,
                new KeyValuePair<string, object?>(EmulatorMetricNames.EntityLabel, f.Entity),
                new KeyValuePair<string, object?>(EmulatorMetricNames.KindLabel, f.Kind))),
            description: "Faults injected, by entity and kind (entity empty for a namespace pause).");
        Gauge(EmulatorMetricNames.ActiveMessages, q => q.Counts().Active, "Messages in the queue (available and locked).");
        Gauge(EmulatorMetricNames.LockedMessages, q => q.Counts().Locked, "Messages currently locked by receivers.");
        Gauge(EmulatorMetricNames.ScheduledMessages, q => q.Counts().Scheduled, "Messages scheduled for a later enqueue time (not yet active).");
        Gauge(EmulatorMetricNames.DeadLetterMessages, q => q.DeadLetterQueue?.Counts().Active ?? 0, "Messages in the dead-letter queue.");
        Gauge(EmulatorMetricNames.ActiveSessions, q => q.SessionCounts().Active, "Sessions holding at least one message (session-enabled entities).");
        Gauge(EmulatorMetricNames.LockedSessions, q => q.SessionCounts().Locked, "Sessions locked by a session receiver.");

        // The unit ("s") is already the name's suffix, so the exporter keeps the name as it is.
        Meter.CreateObservableGauge(
            EmulatorMetricNames.OldestMessageAgeSeconds,
            () => _queues.Select(q => new Measurement<double>(MetricsRecorder.AgeSeconds(q.Counts().OldestEnqueued, time.GetUtcNow()), QueueTag(q))),
            unit: "s",
            description: "Age of the oldest message in the queue.");
    }

    /// <summary>The Meter the instruments are on: one per emulator, read by that emulator's meter provider only.</summary>
    public Meter Meter { get; }

    public void Dispose() => Meter.Dispose();

    private void Counter(string name, Func<QueueCounters, long> value, string description) =>
        Meter.CreateObservableCounter(name, () => _queues.Select(q => new Measurement<long>(value(q.Metrics.Read()), QueueTag(q))), description: description);

    private void Gauge(string name, Func<QueueEntity, long> value, string description) =>
        Meter.CreateObservableGauge(name, () => _queues.Select(q => new Measurement<long>(value(q), QueueTag(q))), description: description);

    private static KeyValuePair<string, object?> QueueTag(QueueEntity queue) => new(EmulatorMetricNames.QueueLabel, queue.Options.Name);
}
