using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>
/// One AMQP session: transfer-id windows in both directions, link handles and delivery-id bookkeeping.
/// All state is guarded by the connection's lock.
/// </summary>
public sealed class AmqpSession
{
    /// <summary>The highest link handle this side announces in its begin (and so accepts in an attach).</summary>
    internal const uint HandleMax = 4095;

    private readonly Dictionary<uint, AmqpLink> _localHandles = [];
    private readonly Dictionary<uint, AmqpLink> _remoteHandles = [];
    private readonly Dictionary<(string Name, LinkRole Role), AmqpLink> _attaching = [];
    private readonly Dictionary<uint, OutgoingDelivery> _outgoingUnsettled = [];
    private readonly Dictionary<uint, IncomingDelivery> _incomingUnsettled = [];
    private readonly Queue<PendingTransfer> _blocked = new();
    private readonly TaskCompletionSource _begun = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _ended = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly uint _maxIncomingWindow;
    private uint _nextOutgoingId;
    private uint _nextIncomingId;
    private uint _incomingWindow;
    private long _remoteIncomingWindow;
    private uint _nextDeliveryId;
    private bool _beginSent;
    private bool _endSent;
    private bool _ended2;

    // Set when this side ended the session with an error: until the peer's end arrives, the channel stays
    // taken and everything else the peer sends on it is discarded (spec 2.5.5, the DISCARDING state).
    private bool _discarding;

    internal AmqpSession(AmqpConnection connection, ushort localChannel)
    {
        Connection = connection;
        LocalChannel = localChannel;
        _maxIncomingWindow = Math.Max(2u, connection.Options.SessionWindow);
        _incomingWindow = _maxIncomingWindow;
    }

    public AmqpConnection Connection { get; }

    public ushort LocalChannel { get; }

    public ushort? RemoteChannel { get; private set; }

    public Error? Error { get; private set; }

    public bool IsEnded => _ended2;

    /// <summary>Raised once when the session ends.</summary>
    public event Action<AmqpSession, Error?>? Ended;

    internal Lock Sync => Connection.Sync;

    /// <summary>Attaches a link on which this side sends.</summary>
    public async Task<SenderLink> AttachSenderAsync(LinkOptions options, CancellationToken cancellationToken = default)
    {
        SenderLink link;
        lock (Sync)
        {
            ThrowIfEnded();
            link = new SenderLink(this, options.Name, AllocateHandle());
            Register(link, options);
        }

        await link.WaitAttachedAsync(cancellationToken).ConfigureAwait(false);
        return link;
    }

    /// <summary>Attaches a link on which this side receives. No credit is issued until the caller asks.</summary>
    public async Task<ReceiverLink> AttachReceiverAsync(LinkOptions options, CancellationToken cancellationToken = default)
    {
        ReceiverLink link;
        lock (Sync)
        {
            ThrowIfEnded();
            link = new ReceiverLink(this, options.Name, AllocateHandle());
            Register(link, options);
        }

        await link.WaitAttachedAsync(cancellationToken).ConfigureAwait(false);
        return link;
    }

