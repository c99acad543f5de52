using DroneDelivery.Emulators.ServiceBus.Metrics;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Expiry: lapsed locks, expired messages and their removal from the entity.</summary>
internal sealed partial class QueueEntity
{
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
}
