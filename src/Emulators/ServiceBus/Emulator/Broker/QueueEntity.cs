using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Emulators.ServiceBus.Metrics;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>What a settlement did.</summary>
internal enum SettleResult
{
    Done,

    /// <summary>The message's lock was lost (on a session entity: the session's lock, which message locks share).</summary>
    LockLost,
}

/// <summary>
/// One queue or dead-letter sub-queue: messages in sequence order, peek-locks with expiry, delivery counts,
/// consumers with AMQP credit, and on a session-enabled entity its message sessions (each held by one consumer at
/// a time, its messages delivered in order under the session's lock). Every method takes the entity's lock; calls
/// into links happen under it (the AMQP engine never calls back into a broker while holding a connection lock, so
/// the order is safe).
/// </summary>
internal sealed partial class QueueEntity
{
    private readonly Lock _sync = new();
    private readonly Dictionary<long, BrokeredMessage> _messages = [];
    private readonly SortedSet<long> _sequence = [];
    private readonly SortedSet<long> _available = [];
    private readonly Dictionary<Guid, BrokeredMessage> _locks = [];
    private readonly PriorityQueue<(BrokeredMessage Message, Guid Token), DateTime> _lockExpiries = new();
    private readonly List<Consumer> _consumers = [];
    private readonly HashSet<long> _scheduled = [];
    private readonly PriorityQueue<long, (DateTime At, long Sequence)> _due = new();
    private readonly Dictionary<string, DateTime> _recentIds = new(StringComparer.Ordinal);
    private readonly Queue<(string Id, DateTime At)> _recentOrder = new();
    private readonly Dictionary<string, MessageSession> _sessions = new(StringComparer.Ordinal);
    private readonly List<WaitingAcceptance> _waiting = [];
    private readonly EmulatorSettings _settings;
    private readonly Action<AmqpMessage, DateTime>? _distribute;
    private long _nextSequence = 1;
    private int _nextConsumer;

    /// <param name="distribute">For a topic: takes each message as it becomes active (sent, or its scheduled time come) instead of storing it.</param>
    public QueueEntity(QueueOptions options, EmulatorSettings settings, QueueMetrics metrics, QueueEntity? deadLetterQueue, Action<AmqpMessage, DateTime>? distribute = null)
    {
        Options = options;
        _settings = settings;
        Metrics = metrics;
        DeadLetterQueue = deadLetterQueue;
        _distribute = distribute;
        Path = deadLetterQueue is null && distribute is null ? options.Name + ServiceBusAmqpNames.DeadLetterQueueSuffix : options.Name;
    }

    /// <summary>The entity's settings, read at each use; <see cref="Reconfigure"/> replaces them.</summary>
    public QueueOptions Options { get; private set; }

    /// <summary>
    /// Applies an administration update to the entity and its dead-letter queue: locks taken from now on last the new
    /// LockDuration, the next delivery-count check uses the new MaxDeliveryCount, messages enqueued from now on get the new
    /// time to live. The name, the kind and the session mode are the caller's to keep.
    /// </summary>
    public void Reconfigure(QueueOptions options)
    {
        lock (_sync)
        {
            Options = options;
        }

        DeadLetterQueue?.Reconfigure(options);
    }

    public EmulatorSettings Settings => _settings;

    public string Path { get; }

    public bool IsDeadLetterQueue => DeadLetterQueue is null && _distribute is null;

    /// <summary>A topic: it holds scheduled messages only; receivers attach to its subscriptions.</summary>
    public bool IsTopic => _distribute is not null;

    /// <summary>A topic's subscription (or its dead-letter queue): fed by the topic, never by senders.</summary>
    public bool IsSubscription => Options.Kind == "Subscription";

    /// <summary>A session-enabled queue or subscription (its dead-letter queue is not: it is read without sessions).</summary>
    public bool RequiresSession => Options.RequiresSession && !IsDeadLetterQueue && !IsTopic;

    /// <summary>The dead-letter sub-queue (null for the sub-queue itself).</summary>
    public QueueEntity? DeadLetterQueue { get; }

    public QueueMetrics Metrics { get; }

    /// <summary>Active counts available and locked messages; scheduled messages are counted apart until their time comes.</summary>
    public (long Active, long Locked, long Deferred, long Scheduled, DateTime? OldestEnqueued) Counts()
    {
        lock (_sync)
        {
            DateTime? oldest = null;
            foreach (var sequence in _sequence)
            {
                if (!_scheduled.Contains(sequence))
                {
                    oldest = _messages[sequence].EnqueuedTime;
                    break;
                }
            }

            var deferred = _messages.Count - _available.Count - _locks.Count - _scheduled.Count;
            return (_available.Count + _locks.Count, _locks.Count, deferred, _scheduled.Count, oldest);
        }
    }

    /// <summary>Sessions holding at least one message, and sessions locked by a receiver.</summary>
    public (long Active, long Locked) SessionCounts()
    {
        lock (_sync)
        {
            long active = 0, locked = 0;
            foreach (var session in _sessions.Values)
            {
                active += session.Messages > 0 ? 1 : 0;
                locked += session.Holder is null ? 0 : 1;
            }

            return (active, locked);
        }
    }

    internal sealed class Consumer(SenderLink link, bool receiveAndDelete, MessageSession? session = null)
    {
        public SenderLink Link { get; } = link;

        public bool ReceiveAndDelete { get; } = receiveAndDelete;

        /// <summary>The session this consumer holds (session-enabled entities), or null for a consumer of the whole entity.</summary>
        public MessageSession? Session { get; } = session;

        /// <summary>Deliveries locked for this consumer but still in their receive latency (credit spoken for).</summary>
        public int Reserved { get; set; }

        public long AvailableCredit => Link.IsClosed ? 0 : (long)Link.Credit - Reserved;
    }
}

/// <summary>Ties an outgoing delivery back to the locked message.</summary>
internal sealed record DeliveryContext(QueueEntity Entity, BrokeredMessage Message, Guid Token);

/// <summary>Emulator-wide settings the entities need.</summary>
internal sealed record EmulatorSettings(LatencyModel Latency, long MaxMessageSizeBytes, TimeProvider Time)
{
    public DateTime UtcNow => Time.GetUtcNow().UtcDateTime;

    public TimeSpan SendLatency => Latency.Send;

    public TimeSpan ReceiveLatency => Latency.Receive;

    public TimeSpan CompleteLatency => Latency.Complete;

    /// <summary>The faults injected into the entities' operations.</summary>
    public FaultInjector Faults { get; init; } = new(Time);
}