    /// <summary>Ends the session and waits briefly for the peer's end.</summary>
    public async Task EndAsync(Error? error = null, CancellationToken cancellationToken = default)
    {
        lock (Sync)
        {
            if (!_endSent && !_ended2)
            {
                _endSent = true;
                Connection.WriteFrame(LocalChannel, new End { Error = error });
            }
        }

        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(TimeSpan.FromSeconds(5));
            await _ended.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            Terminate(error);
        }
    }

    internal async Task WaitBegunAsync(CancellationToken cancellationToken)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(Connection.Options.OperationTimeout);
        await _begun.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
    }

    internal void SendBegin(ushort? remoteChannel)
    {
        _beginSent = true;
        Connection.WriteFrame(LocalChannel, new Begin
        {
            RemoteChannel = remoteChannel,
            NextOutgoingId = _nextOutgoingId,
            IncomingWindow = _incomingWindow,
            OutgoingWindow = uint.MaxValue,
            HandleMax = HandleMax,
        });
    }

    internal void OnBegin(ushort remoteChannel, Begin begin)
    {
        lock (Sync)
        {
            RemoteChannel = remoteChannel;
            _nextIncomingId = begin.NextOutgoingId;
            _remoteIncomingWindow = begin.IncomingWindow;
            if (!_beginSent)
            {
                SendBegin(remoteChannel);
            }
        }

        _begun.TrySetResult();
    }

    internal void OnFrame(Performative performative, ReadOnlySpan<byte> payload)
    {
        if (Volatile.Read(ref _discarding))
        {
            if (performative is End)
            {
                Connection.RemoveSession(this); // the peer's answer: the channel is free again
            }

            return;
        }

        try
        {
            switch (performative)
            {
                case Transfer transfer: OnTransfer(transfer, payload); break;
                case Disposition disposition: OnDisposition(disposition); break;
                case Flow flow: OnFlow(flow); break;
                case Attach attach: OnAttach(attach); break;
                case Detach detach: OnDetach(detach); break;
                case End end: OnEnd(end); break;
                default: throw new AmqpException(ErrorCondition.IllegalState, $"Unexpected {performative.GetType().Name.ToLowerInvariant()} on a session.");
            }
        }
        catch (AmqpSessionException e)
        {
            Fail(e.Error);
        }
    }

    /// <summary>
    /// Ends the session at once with a session error (spec 2.8.17): an end carrying it goes to the peer, the links
    /// of this session end with it, and the connection and its other sessions carry on.
    /// </summary>
    internal void Fail(Error error)
    {
        lock (Sync)
        {
            if (_ended2 || _endSent)
            {
                return;
            }

            _endSent = true;
            _discarding = true;
            Connection.WriteFrame(LocalChannel, new End { Error = error });
        }

        Terminate(error, releaseChannel: false);
    }

    internal void OnConnectionClosed(Error? error) => Terminate(error ?? new Error { Condition = ErrorCondition.ConnectionForced, Description = "The connection closed." });

    // ---- links ----

    private uint AllocateHandle()
    {
        uint handle = 0;
        while (_localHandles.ContainsKey(handle))
        {
            handle++;
        }

        return handle;
    }

    private void Register(AmqpLink link, LinkOptions options)
    {
        _localHandles[link.LocalHandle] = link;
        _attaching[(link.Name, link.Role)] = link;
        link.SendAttach(options);
    }

    private void OnAttach(Attach attach)
    {
        AmqpLink link;
        bool peerInitiated;
        if (attach.Handle > HandleMax)
        {
            // Spec 2.7.2 (begin, handle-max): a handle outside the announced range is a framing error of the connection.
            throw new AmqpException(ErrorCondition.FramingError, $"Attach on handle {attach.Handle}, beyond the handle-max of {HandleMax}.");
        }

        lock (Sync)
        {
            if (_remoteHandles.ContainsKey(attach.Handle))
            {
                throw new AmqpSessionException(ErrorCondition.HandleInUse, $"Handle {attach.Handle} is already attached.");
            }

            var ourRole = attach.Role == LinkRole.Sender ? LinkRole.Receiver : LinkRole.Sender;
            peerInitiated = !_attaching.Remove((attach.Name, ourRole), out link!);
            if (peerInitiated)
            {
                link = ourRole == LinkRole.Sender ? new SenderLink(this, attach.Name, AllocateHandle()) : new ReceiverLink(this, attach.Name, AllocateHandle());
                _localHandles[link.LocalHandle] = link;
            }

            _remoteHandles[attach.Handle] = link;
        }

        link.OnRemoteAttach(attach);
        if (!peerInitiated)
        {
            return;
        }

        if (Connection.LinkHandler is { } handler)
        {
            try
            {
                handler.OnAttach(link);
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                link.Reject(new Error { Condition = ErrorCondition.InternalError, Description = e.Message });
            }
        }
        else
        {
            link.Reject(new Error { Condition = ErrorCondition.NotAllowed, Description = "This endpoint does not accept links." });
        }
    }

    private void OnDetach(Detach detach)
    {
        AmqpLink? link;
        lock (Sync)
        {
            _remoteHandles.Remove(detach.Handle, out link);
        }

        if (link is null)
        {
            throw new AmqpSessionException(ErrorCondition.UnattachedHandle, $"Detach for handle {detach.Handle}, which is not attached.");
        }

        link.OnRemoteDetach(detach);
    }

    internal void RemoveLink(AmqpLink link)
    {
        lock (Sync)
        {
            _localHandles.Remove(link.LocalHandle);
            _attaching.Remove((link.Name, link.Role));
            if (link.RemoteHandle is { } remote && _remoteHandles.TryGetValue(remote, out var current) && current == link)
            {
                _remoteHandles.Remove(remote);
            }

            RemoveUnsettled(_outgoingUnsettled, d => d.Link == link);
            RemoveUnsettled(_incomingUnsettled, d => d.Link == link);
        }
    }

    private static void RemoveUnsettled<T>(Dictionary<uint, T> map, Func<T, bool> belongs)
    {
        if (map.Count == 0)
        {
            return;
        }

        foreach (var (id, delivery) in map.ToArray())
        {
            if (belongs(delivery))
            {
                map.Remove(id);
            }
        }
    }

    // ---- transfers ----

    internal void SendDelivery(SenderLink link, OutgoingDelivery delivery)
    {
        lock (Sync)
        {
            delivery.DeliveryId = _nextDeliveryId++;
            if (!delivery.Settled)
            {
                _outgoingUnsettled[delivery.DeliveryId] = delivery;
            }

            var transfer = new Transfer
            {
                Handle = link.LocalHandle,
                DeliveryId = delivery.DeliveryId,
                DeliveryTag = delivery.Tag,
                MessageFormat = delivery.MessageFormat,
                Settled = delivery.Settled,
            };
            var pending = new PendingTransfer(link, transfer, delivery.Payload, 0);
            if (_blocked.Count > 0)
            {
                _blocked.Enqueue(pending);
            }
            else
            {
                Transmit(pending);
            }
        }
    }

    private void Transmit(PendingTransfer pending)
    {
        var offset = pending.Offset;
        var transfer = pending.Transfer;
        do
        {
            if (_remoteIncomingWindow <= 0)
            {
                _blocked.Enqueue(pending with { Transfer = transfer, Offset = offset });
                return;
            }

            var taken = Connection.WriteTransferFrame(LocalChannel, transfer, pending.Payload.Span[offset..], WithMore);
            offset += taken;
            _nextOutgoingId++;
            _remoteIncomingWindow--;
            transfer = new Transfer { Handle = transfer.Handle, DeliveryId = transfer.DeliveryId, MessageFormat = transfer.MessageFormat };
        }
        while (offset < pending.Payload.Length);
    }

    private static Transfer WithMore(Transfer t) => new()
    {
        Handle = t.Handle,
        DeliveryId = t.DeliveryId,
        DeliveryTag = t.DeliveryTag,
        MessageFormat = t.MessageFormat,
        Settled = t.Settled,
        More = true,
        ReceiverSettleMode = t.ReceiverSettleMode,
        State = t.State,
        Batchable = t.Batchable,
    };

    private void PumpBlocked()
    {
        while (_blocked.Count > 0 && _remoteIncomingWindow > 0)
        {
            Transmit(_blocked.Dequeue());
        }
    }

    private void OnTransfer(Transfer transfer, ReadOnlySpan<byte> payload)
    {
        AmqpLink? link;
        lock (Sync)
        {
            if (_incomingWindow == 0)
            {
                throw new AmqpSessionException(ErrorCondition.WindowViolation, "Transfer beyond the session's incoming window.");
            }

            _incomingWindow--;
            _nextIncomingId++;
            if (_incomingWindow <= _maxIncomingWindow / 2)
            {
                _incomingWindow = _maxIncomingWindow;
                SendFlow(null);
            }

            _remoteHandles.TryGetValue(transfer.Handle, out link);
        }

        if (link is not ReceiverLink receiver)
        {
            throw new AmqpSessionException(ErrorCondition.UnattachedHandle, $"Transfer on handle {transfer.Handle}, which is not an attached receiving link.");
        }

        receiver.OnTransfer(transfer, payload);
    }

    internal void TrackIncoming(IncomingDelivery delivery)
    {
        lock (Sync)
        {
            _incomingUnsettled[delivery.DeliveryId] = delivery;
        }
    }

    // ---- dispositions ----

    internal void SendDisposition(LinkRole role, uint deliveryId, bool settled, DeliveryState? state)
    {
        lock (Sync)
        {
            if (settled)
            {
                if (role == LinkRole.Receiver)
                {
                    _incomingUnsettled.Remove(deliveryId);
                }
                else
                {
                    _outgoingUnsettled.Remove(deliveryId);
                }
            }

            if (!_ended2 && !_endSent)
            {
                Connection.WriteFrame(LocalChannel, new Disposition { Role = role, First = deliveryId, Settled = settled, State = state });
            }
        }
    }

    private void OnDisposition(Disposition disposition)
    {
        var first = disposition.First;
        var last = disposition.Last ?? first;
        var span = unchecked(last - first);
        if (disposition.Role == LinkRole.Receiver)
        {
            // The peer is the receiver: the disposition is about deliveries we sent.
            foreach (var delivery in Collect(_outgoingUnsettled, first, span, disposition.Settled))
            {
                delivery.Link.OnRemoteDisposition(delivery, disposition.State, disposition.Settled);
            }
        }
        else
        {
            foreach (var delivery in Collect(_incomingUnsettled, first, span, disposition.Settled))
            {
                delivery.Link.OnRemoteDisposition(delivery, disposition.State, disposition.Settled);
            }
        }
    }

    private List<T> Collect<T>(Dictionary<uint, T> map, uint first, uint span, bool remove)
    {
        var found = new List<T>();
        lock (Sync)
        {
            if (span < (uint)map.Count)
            {
                for (var offset = 0u; offset <= span; offset++)
                {
                    var id = unchecked(first + offset);
                    if (map.TryGetValue(id, out var delivery))
                    {
                        found.Add(delivery);
                        if (remove)
                        {
                            map.Remove(id);
                        }
                    }
                }
            }
            else
            {
                foreach (var (id, delivery) in map.ToArray())
                {
                    if (unchecked(id - first) <= span)
                    {
                        found.Add(delivery);
                        if (remove)
                        {
                            map.Remove(id);
                        }
                    }
                }
            }
        }

        return found;
    }

    // ---- flow ----

    internal void SendFlow(AmqpLink? link, bool echo = false)
    {
        lock (Sync)
        {
            if (_ended2 || _endSent)
            {
                return;
            }

            Connection.WriteFrame(LocalChannel, new Flow
            {
                NextIncomingId = _nextIncomingId,
                IncomingWindow = _incomingWindow,
                NextOutgoingId = _nextOutgoingId,
                OutgoingWindow = uint.MaxValue,
                Handle = link?.LocalHandle,
                DeliveryCount = link?.FlowDeliveryCount,
                LinkCredit = link?.FlowLinkCredit,
                Drain = link?.FlowDrain ?? false,
                Echo = echo,
            });
        }
    }

    private void OnFlow(Flow flow)
    {
        AmqpLink? link = null;
        lock (Sync)
        {
            _remoteIncomingWindow = (long)unchecked((flow.NextIncomingId ?? 0) + flow.IncomingWindow - _nextOutgoingId);
            if (flow.NextIncomingId is null)
            {
                _remoteIncomingWindow = flow.IncomingWindow;
            }

            if (flow.Handle is { } handle && !_remoteHandles.TryGetValue(handle, out link))
            {
                throw new AmqpSessionException(ErrorCondition.UnattachedHandle, $"Flow for handle {handle}, which is not attached.");
            }

            PumpBlocked();
            if (flow.Echo && link is null)
            {
                SendFlow(null);
            }
        }

        link?.OnFlow(flow);
    }

    // ---- end ----

    private void OnEnd(End end)
    {
        lock (Sync)
        {
            if (!_endSent)
            {
                _endSent = true;
                Connection.WriteFrame(LocalChannel, new End());
            }
        }

        Terminate(end.Error);
    }

    private void Terminate(Error? error, bool releaseChannel = true)
    {
        AmqpLink[] links;
        lock (Sync)
        {
            if (_ended2)
            {
                return;
            }

            _ended2 = true;
            Error = error;
            links = [.. _localHandles.Values];
            _localHandles.Clear();
            _remoteHandles.Clear();
            _attaching.Clear();
            _outgoingUnsettled.Clear();
            _incomingUnsettled.Clear();
            _blocked.Clear();
        }

        if (releaseChannel)
        {
            Connection.RemoveSession(this);
        }

        _begun.TrySetException(new AmqpException(error ?? new Error { Condition = ErrorCondition.IllegalState, Description = "The session ended." }));
        foreach (var link in links)
        {
            link.OnSessionEnded(error);
        }

        _ended.TrySetResult();
        Ended?.Invoke(this, error);
    }

    private void ThrowIfEnded()
    {
        Connection.ThrowIfClosed();
        if (_ended2 || _endSent)
        {
            throw new AmqpException(Error ?? new Error { Condition = ErrorCondition.IllegalState, Description = "The session has ended." });
        }
    }

    private sealed record PendingTransfer(SenderLink Link, Transfer Transfer, ReadOnlyMemory<byte> Payload, int Offset);
}

/// <summary>What this side puts in its attach.</summary>
public sealed record LinkOptions
{
    public required string Name { get; init; }

    public Source? Source { get; init; }

    public Target? Target { get; init; }

    public SenderSettleMode SenderSettleMode { get; init; } = SenderSettleMode.Mixed;

    public ReceiverSettleMode ReceiverSettleMode { get; init; } = ReceiverSettleMode.First;

    /// <summary>Largest message this side accepts (receiver) or will send (sender); null for no limit.</summary>
    public ulong? MaxMessageSize { get; init; }

    public Dictionary<object, object?>? Properties { get; init; }

    public Codec.AmqpSymbol[]? DesiredCapabilities { get; init; }
}
