using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Emulators.Hosting;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Settlement: completing, abandoning, deferring and dead-lettering locked messages, and renewing their locks.</summary>
internal sealed partial class QueueEntity
{
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

        _ = ModelledDelay.AtLeastAsync(_settings.CompleteLatency, _settings.Time).ContinueWith(_ => Settle(link, delivery, context, state, answer), TaskScheduler.Default);
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
}
