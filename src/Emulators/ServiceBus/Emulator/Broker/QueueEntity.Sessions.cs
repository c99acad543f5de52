using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Message sessions: accepting, binding and locking a session for one consumer at a time, and its state.</summary>
internal sealed partial class QueueEntity
{
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
}
