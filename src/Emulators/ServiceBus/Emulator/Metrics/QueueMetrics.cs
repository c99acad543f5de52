using System.Collections.Concurrent;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus.Metrics;

/// <summary>Cumulative counters of one queue (its dead-letter sub-queue included), updated lock-free.</summary>
internal sealed class QueueMetrics
{
    private long _incoming;
    private long _outgoing;
    private long _completed;
    private long _abandoned;
    private long _deferred;
    private long _lockLost;
    private long _renewals;
    private long _lockExpirations;
    private long _expired;
    private long _sessionRenewals;
    private long _sessionLockExpirations;

    public ConcurrentDictionary<string, long> DeadLettered { get; } = new(StringComparer.Ordinal);

    public void Incoming(int count = 1) => Interlocked.Add(ref _incoming, count);

    public void Outgoing() => Interlocked.Increment(ref _outgoing);

    public void Completed() => Interlocked.Increment(ref _completed);

    public void Abandoned() => Interlocked.Increment(ref _abandoned);

    public void Deferred() => Interlocked.Increment(ref _deferred);

    public void LockLost() => Interlocked.Increment(ref _lockLost);

    public void Renewed() => Interlocked.Increment(ref _renewals);

    public void LockExpired() => Interlocked.Increment(ref _lockExpirations);

    public void Expired() => Interlocked.Increment(ref _expired);

    public void SessionLockRenewed() => Interlocked.Increment(ref _sessionRenewals);

    public void SessionLockExpired() => Interlocked.Increment(ref _sessionLockExpirations);

    public void DeadLetter(string reason) => DeadLettered.AddOrUpdate(reason, 1, (_, n) => n + 1);

    public QueueCounters Read() => new(
        Interlocked.Read(ref _incoming),
        Interlocked.Read(ref _outgoing),
        Interlocked.Read(ref _completed),
        Interlocked.Read(ref _abandoned),
        Interlocked.Read(ref _deferred),
        DeadLettered.Values.Sum(),
        Interlocked.Read(ref _lockLost),
        Interlocked.Read(ref _renewals),
        Interlocked.Read(ref _lockExpirations),
        Interlocked.Read(ref _expired),
        Interlocked.Read(ref _sessionRenewals),
        Interlocked.Read(ref _sessionLockExpirations));
}

/// <summary>Cumulative counters at one instant.</summary>
public sealed record QueueCounters(
    long IncomingMessages,
    long OutgoingDeliveries,
    long Completed,
    long Abandoned,
    long Deferred,
    long DeadLettered,
    long LockLostSettlements,
    long LockRenewals,
    long LockExpirations,
    long ExpiredMessages,
    long SessionLockRenewals = 0,
    long SessionLockExpirations = 0)
{
    public QueueCounters Minus(QueueCounters earlier) => new(
        IncomingMessages - earlier.IncomingMessages,
        OutgoingDeliveries - earlier.OutgoingDeliveries,
        Completed - earlier.Completed,
        Abandoned - earlier.Abandoned,
        Deferred - earlier.Deferred,
        DeadLettered - earlier.DeadLettered,
        LockLostSettlements - earlier.LockLostSettlements,
        LockRenewals - earlier.LockRenewals,
        LockExpirations - earlier.LockExpirations,
        ExpiredMessages - earlier.ExpiredMessages,
        SessionLockRenewals - earlier.SessionLockRenewals,
        SessionLockExpirations - earlier.SessionLockExpirations);
}

/// <summary>One queue's metrics: cumulative counters, current counts and the per-second series.</summary>
public sealed record QueueMetricsSnapshot(
    string Queue,
    QueueCounters Counters,
    IReadOnlyDictionary<string, long> DeadLetteredByReason,
    long ActiveMessages,
    long LockedMessages,
    long DeferredMessages,
    long ScheduledMessages,
    long DeadLetterMessages,
    double OldestMessageAgeSeconds,
    IReadOnlyList<QueueSecond> Series,
    long ActiveSessions = 0,
    long LockedSessions = 0);

/// <summary>What happened to one queue during one second (counter deltas) and its depth at the end of it.</summary>
public sealed record QueueSecond(long UnixSeconds, QueueCounters Delta, long ActiveMessages, long DeadLetterMessages);

/// <summary>All queues at one instant.</summary>
public sealed record EmulatorMetricsSnapshot(DateTimeOffset Timestamp, IReadOnlyList<QueueMetricsSnapshot> Queues)
{
    /// <summary>Faults injected so far, by entity and kind.</summary>
    public IReadOnlyList<InjectedFaultCount> Faults { get; init; } = [];

    public QueueMetricsSnapshot this[string queue] =>
        Queues.FirstOrDefault(q => string.Equals(q.Queue, queue, StringComparison.OrdinalIgnoreCase))
        ?? throw new KeyNotFoundException($"No queue '{queue}'.");
}
