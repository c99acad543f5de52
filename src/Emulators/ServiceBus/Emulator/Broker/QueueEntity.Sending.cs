using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Sending: storing, scheduling and duplicate detection of the messages sent to the entity.</summary>
internal sealed partial class QueueEntity
{
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
}
