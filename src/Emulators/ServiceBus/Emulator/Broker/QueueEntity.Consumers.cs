using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.Hosting;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Consumers: links with credit, the pump that delivers to them, and the peek-locks it takes.</summary>
internal sealed partial class QueueEntity
{
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
        _ = ModelledDelay.AtLeastAsync(_settings.ReceiveLatency, _settings.Time).ContinueWith(_ => link.CompleteDrain(), TaskScheduler.Default);
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
        _ = ModelledDelay.AtLeastAsync(_settings.ReceiveLatency, _settings.Time).ContinueWith(_ =>
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
}
