using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>The names Service Bus uses on the wire for message sessions.</summary>
internal static class SessionNames
{
    /// <summary>The source filter of a session receiver: a session id, or null for the next available session.</summary>
    public static readonly AmqpSymbol Filter = "com.microsoft:session-filter";

    /// <summary>Attach property of an accepted session receiver: the session lock's expiry, as .NET ticks (long).</summary>
    public static readonly AmqpSymbol LockedUntilUtc = "com.microsoft:locked-until-utc";

    public static readonly AmqpSymbol CannotBeLockedError = "com.microsoft:session-cannot-be-locked";

    public const string RenewSessionLockOperation = "com.microsoft:renew-session-lock";
    public const string GetSessionStateOperation = "com.microsoft:get-session-state";
    public const string SetSessionStateOperation = "com.microsoft:set-session-state";

    public const string SessionStateKey = "session-state";
    public const string ExpirationKey = "expiration";

    /// <summary>
    /// How long an accept-next-session waits when its attach does not say: the service caps the wait at 1 min 5 s
    /// whatever the client's own time-out (the .NET SDK sends its time-out for that reason).
    /// </summary>
    public static readonly TimeSpan DefaultAcceptWait = TimeSpan.FromSeconds(65);
}

/// <summary>
/// One message session of a session-enabled queue or subscription: its available messages in sequence order, the
/// receiver holding its lock (at most one) and until when, the messages locked under that lock, and its state.
/// Guarded by the owning <see cref="QueueEntity"/>'s lock.
/// </summary>
internal sealed class MessageSession(string id)
{
    public string Id { get; } = id;

    public SortedSet<long> Available { get; } = [];

    /// <summary>Messages delivered under the session lock and not settled: their locks are the session's.</summary>
    public HashSet<BrokeredMessage> Locked { get; } = [];

    /// <summary>Messages of the session in the entity (available, locked or deferred).</summary>
    public int Messages { get; set; }

    public QueueEntity.Consumer? Holder { get; set; }

    public DateTime LockedUntil { get; set; }

    /// <summary>The session state; kept until set to null, whoever holds the session.</summary>
    public byte[]? State { get; set; }

    /// <summary>A session nobody holds, with no messages and no state, need not be remembered.</summary>
    public bool IsIdle => Holder is null && Messages == 0 && State is null;

    /// <summary>True when <paramref name="requester"/> (a connection's state) holds this session's lock.</summary>
    public bool IsHeldBy(object requester) =>
        Holder is { } holder && !holder.Link.IsClosed && ReferenceEquals(holder.Link.Session.Connection.Context, requester);
}

/// <summary>An accept-next-session attach waiting for a session with messages to become free.</summary>
internal sealed class WaitingAcceptance(SenderLink link, bool receiveAndDelete)
{
    public SenderLink Link { get; } = link;

    public bool ReceiveAndDelete { get; } = receiveAndDelete;

    public ITimer? Timer { get; set; }
}
