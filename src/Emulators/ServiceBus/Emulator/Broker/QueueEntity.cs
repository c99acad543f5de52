using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
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
internal sealed class QueueEntity
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

    // ---- sending ----

    /// <summary>
    /// Stores a sent message; false when duplicate detection dropped it. A message whose
    /// <c>x-opt-scheduled-enqueue-time</c> annotation lies ahead is kept as scheduled until then.
    /// </summary>
    public bool Enqueue(AmqpMessage message, DateTime now)
    {
        EnsureMessageId(message);
        lock (_sync)
        {
            if (Options.RequiresDuplicateDetection && message.Properties?.MessageId?.ToString() is { } id)
            {
                PruneRecentIds(now);
                if (_recentIds.ContainsKey(id))
                {
                    return false;
                }

                _recentIds[id] = now;
                _recentOrder.Enqueue((id, now));
            }

            Store(message, now);
            Pump();
            return true;
        }
    }

    /// <summary>
    /// The schedule-message operation: stores each message at its scheduled enqueue time (its annotation) and
    /// returns their sequence numbers. As on the service, duplicate detection is not consulted here.
    /// </summary>
    public long[] Schedule(IReadOnlyList<AmqpMessage> messages, DateTime now)
    {
        foreach (var message in messages)
        {
            EnsureMessageId(message);
        }

        lock (_sync)
        {
            var sequences = new long[messages.Count];
            for (var i = 0; i < messages.Count; i++)
            {
                sequences[i] = Store(messages[i], now);
            }

            Pump();
            return sequences;
        }
    }

    /// <summary>
    /// The cancel-scheduled-message operation: removes scheduled messages. All or nothing: false (and nothing
    /// cancelled) when one of the numbers is not a message still waiting for its time.
    /// </summary>
    public bool CancelScheduled(IReadOnlyList<long> sequenceNumbers)
    {
        lock (_sync)
        {
            Pump(); // what is due is enqueued first, and no longer cancellable
            if (sequenceNumbers.Any(s => !_scheduled.Contains(s)))
            {
                return false;
            }

            foreach (var sequence in sequenceNumbers)
            {
                if (_scheduled.Remove(sequence))
                {
                    _messages.Remove(sequence);
                    _sequence.Remove(sequence);
                }
            }

            return true;
        }
    }

    // The service gives every message an id: clients key lock renewal and tracing on it (the
    // JavaScript SDK cannot close a receiver that auto-renewed a message without one).
    private static void EnsureMessageId(AmqpMessage message)
    {
        message.Properties ??= new MessageProperties();
        message.Properties.MessageId ??= Guid.NewGuid().ToString("N");
    }

    /// <summary>Gives the message a sequence number and stores it, available or scheduled. Caller holds the lock.</summary>
    private long Store(AmqpMessage message, DateTime now)
    {
        Metrics.Incoming();
        var sequence = _nextSequence++;
        if (ScheduledTime(message) is { } at && at > now)
        {
            // Not in the queue yet: no expiry until it is enqueued; peek shows it at its scheduled time.
            var scheduled = new BrokeredMessage(message, sequence, at, DateTime.MaxValue) { State = BrokeredMessageState.Scheduled };
            _messages[sequence] = scheduled;
            _sequence.Add(sequence);
            _scheduled.Add(sequence);
            _due.Enqueue(sequence, (at, sequence));
            return sequence;
        }

        Add(new BrokeredMessage(message, sequence, now, ExpiresAt(message, now)));
        return sequence;
    }

    /// <summary>True when the entity takes <paramref name="message"/>: a session-enabled entity only takes messages with a SessionId.</summary>
    public bool Accepts(AmqpMessage message) => !RequiresSession || message.Properties?.GroupId is not null;

    /// <summary>What a sender is told when it sends a message without a SessionId to a session-enabled entity (the service's words).</summary>
    public const string SessionIdMissing =
        "The SessionId was not set on a message, and it cannot be sent to the entity. Entities that have session support enabled can only receive messages that have the SessionId set to a valid value.";

    private static DateTime? ScheduledTime(AmqpMessage message) =>
        message.MessageAnnotations is { } annotations && annotations.TryGetValue(ServiceBusAmqpNames.ScheduledEnqueueTime, out var value) && value is DateTime at
            ? DateTime.SpecifyKind(at, DateTimeKind.Utc)
            : null;

    /// <summary>The time to live counts from the enqueue time: the queue's default, or the message's own when shorter.</summary>
    private DateTime ExpiresAt(AmqpMessage message, DateTime enqueued)
    {
        var ttl = Options.DefaultMessageTimeToLive;
        if (message.Header?.Ttl is { } own && own > 0 && TimeSpan.FromMilliseconds(own) < ttl)
        {
            ttl = TimeSpan.FromMilliseconds(own);
        }

        return ttl >= DateTime.MaxValue - enqueued ? DateTime.MaxValue : enqueued + ttl;
    }

    /// <summary>
    /// Enqueues scheduled messages whose time has come. As on the service, an activated message is appended to the
    /// queue as if sent now: a new sequence number, enqueued (and its time to live starting) now. Caller holds the lock.
    /// </summary>
    private void ActivateDue(DateTime now)
    {
        while (_due.TryPeek(out var sequence, out var due) && due.At <= now)
        {
            _due.Dequeue();
            if (!_scheduled.Remove(sequence))
            {
                continue; // cancelled
            }

            var scheduled = _messages[sequence];
            _messages.Remove(sequence);
            _sequence.Remove(sequence);
            Add(new BrokeredMessage(scheduled.Message, _nextSequence++, now, ExpiresAt(scheduled.Message, now)));
        }
    }

    /// <summary>Takes a message moved here from its queue (dead-lettering); it keeps its sequence number.</summary>
    public void AddDeadLettered(BrokeredMessage message)
    {
        lock (_sync)
        {
            message.State = BrokeredMessageState.Available;
            message.LockToken = Guid.Empty;
            Add(message);
            Pump();
        }
    }

    private void Add(BrokeredMessage message)
    {
        if (_distribute is not null)
        {
            _distribute(message.Message, message.EnqueuedTime);
            return;
        }

        if (!Accepts(message.Message))
        {
            // A topic's copy without a SessionId, on a session-enabled subscription: the service dead-letters it.
            _messages[message.SequenceNumber] = message;
            MoveToDeadLetter(message, "Session id is null.", "Session enabled entity doesn't allow a message whose session identifier is null.");
            return;
        }

        _messages[message.SequenceNumber] = message;
        _sequence.Add(message.SequenceNumber);
        if (SessionOf(message) is { } session)
        {
            session.Messages++;
        }

        MarkAvailable(message);
    }

    // ---- sessions ----

    /// <summary>The session of a message on a session-enabled entity (created on first use), else null. Caller holds the lock.</summary>
    private MessageSession? SessionOf(BrokeredMessage message) => RequiresSession && message.SessionId is { } id ? Session(id) : null;

    private MessageSession Session(string id)
    {
        if (!_sessions.TryGetValue(id, out var session))
        {
            _sessions[id] = session = new MessageSession(id);
        }

        return session;
    }

    /// <summary>Forgets a session that holds nothing worth remembering. Caller holds the lock.</summary>
    private void Forget(MessageSession session)
    {
        if (session.IsIdle)
        {
            _sessions.Remove(session.Id);
        }
    }

    private void MarkAvailable(BrokeredMessage message)
    {
        _available.Add(message.SequenceNumber);
        SessionOf(message)?.Available.Add(message.SequenceNumber);
    }

    private void UnmarkAvailable(BrokeredMessage message)
    {
        _available.Remove(message.SequenceNumber);
        if (RequiresSession && message.SessionId is { } id && _sessions.TryGetValue(id, out var session))
        {
            session.Available.Remove(message.SequenceNumber);
        }
    }

    /// <summary>
    /// A session receiver's attach: <paramref name="sessionId"/> names the session, null asks for the next available one
    /// (a session with messages that nobody holds, the one whose first message is oldest), waiting up to
    /// <paramref name="wait"/> on the emulator's clock for one to become free before refusing with com.microsoft:timeout.
    /// A session another receiver holds is refused with com.microsoft:session-cannot-be-locked.
    /// </summary>
    public void AcceptSession(SenderLink link, bool receiveAndDelete, string? sessionId, TimeSpan wait)
    {
        lock (_sync)
        {
            var now = _settings.UtcNow;
            if (sessionId is not null)
            {
                var session = Session(sessionId);
                ExpireIfLapsed(session, now);
                if (session.Holder is not null)
                {
                    link.Reject(new Error
                    {
                        Condition = SessionNames.CannotBeLockedError,
                        Description = $"The requested session '{sessionId}' cannot be accepted. It may be locked by another receiver.",
                    });
                    return;
                }

                Bind(link, receiveAndDelete, session, now);
                return;
            }

            ActivateDue(now);
            if (NextFreeSession(now) is { } free)
            {
                Bind(link, receiveAndDelete, free, now);
                return;
            }

            var waiting = new WaitingAcceptance(link, receiveAndDelete);
            _waiting.Add(waiting);
            link.Closed += (_, _) =>
            {
                lock (_sync)
                {
                    _waiting.Remove(waiting); // the client gave up before a session came
                }

                waiting.Timer?.Dispose();
            };
            waiting.Timer = _settings.Time.CreateTimer(_ => GiveUp(waiting), null, wait, Timeout.InfiniteTimeSpan);
        }
    }

    private void GiveUp(WaitingAcceptance waiting)
    {
        lock (_sync)
        {
            if (!_waiting.Remove(waiting))
            {
                return;
            }

            waiting.Link.Reject(new Error
            {
                Condition = ServiceBusAmqpNames.TimeoutError,
                Description = $"No session of '{Path}' became available within the time allowed. The operation did not complete within the allotted timeout.",
            });
        }

        waiting.Timer?.Dispose();
    }

    /// <summary>A session with available messages that nobody holds, the one whose first message is oldest. Caller holds the lock.</summary>
    private MessageSession? NextFreeSession(DateTime now)
    {
        MessageSession? next = null;
        foreach (var session in _sessions.Values.ToList())
        {
            ExpireIfLapsed(session, now);
            if (session.Holder is null && session.Available.Count > 0 && (next is null || session.Available.Min < next.Available.Min))
            {
                next = session;
            }
        }

        return next;
    }

    /// <summary>Hands waiting accept-next-session attaches the sessions that have become free. Caller holds the lock.</summary>
    private void AssignWaiting(DateTime now)
    {
        while (_waiting.Count > 0 && NextFreeSession(now) is { } session)
        {
            var waiting = _waiting[0];
            _waiting.RemoveAt(0);
            waiting.Timer?.Dispose();
            if (!waiting.Link.IsClosed)
            {
                Bind(waiting.Link, waiting.ReceiveAndDelete, session, now);
            }
        }
    }

    /// <summary>
    /// Locks <paramref name="session"/> for the receiver on <paramref name="link"/> and answers its attach: the session id
    /// echoed in the source filter and the lock's expiry (ticks) in com.microsoft:locked-until-utc. Caller holds the lock.
    /// </summary>
    private void Bind(SenderLink link, bool receiveAndDelete, MessageSession session, DateTime now)
    {
        if (link.IsClosed)
        {
            return;
        }

        session.LockedUntil = now + Options.LockDuration;
        var consumer = AddConsumer(link, receiveAndDelete, session);
        session.Holder = consumer;
        var requested = link.RemoteAttach!.Source;
        link.Accept(
            source: new Source
            {
                Address = requested?.Address,
                Filter = new Dictionary<object, object?> { [SessionNames.Filter] = session.Id },
                DefaultOutcome = requested?.DefaultOutcome,
                Outcomes = requested?.Outcomes,
            },
            properties: new Dictionary<object, object?> { [SessionNames.LockedUntilUtc] = session.LockedUntil.Ticks });
    }

    /// <summary>
    /// A session whose lock ran out is lost: its receiver is detached with session-lock-lost. One whose receiver's link
    /// has closed is released (the link's own close handler may not have run yet). Caller holds the lock.
    /// </summary>
    private void ExpireIfLapsed(MessageSession session, DateTime now)
    {
        if (session.Holder is { } holder && holder.Link.IsClosed)
        {
            EndSessionLock(session, detachError: null);
            return;
        }

        if (session.Holder is not null && session.LockedUntil <= now)
        {
            Metrics.SessionLockExpired();
            EndSessionLock(session, new Error
            {
                Condition = ServiceBusAmqpNames.SessionLockLostError,
                Description = $"The session lock has expired on the session with id '{session.Id}'. Accept the session again.",
            });
        }
    }

    /// <summary>
    /// Ends the hold on a session (its receiver closed, or its lock expired): the messages locked under it become
    /// available again, each attempt counted as a lock expiry counts it. With <paramref name="detachError"/> the
    /// receiver's link is detached with it. Caller holds the lock.
    /// </summary>
    private void EndSessionLock(MessageSession session, Error? detachError)
    {
        var holder = session.Holder;
        session.Holder = null;
        foreach (var message in session.Locked.ToList())
        {
            Unlock(message);
            Metrics.LockExpired();
            ReturnToQueue(message);
        }

        if (holder is not null)
        {
            _consumers.Remove(holder);
            if (detachError is not null)
            {
                _ = holder.Link.CloseAsync(detachError);
            }
        }

        Forget(session);
    }

    /// <summary>The session <paramref name="sessionId"/> when <paramref name="requester"/> holds its lock, else null (the lock is lost). Caller holds the lock.</summary>
    private MessageSession? HeldSession(string sessionId, object requester)
    {
        if (!_sessions.TryGetValue(sessionId, out var session))
        {
            return null;
        }

        ExpireIfLapsed(session, _settings.UtcNow);
        return session.IsHeldBy(requester) ? session : null;
    }

    /// <summary>renew-session-lock: the new expiry, or null when the requester does not hold the session's lock.</summary>
    public DateTime? RenewSessionLock(string sessionId, object requester)
    {
        lock (_sync)
        {
            if (HeldSession(sessionId, requester) is not { } session)
            {
                Metrics.LockLost();
                return null;
            }

            session.LockedUntil = _settings.UtcNow + Options.LockDuration;
            foreach (var message in session.Locked)
            {
                message.LockedUntil = session.LockedUntil;
            }

            Metrics.SessionLockRenewed();
            return session.LockedUntil;
        }
    }

    /// <summary>get-session-state: (true, state) when the requester holds the session's lock, else (false, null).</summary>
    public (bool Held, byte[]? State) GetSessionState(string sessionId, object requester)
    {
        lock (_sync)
        {
            return HeldSession(sessionId, requester) is { } session ? (true, session.State) : (false, null);
        }
    }

    /// <summary>set-session-state (null clears it): false when the requester does not hold the session's lock.</summary>
    public bool SetSessionState(string sessionId, byte[]? state, object requester)
    {
        lock (_sync)
        {
            if (HeldSession(sessionId, requester) is not { } session)
            {
                return false;
            }

            session.State = state;
            return true;
        }
    }

    /// <summary>True when the requester holds the lock of <paramref name="sessionId"/> (settling and receiving deferred messages need it).</summary>
    public bool HoldsSession(string sessionId, object requester)
    {
        lock (_sync)
        {
            return HeldSession(sessionId, requester) is not null;
        }
    }

    private void PruneRecentIds(DateTime now)
    {
        while (_recentOrder.TryPeek(out var oldest) && now - oldest.At > Options.DuplicateDetectionHistoryTimeWindow)
        {
            _recentOrder.Dequeue();
            if (_recentIds.TryGetValue(oldest.Id, out var at) && at == oldest.At)
            {
                _recentIds.Remove(oldest.Id);
            }
        }
    }

    // ---- consumers ----

    /// <summary>A receiver on an entity without sessions: it takes any available message.</summary>
    public void AddConsumer(SenderLink link, bool receiveAndDelete)
    {
        lock (_sync)
        {
            AddConsumer(link, receiveAndDelete, session: null);
        }

        link.Accept();
    }

    /// <summary>Registers a consumer (of one session, or of the whole entity). Caller holds the lock.</summary>
    private Consumer AddConsumer(SenderLink link, bool receiveAndDelete, MessageSession? session)
    {
        var consumer = new Consumer(link, receiveAndDelete, session);
        link.Context = consumer;
        link.FlowReceived += OnFlow;
        link.DeliveryUpdated += OnDeliveryUpdated;
        link.Closed += (l, _) =>
        {
            lock (_sync)
            {
                _consumers.Remove(consumer);
                if (consumer.Session is { } held && held.Holder == consumer)
                {
                    // Closing a session receiver releases the session for the next one.
                    EndSessionLock(held, detachError: null);
                    Pump();
                }
            }
        };
        _consumers.Add(consumer);
        return consumer;
    }

    private void OnFlow(SenderLink link)
    {
        var consumer = (Consumer)link.Context!;
        lock (_sync)
        {
            Pump();
        }

        if (!link.DrainRequested)
        {
            return;
        }

        if (_settings.ReceiveLatency <= TimeSpan.Zero || consumer.Reserved == 0)
        {
            link.CompleteDrain();
            return;
        }

        // Let deliveries already on their way go out before giving back the rest of the credit.
        _ = Task.Delay(_settings.ReceiveLatency, _settings.Time).ContinueWith(_ => link.CompleteDrain(), TaskScheduler.Default);
    }

    /// <summary>Hands available messages to consumers with credit, round robin. Caller holds the lock.</summary>
    private void Pump()
    {
        ActivateDue(_settings.UtcNow);
        if (RequiresSession)
        {
            PumpSessions();
            return;
        }

        while (_available.Count > 0 && _consumers.Count > 0)
        {
            var consumer = NextConsumerWithCredit();
            if (consumer is null)
            {
                return;
            }

            var sequence = _available.Min;
            var message = _messages[sequence];
            UnmarkAvailable(message);
            var now = _settings.UtcNow;
            if (message.ExpiresAt <= now && !IsDeadLetterQueue)
            {
                Expire(message);
                continue;
            }

            Deliver(consumer, message, now);
        }
    }

    /// <summary>
    /// On a session-enabled entity: each session's messages go, in sequence order, to the one consumer holding it;
    /// sessions that became free go to waiting accept-next-session attaches. Caller holds the lock.
    /// </summary>
    private void PumpSessions()
    {
        var now = _settings.UtcNow;
        AssignWaiting(now);
        foreach (var consumer in _consumers.ToList())
        {
            var session = consumer.Session!;
            while (consumer.AvailableCredit > 0 && session.Holder == consumer && session.Available.Count > 0)
            {
                var message = _messages[session.Available.Min];
                UnmarkAvailable(message);
                if (message.ExpiresAt <= now)
                {
                    Expire(message);
                    continue;
                }

                Deliver(consumer, message, now);
            }
        }
    }

    private Consumer? NextConsumerWithCredit()
    {
        for (var i = 0; i < _consumers.Count; i++)
        {
            var index = (_nextConsumer + i) % _consumers.Count;
            var consumer = _consumers[index];
            if (consumer.AvailableCredit > 0)
            {
                _nextConsumer = (index + 1) % _consumers.Count;
                return consumer;
            }
        }

        return null;
    }

    private void Deliver(Consumer consumer, BrokeredMessage message, DateTime now)
    {
        var priorAttempts = (uint)message.DeliveryCount;
        message.DeliveryCount++;
        Metrics.Outgoing();
        if (consumer.ReceiveAndDelete)
        {
            Remove(message);
            var payload = message.Encode(priorAttempts, lockedUntil: null);
            Send(consumer, payload, message.SequenceNumber.ToString(System.Globalization.CultureInfo.InvariantCulture), settled: true, context: null, onFailure: null);
            return;
        }

        // The lock starts now, when the transfer leaves the broker: prefetched messages age in the client's buffer.
        var token = Guid.NewGuid();
        Lock(message, token, now);
        var locked = message.Encode(priorAttempts, message.LockedUntil);
        Send(consumer, locked, token, settled: false, new DeliveryContext(this, message, token), onFailure: () => Release(message, token));
    }

    private void Send(Consumer consumer, byte[] payload, object tagSource, bool settled, DeliveryContext? context, Action? onFailure)
    {
        var tag = tagSource is Guid token ? token.ToByteArray() : System.Text.Encoding.ASCII.GetBytes((string)tagSource);
        if (_settings.ReceiveLatency <= TimeSpan.Zero)
        {
            if (consumer.Link.TrySend(payload, tag, settled, context) is null)
            {
                onFailure?.Invoke();
            }

            return;
        }

        consumer.Reserved++;
        _ = Task.Delay(_settings.ReceiveLatency, _settings.Time).ContinueWith(_ =>
        {
            lock (_sync)
            {
                consumer.Reserved--;
                if (consumer.Link.TrySend(payload, tag, settled, context) is null)
                {
                    onFailure?.Invoke();
                }
            }
        }, TaskScheduler.Default);
    }

    /// <summary>
    /// Locks a message for its receiver: for LockDuration from now, or, in a session, under the session's lock (the
    /// message's lock is the session's: it ends, and is renewed, with it). Caller holds the lock.
    /// </summary>
    private void Lock(BrokeredMessage message, Guid token, DateTime now)
    {
        message.State = BrokeredMessageState.Locked;
        message.LockToken = token;
        _locks[token] = message;
        if (SessionOf(message) is { Holder: not null } session)
        {
            message.LockedUntil = session.LockedUntil;
            session.Locked.Add(message);
            return;
        }

        var until = now + Options.LockDuration;
        message.LockedUntil = until;
        _lockExpiries.Enqueue((message, token), until);
        if (_lockExpiries.Count > (2 * _locks.Count) + 1024)
        {
            // Settled locks leave their expiry entries behind; rebuild so long locks at high rates stay bounded.
            _lockExpiries.Clear();
            foreach (var (lockToken, locked) in _locks)
            {
                _lockExpiries.Enqueue((locked, lockToken), locked.LockedUntil);
            }
        }
    }

    /// <summary>A transfer that never left (link closed): the message goes back without counting the attempt.</summary>
    private void Release(BrokeredMessage message, Guid token)
    {
        if (_locks.ContainsKey(token))
        {
            Unlock(message);
            message.DeliveryCount = Math.Max(0, message.DeliveryCount - 1);
            message.State = message.IsDeferred ? BrokeredMessageState.Deferred : BrokeredMessageState.Available;
            if (!message.IsDeferred)
            {
                MarkAvailable(message);
            }

            Pump();
        }
    }

    // ---- settlement ----

    private void OnDeliveryUpdated(SenderLink link, OutgoingDelivery delivery)
    {
        if (delivery.Context is not DeliveryContext context || delivery.RemoteState is not { } state)
        {
            if (!delivery.RemoteSettled)
            {
                link.Settle(delivery, delivery.RemoteState);
            }

            return;
        }

        // Injected faults: the connection fails under the settlement, or its answer is lost — after it took
        // effect or before (both happen on a real broker; the client cannot tell them apart).
        var faults = _settings.Faults;
        if (faults.BreakConnection(link.Session.Connection, Path) || faults.Draw(ServiceBusFaultKind.SettlementLostUnapplied, Path))
        {
            return;
        }

        var answer = !faults.Draw(ServiceBusFaultKind.SettlementLostApplied, Path);
        if (_settings.CompleteLatency <= TimeSpan.Zero)
        {
            Settle(link, delivery, context, state, answer);
            return;
        }

        _ = Task.Delay(_settings.CompleteLatency, _settings.Time).ContinueWith(_ => Settle(link, delivery, context, state, answer), TaskScheduler.Default);
    }

    private void Settle(SenderLink link, OutgoingDelivery delivery, DeliveryContext context, DeliveryState state, bool answer)
    {
        var (result, reply) = state switch
        {
            Accepted => (Complete(context.Token), (DeliveryState)Accepted.Instance),
            Modified { UndeliverableHere: true } modified => (Defer(context.Token, modified.MessageAnnotations), state),
            Modified modified => (Abandon(context.Token, modified.MessageAnnotations), state),
            Rejected rejected => (DeadLetter(context.Token, rejected.Error), new Rejected()),
            Released => (ReleaseByClient(context.Token), Released.Instance),
            _ => (SettleResult.Done, state),
        };
        if (delivery.RemoteSettled || !answer)
        {
            return; // the client settled first ("fire and forget"), or the answer is lost (an injected fault)
        }

        link.Settle(delivery, result == SettleResult.LockLost ? LockLostState(context.Message.SequenceNumber) : reply);
    }

    /// <summary>The outcome of a settlement whose lock was lost: message-lock-lost, or session-lock-lost on a session-enabled entity.</summary>
    public Rejected LockLostState(long sequenceNumber) => new() { Error = LockLostError(sequenceNumber) };

    public Error LockLostError(long? sequenceNumber = null) => RequiresSession
        ? new Error
        {
            Condition = ServiceBusAmqpNames.SessionLockLostError,
            Description = "The session lock was lost: it expired, or the session is no longer held by this receiver. Accept the session again.",
        }
        : new Error
        {
            Condition = ServiceBusAmqpNames.MessageLockLostError,
            Description = "The lock supplied is invalid. Either the lock expired, or the message has already been removed from the queue" +
                (sequenceNumber is { } s ? $" (sequence number {s})." : "."),
        };

    /// <summary>
    /// Finds the message a lock token still holds; an expired lock is processed as expired and reported lost. In a
    /// session the lock is the session's: the session must still be held, and a session whose lock ran out is lost.
    /// </summary>
    private BrokeredMessage? Locked(Guid token)
    {
        if (!_locks.TryGetValue(token, out var message) || message.LockToken != token)
        {
            Metrics.LockLost();
            return null;
        }

        if (RequiresSession && message.SessionId is { } sessionId && _sessions.TryGetValue(sessionId, out var session))
        {
            ExpireIfLapsed(session, _settings.UtcNow);
            if (!session.Locked.Contains(message))
            {
                Metrics.LockLost();
                return null;
            }

            return message;
        }

        if (message.LockedUntil <= _settings.UtcNow)
        {
            ExpireLock(message);
            Metrics.LockLost();
            return null;
        }

        return message;
    }

    public SettleResult Complete(Guid token)
    {
        lock (_sync)
        {
            if (Locked(token) is not { } message)
            {
                return SettleResult.LockLost;
            }

            Remove(message);
            Metrics.Completed();
            return SettleResult.Done;
        }
    }

    public SettleResult Abandon(Guid token, IReadOnlyDictionary<object, object?>? properties)
    {
        lock (_sync)
        {
            if (Locked(token) is not { } message)
            {
                return SettleResult.LockLost;
            }

            message.ApplyProperties(properties);
            Unlock(message);
            Metrics.Abandoned();
            ReturnToQueue(message);
            Pump();
            return SettleResult.Done;
        }
    }

    public SettleResult Defer(Guid token, IReadOnlyDictionary<object, object?>? properties)
    {
        lock (_sync)
        {
            if (Locked(token) is not { } message)
            {
                return SettleResult.LockLost;
            }

            message.ApplyProperties(properties);
            Unlock(message);
            message.State = BrokeredMessageState.Deferred;
            message.IsDeferred = true;
            Metrics.Deferred();
            return SettleResult.Done;
        }
    }

    /// <summary>Client dead-lettering: the error's info carries DeadLetterReason, DeadLetterErrorDescription and properties to modify.</summary>
    public SettleResult DeadLetter(Guid token, Error? error)
    {
        string? reason = null, description = null;
        Dictionary<object, object?>? properties = null;
        if (error?.Info is { } info)
        {
            properties = [];
            foreach (var (key, value) in info)
            {
                var name = key.ToString();
                if (name == ServiceBusAmqpNames.DeadLetterReasonProperty)
                {
                    reason = value?.ToString();
                }
                else if (name == ServiceBusAmqpNames.DeadLetterErrorDescriptionProperty)
                {
                    description = value?.ToString();
                }
                else
                {
                    properties[key] = value;
                }
            }
        }

        return DeadLetter(token, reason, description, properties);
    }

    public SettleResult DeadLetter(Guid token, string? reason, string? description, IReadOnlyDictionary<object, object?>? properties)
    {
        lock (_sync)
        {
            if (Locked(token) is not { } message)
            {
                return SettleResult.LockLost;
            }

            message.ApplyProperties(properties);
            Unlock(message);
            MoveToDeadLetter(message, reason, description);
            return SettleResult.Done;
        }
    }

    private SettleResult ReleaseByClient(Guid token)
    {
        lock (_sync)
        {
            if (!_locks.TryGetValue(token, out var message) || message.LockToken != token)
            {
                return SettleResult.LockLost;
            }

            Release(message, token);
            return SettleResult.Done;
        }
    }

    /// <summary>Extends locks; null when any of them is lost.</summary>
    public DateTime[]? RenewLocks(IReadOnlyList<Guid> tokens)
    {
        lock (_sync)
        {
            var expirations = new DateTime[tokens.Count];
            for (var i = 0; i < tokens.Count; i++)
            {
                if (Locked(tokens[i]) is not { } message)
                {
                    return null;
                }

                message.LockedUntil = _settings.UtcNow + Options.LockDuration;
                _lockExpiries.Enqueue((message, tokens[i]), message.LockedUntil);
                expirations[i] = message.LockedUntil;
                Metrics.Renewed();
            }

            return expirations;
        }
    }

    // ---- management reads ----

    /// <summary>
    /// Encoded messages from <paramref name="fromSequence"/> on (active, locked, deferred and scheduled), without locking
    /// them; with <paramref name="sessionId"/>, that session's only.
    /// </summary>
    public List<byte[]> Peek(long fromSequence, int count, string? sessionId = null)
    {
        lock (_sync)
        {
            Pump();
            var result = new List<byte[]>();
            if (_sequence.Count == 0 || count <= 0)
            {
                return result;
            }

            foreach (var sequence in _sequence.GetViewBetween(Math.Max(fromSequence, _sequence.Min), long.MaxValue))
            {
                var message = _messages[sequence];
                if (sessionId is not null && !string.Equals(message.SessionId, sessionId, StringComparison.Ordinal))
                {
                    continue;
                }

                result.Add(message.Encode((uint)message.DeliveryCount, message.State == BrokeredMessageState.Locked ? message.LockedUntil : null));
                if (result.Count >= count)
                {
                    break;
                }
            }

            return result;
        }
    }

    /// <summary>
    /// Receives deferred messages by sequence number; null when one of them is not deferred here (or, with
    /// <paramref name="sessionId"/>, not in that session). In a session the messages are locked under its lock.
    /// </summary>
    public List<(byte[] Payload, Guid Token)>? ReceiveDeferred(IReadOnlyList<long> sequenceNumbers, bool peekLock, string? sessionId = null)
    {
        lock (_sync)
        {
            var found = new List<BrokeredMessage>();
            foreach (var sequence in sequenceNumbers)
            {
                if (!_messages.TryGetValue(sequence, out var message) || !message.IsDeferred || message.State != BrokeredMessageState.Deferred ||
                    (RequiresSession && !string.Equals(message.SessionId, sessionId, StringComparison.Ordinal)))
                {
                    return null;
                }

                found.Add(message);
            }

            var result = new List<(byte[], Guid)>();
            var now = _settings.UtcNow;
            foreach (var message in found)
            {
                var prior = (uint)message.DeliveryCount;
                message.DeliveryCount++;
                Metrics.Outgoing();
                if (!peekLock)
                {
                    Remove(message);
                    result.Add((message.Encode(prior, null), Guid.Empty));
                    continue;
                }

                var token = Guid.NewGuid();
                Lock(message, token, now);
                result.Add((message.Encode(prior, message.LockedUntil), token));
            }

            return result;
        }
    }

    // ---- expiry ----

    /// <summary>Processes expired locks (and, when <paramref name="sweepMessages"/>, expired messages).</summary>
    public void Sweep(DateTime now, bool sweepMessages)
    {
        lock (_sync)
        {
            while (_lockExpiries.TryPeek(out var entry, out var at) && at <= now)
            {
                _lockExpiries.Dequeue();
                var (message, token) = entry;
                if (message.LockToken != token || !_locks.ContainsKey(token))
                {
                    continue; // settled or re-locked since
                }

                if (message.LockedUntil > now)
                {
                    _lockExpiries.Enqueue(entry, message.LockedUntil); // renewed
                    continue;
                }

                ExpireLock(message);
            }

            foreach (var session in _sessions.Values.ToList())
            {
                ExpireIfLapsed(session, now);
            }

            if (sweepMessages && !IsDeadLetterQueue)
            {
                List<BrokeredMessage>? expired = null;
                foreach (var sequence in _available)
                {
                    var message = _messages[sequence];
                    if (message.ExpiresAt <= now)
                    {
                        (expired ??= []).Add(message);
                    }
                }

                if (expired is not null)
                {
                    foreach (var message in expired)
                    {
                        UnmarkAvailable(message);
                        Expire(message);
                    }
                }
            }

            Pump();
        }
    }

    /// <summary>An expired lock counts as a delivery attempt: the message comes back, or moves to the DLQ past MaxDeliveryCount.</summary>
    private void ExpireLock(BrokeredMessage message)
    {
        Unlock(message);
        Metrics.LockExpired();
        ReturnToQueue(message);
    }

    private void ReturnToQueue(BrokeredMessage message)
    {
        if (!IsDeadLetterQueue && message.DeliveryCount >= Options.MaxDeliveryCount)
        {
            MoveToDeadLetter(message, EmulatorMetricNames.MaxDeliveryCountExceededReason,
                $"Message could not be consumed after {Options.MaxDeliveryCount} delivery attempts.");
            return;
        }

        if (message.IsDeferred)
        {
            message.State = BrokeredMessageState.Deferred;
            return;
        }

        message.State = BrokeredMessageState.Available;
        MarkAvailable(message);
    }

    private void Expire(BrokeredMessage message)
    {
        Metrics.Expired();
        if (Options.DeadLetteringOnMessageExpiration)
        {
            MoveToDeadLetter(message, EmulatorMetricNames.TtlExpiredReason, "The message expired and was dead lettered.");
        }
        else
        {
            Remove(message);
        }
    }

    private void MoveToDeadLetter(BrokeredMessage message, string? reason, string? description)
    {
        Remove(message);
        if (DeadLetterQueue is null)
        {
            // Messages in a dead-letter queue cannot be dead-lettered again; they stay.
            Add(message);
            return;
        }

        message.InvalidateEncoding();
        var properties = message.Message.EnsureApplicationProperties();
        if (reason is not null)
        {
            properties[ServiceBusAmqpNames.DeadLetterReasonProperty] = reason;
        }

        if (description is not null)
        {
            properties[ServiceBusAmqpNames.DeadLetterErrorDescriptionProperty] = description;
        }

        message.DeadLetterSource = Options.Name;
        Metrics.DeadLetter(reason ?? EmulatorMetricNames.UnspecifiedReason);
        DeadLetterQueue.AddDeadLettered(message);
    }

    private void Unlock(BrokeredMessage message)
    {
        _locks.Remove(message.LockToken);
        message.LockToken = Guid.Empty;
        if (RequiresSession && message.SessionId is { } id && _sessions.TryGetValue(id, out var session))
        {
            session.Locked.Remove(message);
        }
    }

    private void Remove(BrokeredMessage message)
    {
        if (message.State == BrokeredMessageState.Locked)
        {
            Unlock(message);
        }

        message.LockToken = Guid.Empty;
        UnmarkAvailable(message);
        _sequence.Remove(message.SequenceNumber);
        if (_messages.Remove(message.SequenceNumber) && RequiresSession && message.SessionId is { } id && _sessions.TryGetValue(id, out var session))
        {
            session.Messages--;
            Forget(session);
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
