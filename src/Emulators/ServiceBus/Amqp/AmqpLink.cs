using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>A link endpoint: attach/detach handshake and what both roles share.</summary>
public abstract class AmqpLink
{
    private readonly TaskCompletionSource _attached = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _detached = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private bool _attachSent;
    private bool _detachSent;
    private bool _refused;
    private Error? _rejection;
    private ITimer? _refusalTimer;
    private int _closedRaised;

    private protected AmqpLink(AmqpSession session, string name, LinkRole role, uint localHandle)
    {
        Session = session;
        Name = name;
        Role = role;
        LocalHandle = localHandle;
    }

    public AmqpSession Session { get; }

    public string Name { get; }

    /// <summary>This side's role on the link.</summary>
    public LinkRole Role { get; }

    public uint LocalHandle { get; }

    public uint? RemoteHandle { get; private set; }

    /// <summary>The peer's attach.</summary>
    public Attach? RemoteAttach { get; private set; }

    /// <summary>What this side sent in its attach.</summary>
    public LinkOptions? LocalOptions { get; private set; }

    public SenderSettleMode SenderSettleMode { get; private set; } = SenderSettleMode.Mixed;

    public ReceiverSettleMode ReceiverSettleMode { get; private set; } = ReceiverSettleMode.First;

    /// <summary>The peer's max-message-size (0 or null: no limit).</summary>
    public ulong? RemoteMaxMessageSize => RemoteAttach?.MaxMessageSize;

    public bool IsAttached => _attached.Task.IsCompletedSuccessfully && !IsClosed;

    public bool IsClosed { get; private set; }

    internal bool DetachSent => _detachSent;

    public Error? Error { get; private set; }

    /// <summary>Application state (e.g. which broker entity the link serves).</summary>
    public object? Context { get; set; }

    /// <summary>Raised once when the link is detached, by either side, or its session or connection ends.</summary>
    public event Action<AmqpLink, Error?>? Closed;

    internal Lock Sync => Session.Sync;

    internal abstract uint? FlowDeliveryCount { get; }

    internal abstract uint? FlowLinkCredit { get; }

    internal abstract bool FlowDrain { get; }

    /// <summary>Accepts a link the peer attached, echoing its terminus unless others are given.</summary>
    public void Accept(Source? source = null, Target? target = null, ulong? maxMessageSize = null, Dictionary<object, object?>? properties = null)
    {
        var remote = RemoteAttach ?? throw new InvalidOperationException("Only a link the peer attached can be accepted.");
        lock (Sync)
        {
            if (_attachSent || IsClosed)
            {
                return; // answered already, or the peer gave up on the link before it was answered
            }

            SendAttach(new LinkOptions
            {
                Name = Name,
                Source = source ?? remote.Source,
                Target = target ?? remote.Target,
                SenderSettleMode = remote.SenderSettleMode,
                ReceiverSettleMode = remote.ReceiverSettleMode,
                MaxMessageSize = maxMessageSize,
                Properties = properties,
            });
        }

        _attached.TrySetResult();
    }

    /// <summary>
    /// Refuses a link the peer attached: an attach with no terminus, then a detach carrying
    /// <paramref name="error"/>. The link ends when the peer answers with its own detach: until
    /// then its handle stays known, so that answer is not an unknown handle, which would end
    /// the session and with it every other link of the session. A peer that never answers gets
    /// <see cref="AmqpConnectionOptions.RefusedLinkTimeout"/> before the handle is freed.
    /// </summary>
    public void Reject(Error error)
    {
        _ = RemoteAttach ?? throw new InvalidOperationException("Only a link the peer attached can be rejected.");
        lock (Sync)
        {
            if (_detachSent || IsClosed)
            {
                return;
            }

            SendRefusalAttach();
            _rejection = error;
            SendDetach(error);
            var options = Session.Connection.Options;
            _refusalTimer = options.TimeProvider.CreateTimer(
                static state => ((AmqpLink)state!).Finish(((AmqpLink)state!)._rejection), this, options.RefusedLinkTimeout, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>The attach that answers a link this side does not take: the peer's terminus on its side only.</summary>
    private void SendRefusalAttach()
    {
        if (_attachSent)
        {
            return;
        }

        var remote = RemoteAttach!;
        SendAttach(new LinkOptions
        {
            Name = Name,
            Source = Role == LinkRole.Sender ? null : remote.Source,
            Target = Role == LinkRole.Receiver ? null : remote.Target,
        });
    }

    /// <summary>Detaches (closes) the link and waits briefly for the peer's detach.</summary>
    public async Task CloseAsync(Error? error = null, CancellationToken cancellationToken = default)
    {
        lock (Sync)
        {
            if (!_detachSent && !IsClosed)
            {
                SendDetach(error);
            }
        }

        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(TimeSpan.FromSeconds(5));
            await _detached.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            Finish(error);
        }
    }

    internal void SendAttach(LinkOptions options)
    {
        LocalOptions = options;
        _attachSent = true;
        if (RemoteAttach is null)
        {
            SenderSettleMode = options.SenderSettleMode;
            ReceiverSettleMode = options.ReceiverSettleMode;
        }

        Session.Connection.WriteFrame(Session.LocalChannel, new Attach
        {
            Name = Name,
            Handle = LocalHandle,
            Role = Role,
            SenderSettleMode = options.SenderSettleMode,
            ReceiverSettleMode = options.ReceiverSettleMode,
            Source = options.Source,
            Target = options.Target,
            InitialDeliveryCount = Role == LinkRole.Sender ? 0u : null,
            MaxMessageSize = options.MaxMessageSize,
            DesiredCapabilities = options.DesiredCapabilities,
            Properties = options.Properties,
        });
    }

    internal async Task WaitAttachedAsync(CancellationToken cancellationToken)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(Session.Connection.Options.OperationTimeout);
        try
        {
            await _attached.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            Finish(new Error { Condition = ErrorCondition.InternalError, Description = "The peer did not answer the attach in time." });
            throw new TimeoutException($"Attaching link '{Name}' timed out.");
        }
    }

    internal void OnRemoteAttach(Attach attach)
    {
        lock (Sync)
        {
            RemoteAttach = attach;
            RemoteHandle = attach.Handle;
            if (!_attachSent)
            {
                SenderSettleMode = attach.SenderSettleMode;
                ReceiverSettleMode = attach.ReceiverSettleMode;
            }

            OnRemoteAttachCore(attach);
        }

        if (!_attachSent)
        {
            return; // peer-initiated: the handler accepts or rejects
        }

        // A refusing peer answers with a null terminus and follows with a detach carrying the reason.
        _refused = Role == LinkRole.Receiver ? attach.Source is null : attach.Target is null;
        if (!_refused)
        {
            _attached.TrySetResult();
        }
    }

    internal void OnRemoteDetach(Detach detach)
    {
        lock (Sync)
        {
            if (!_detachSent)
            {
                // A peer may give up on a link before this side answered its attach (an accept-next-session
                // still waiting, say): the attach still goes first, as the handshake requires.
                if (RemoteAttach is not null && !_attachSent)
                {
                    SendRefusalAttach();
                }

                SendDetach(null);
            }
        }

        var error = detach.Error ?? _rejection ?? (_refused ? new Error { Condition = ErrorCondition.NotFound, Description = "The peer refused the link." } : null);
        Finish(error);
    }

    internal void OnSessionEnded(Error? error) => Finish(error ?? new Error { Condition = ErrorCondition.DetachForced, Description = "The session ended." });

    private void SendDetach(Error? error)
    {
        _detachSent = true;
        Session.Connection.WriteFrame(Session.LocalChannel, new Detach { Handle = LocalHandle, Closed = true, Error = error });
    }

    private void Finish(Error? error)
    {
        if (Interlocked.Exchange(ref _closedRaised, 1) == 1)
        {
            return;
        }

        lock (Sync)
        {
            IsClosed = true;
            Error = error;
            _refusalTimer?.Dispose();
        }

        Session.RemoveLink(this);
        var exception = new AmqpException(error ?? new Error { Condition = ErrorCondition.DetachForced, Description = $"Link '{Name}' is closed." });
        _attached.TrySetException(exception);
        OnClosedCore(exception);
        _detached.TrySetResult();
        Closed?.Invoke(this, error);
    }

    internal void ThrowIfClosed()
    {
        if (IsClosed || _detachSent)
        {
            throw new AmqpException(Error ?? new Error { Condition = ErrorCondition.DetachForced, Description = $"Link '{Name}' is closed." });
        }
    }

    private protected virtual void OnRemoteAttachCore(Attach attach)
    {
    }

    private protected abstract void OnClosedCore(AmqpException exception);

    internal abstract void OnFlow(Flow flow);

    internal abstract void OnRemoteDisposition(OutgoingDelivery delivery, DeliveryState? state, bool settled);

    internal abstract void OnRemoteDisposition(IncomingDelivery delivery, DeliveryState? state, bool settled);
}

/// <summary>The sending end of a link: credit-gated transfers and the peer's outcomes.</summary>
public sealed class SenderLink : AmqpLink
{
    private readonly Queue<(OutgoingDelivery Delivery, CancellationToken Token)> _waiting = new();
    private readonly HashSet<OutgoingDelivery> _inFlight = [];
    private uint _deliveryCount;
    private uint _credit;
    private bool _drain;

    internal SenderLink(AmqpSession session, string name, uint localHandle)
        : base(session, name, LinkRole.Sender, localHandle)
    {
    }

    /// <summary>The credit a transfer may use now: none once this side has sent its detach (nothing more may go out), as <see cref="TrySend"/> decides.</summary>
    public uint Credit
    {
        get { lock (Sync) { return IsClosed || DetachSent ? 0 : _credit; } }
    }

    public uint DeliveryCount
    {
        get { lock (Sync) { return _deliveryCount; } }
    }

    /// <summary>True while the peer has asked to drain and the drain is not yet answered.</summary>
    public bool DrainRequested
    {
        get { lock (Sync) { return _drain; } }
    }

    /// <summary>
    /// Raised on the reader after the peer's flow changed this link's credit or asked to drain. When a handler
    /// is subscribed it owns the drain answer (<see cref="CompleteDrain"/>); otherwise drains are answered at once.
    /// </summary>
    public event Action<SenderLink>? FlowReceived;

    /// <summary>Raised when the peer's disposition changes a delivery this side has not settled.</summary>
    public event Action<SenderLink, OutgoingDelivery>? DeliveryUpdated;

    internal override uint? FlowDeliveryCount => _deliveryCount;

    internal override uint? FlowLinkCredit => _credit;

    internal override bool FlowDrain => _drain;

    /// <summary>
    /// Sends one message, waiting for credit, and returns the peer's outcome (null when the link is
    /// pre-settled). The payload must stay unchanged until the task completes.
    /// </summary>
    public Task<DeliveryState?> SendAsync(ReadOnlyMemory<byte> payload, byte[] tag, uint messageFormat = 0, CancellationToken cancellationToken = default)
    {
        var settled = SenderSettleMode == SenderSettleMode.Settled;
        var delivery = new OutgoingDelivery(this, tag, messageFormat, settled, payload, null);
        if (!settled)
        {
            delivery.Outcome = new TaskCompletionSource<DeliveryState?>(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        var maximum = RemoteMaxMessageSize;
        if (maximum is > 0 && (ulong)payload.Length > maximum)
        {
            throw new AmqpException(ErrorCondition.MessageSizeExceeded, $"The message is {payload.Length} bytes; the link accepts at most {maximum}.");
        }

        lock (Sync)
        {
            ThrowIfClosed();
            if (_credit > 0 && _waiting.Count == 0)
            {
                Transmit(delivery);
            }
            else
            {
                _waiting.Enqueue((delivery, cancellationToken));
                delivery.Outcome ??= new TaskCompletionSource<DeliveryState?>(TaskCreationOptions.RunContinuationsAsynchronously);
            }
        }

        if (delivery.Outcome is null)
        {
            return Task.FromResult<DeliveryState?>(null);
        }

        if (cancellationToken.CanBeCanceled)
        {
            var registration = cancellationToken.Register(() => delivery.Outcome.TrySetCanceled(cancellationToken));
            delivery.Outcome.Task.ContinueWith(_ => registration.Dispose(), TaskScheduler.Default);
        }

        return delivery.Outcome.Task;
    }

    /// <summary>Sends at once if the link has credit; returns null otherwise (the broker's pull model).</summary>
    public OutgoingDelivery? TrySend(ReadOnlyMemory<byte> payload, byte[] tag, bool settled, object? context = null, uint messageFormat = 0)
    {
        lock (Sync)
        {
            if (IsClosed || DetachSent || _credit == 0)
            {
                return null;
            }

            var delivery = new OutgoingDelivery(this, tag, messageFormat, settled, payload, context);
            Transmit(delivery);
            return delivery;
        }
    }

    /// <summary>Settles a delivery with a final state (the broker's answer to a receiver's disposition).</summary>
    public void Settle(OutgoingDelivery delivery, DeliveryState? state)
    {
        lock (Sync)
        {
            if (delivery.Settled)
            {
                return;
            }

            delivery.Settled = true;
            Session.SendDisposition(LinkRole.Sender, delivery.DeliveryId, settled: true, state);
        }
    }

    /// <summary>Answers a drain: uses up the remaining credit by advancing the delivery count and tells the peer.</summary>
    public void CompleteDrain()
    {
        lock (Sync)
        {
            if (!_drain)
            {
                return;
            }

            _deliveryCount = unchecked(_deliveryCount + _credit);
            _credit = 0;
            Session.SendFlow(this);
            _drain = false;
        }
    }

    private void Transmit(OutgoingDelivery delivery)
    {
        if (delivery.Outcome is not null && !delivery.Settled)
        {
            _inFlight.Add(delivery);
        }

        _credit--;
        _deliveryCount = unchecked(_deliveryCount + 1);
        Session.SendDelivery(this, delivery);
    }

    internal override void OnFlow(Flow flow)
    {
        bool hasHandler;
        lock (Sync)
        {
            var receiverCount = flow.DeliveryCount ?? 0;
            var credit = unchecked((int)(receiverCount + (flow.LinkCredit ?? 0) - _deliveryCount));
            _credit = (uint)Math.Max(0, credit);
            _drain = flow.Drain;
            while (_credit > 0 && _waiting.Count > 0)
            {
                var (delivery, token) = _waiting.Dequeue();
                if (token.IsCancellationRequested || delivery.Outcome?.Task.IsCompleted == true)
                {
                    continue;
                }

                Transmit(delivery);
                if (delivery.Settled)
                {
                    delivery.Outcome?.TrySetResult(null);
                }
            }

            hasHandler = FlowReceived is not null;
            if (flow.Echo)
            {
                Session.SendFlow(this);
            }
        }

        if (hasHandler)
        {
            FlowReceived?.Invoke(this);
        }
        else if (_drain)
        {
            CompleteDrain();
        }
    }

    internal override void OnRemoteDisposition(OutgoingDelivery delivery, DeliveryState? state, bool settled)
    {
        delivery.RemoteState = state ?? delivery.RemoteState;
        delivery.RemoteSettled |= settled;
        if (delivery.Outcome is { } outcome)
        {
            if (!settled && state is { IsOutcome: true })
            {
                Settle(delivery, state);
            }

            if (settled || state is { IsOutcome: true })
            {
                delivery.Settled = true;
                lock (Sync)
                {
                    _inFlight.Remove(delivery);
                }

                outcome.TrySetResult(state);
            }

            return;
        }

        if (settled)
        {
            delivery.Settled = true;
        }

        DeliveryUpdated?.Invoke(this, delivery);
    }

    internal override void OnRemoteDisposition(IncomingDelivery delivery, DeliveryState? state, bool settled) =>
        throw new AmqpException(ErrorCondition.IllegalState, "A sender link received a disposition for an incoming delivery.");

    private protected override void OnClosedCore(AmqpException exception)
    {
        (OutgoingDelivery Delivery, CancellationToken Token)[] waiting;
        lock (Sync)
        {
            waiting = [.. _waiting];
            _waiting.Clear();
        }

        foreach (var (delivery, _) in waiting)
        {
            delivery.Outcome?.TrySetException(exception);
        }

        OutgoingDelivery[] inFlight;
        lock (Sync)
        {
            inFlight = [.. _inFlight];
            _inFlight.Clear();
        }

        foreach (var delivery in inFlight)
        {
            delivery.Outcome?.TrySetException(exception);
        }
    }
}

/// <summary>The receiving end of a link: credit, buffered deliveries, settlement and drain.</summary>
public sealed class ReceiverLink : AmqpLink
{
    private readonly Queue<IncomingDelivery> _buffer = new();
    private readonly Queue<TaskCompletionSource<IncomingDelivery?>> _waiters = new();
    private readonly List<IncomingDelivery> _awaitingOutcome = [];
    private ByteBuffer? _partialPayload;
    private Transfer? _partialFirst;
    private uint _deliveryCount;
    private uint _credit;
    private bool _drain;
    private TaskCompletionSource? _drainCompleted;
    private AmqpException? _closedException;

    internal ReceiverLink(AmqpSession session, string name, uint localHandle)
        : base(session, name, LinkRole.Receiver, localHandle)
    {
    }

    /// <summary>When set, deliveries go to this callback (on the reader) instead of the receive buffer.</summary>
    public Action<ReceiverLink, IncomingDelivery>? OnMessage { get; set; }

    public uint Credit
    {
        get { lock (Sync) { return _credit; } }
    }

    internal override uint? FlowDeliveryCount => _deliveryCount;

    internal override uint? FlowLinkCredit => _credit;

    internal override bool FlowDrain => _drain;

    /// <summary>Sets the link credit to <paramref name="credit"/> and tells the sender.</summary>
    public void SetCredit(uint credit)
    {
        lock (Sync)
        {
            ThrowIfClosed();
            _credit = credit;
            Session.SendFlow(this);
        }
    }

    /// <summary>Adds <paramref name="credit"/> to the link credit and tells the sender.</summary>
    public void AddCredit(uint credit)
    {
        lock (Sync)
        {
            ThrowIfClosed();
            _credit = unchecked(_credit + credit);
            Session.SendFlow(this);
        }
    }

    /// <summary>Asks the sender to use up or give back all credit; completes when it answers with a flow.</summary>
    public async Task DrainAsync(CancellationToken cancellationToken = default)
    {
        TaskCompletionSource completed;
        lock (Sync)
        {
            ThrowIfClosed();
            if (_credit == 0)
            {
                return;
            }

            _drain = true;
            completed = _drainCompleted ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            Session.SendFlow(this);
        }

        await completed.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Takes one buffered delivery, waiting up to <paramref name="wait"/>; null when none arrived.</summary>
    public async Task<IncomingDelivery?> ReceiveAsync(TimeSpan wait, CancellationToken cancellationToken = default)
    {
        TaskCompletionSource<IncomingDelivery?> waiter;
        lock (Sync)
        {
            if (_buffer.TryDequeue(out var ready))
            {
                return ready;
            }

            if (_closedException is not null)
            {
                throw _closedException;
            }

            waiter = new TaskCompletionSource<IncomingDelivery?>(TaskCreationOptions.RunContinuationsAsynchronously);
            _waiters.Enqueue(waiter);
        }

        // The wait runs on the connection's clock; cancellation ends it at once.
        using var timer = wait == Timeout.InfiniteTimeSpan
            ? null
            : Session.Connection.Options.TimeProvider.CreateTimer(static state => ((TaskCompletionSource<IncomingDelivery?>)state!).TrySetResult(null), waiter, wait, Timeout.InfiniteTimeSpan);
        using (cancellationToken.Register(() => waiter.TrySetResult(null)))
        {
            var delivery = await waiter.Task.ConfigureAwait(false);
            cancellationToken.ThrowIfCancellationRequested();
            return delivery;
        }
    }

    /// <summary>Takes a buffered delivery without waiting.</summary>
    public bool TryReceive(out IncomingDelivery delivery)
    {
        lock (Sync)
        {
            if (_buffer.TryDequeue(out delivery!))
            {
                return true;
            }

            return false;
        }
    }

    /// <summary>
    /// Sends this side's outcome for a delivery. In receiver-settle-mode second the delivery stays unsettled
    /// until the sender settles it, and the task returns the sender's final state; otherwise it settles at once.
    /// </summary>
    public Task<DeliveryState?> DisposeAsync(IncomingDelivery delivery, DeliveryState state, CancellationToken cancellationToken = default)
    {
        lock (Sync)
        {
            ThrowIfClosed();
            if (delivery.Settled || delivery.RemoteSettled || ReceiverSettleMode == ReceiverSettleMode.First)
            {
                delivery.Settled = true;
                Session.SendDisposition(LinkRole.Receiver, delivery.DeliveryId, settled: true, state);
                return Task.FromResult<DeliveryState?>(state);
            }

            delivery.PendingDisposition ??= new TaskCompletionSource<DeliveryState?>(TaskCreationOptions.RunContinuationsAsynchronously);
            _awaitingOutcome.Add(delivery);
            Session.SendDisposition(LinkRole.Receiver, delivery.DeliveryId, settled: false, state);
        }

        return delivery.PendingDisposition.Task.WaitAsync(cancellationToken);
    }

    /// <summary>Settles a delivery with a final state (the broker's answer to a sender).</summary>
    public void Settle(IncomingDelivery delivery, DeliveryState? state)
    {
        lock (Sync)
        {
            if (delivery.Settled)
            {
                return;
            }

            delivery.Settled = true;
            Session.SendDisposition(LinkRole.Receiver, delivery.DeliveryId, settled: true, state);
        }
    }

    private protected override void OnRemoteAttachCore(Attach attach) => _deliveryCount = attach.InitialDeliveryCount ?? 0;

    internal void OnTransfer(Transfer transfer, ReadOnlySpan<byte> payload)
    {
        IncomingDelivery? complete = null;
        Error? oversized = null;
        lock (Sync)
        {
            if (IsClosed || DetachSent)
            {
                return; // frames in flight after this side detached
            }

            if (transfer.Aborted)
            {
                _partialPayload?.Dispose();
                _partialPayload = null;
                _partialFirst = null;
                return;
            }

            if (_partialFirst is null)
            {
                if (transfer.DeliveryId is null || transfer.DeliveryTag is null)
                {
                    // A link error: this link is detached with it, its session and connection carry on.
                    _ = CloseAsync(new Error { Condition = ErrorCondition.InvalidField, Description = "The first transfer of a delivery needs a delivery-id and a delivery-tag." });
                    return;
                }

                _deliveryCount = unchecked(_deliveryCount + 1);
                if (_credit > 0)
                {
                    _credit--;
                }

                if (!transfer.More)
                {
                    complete = CreateDelivery(transfer, payload.ToArray());
                }
                else
                {
                    _partialFirst = transfer;
                    _partialPayload = new ByteBuffer(Math.Max(1024, payload.Length * 2));
                    _partialPayload.Write(payload);
                }
            }
            else
            {
                _partialPayload!.Write(payload);
                var limit = LocalOptions?.MaxMessageSize;
                if (limit is > 0 && (ulong)_partialPayload.Length > limit)
                {
                    // Only this link pays for an oversized message: it is detached, the connection stays up.
                    _partialPayload.Dispose();
                    _partialPayload = null;
                    _partialFirst = null;
                    oversized = new Error { Condition = ErrorCondition.MessageSizeExceeded, Description = $"A message on link '{Name}' exceeds {limit} bytes." };
                }

                else if (!transfer.More)
                {
                    complete = CreateDelivery(_partialFirst, _partialPayload.ToArray(), transfer.Settled);
                    _partialPayload.Dispose();
                    _partialPayload = null;
                    _partialFirst = null;
                }
            }

            if (complete is null)
            {
                if (oversized is not null)
                {
                    _ = CloseAsync(oversized);
                }

                return;
            }

            if (!complete.RemoteSettled)
            {
                Session.TrackIncoming(complete);
            }

            if (OnMessage is null)
            {
                while (_waiters.TryDequeue(out var waiter))
                {
                    if (waiter.TrySetResult(complete))
                    {
                        return;
                    }
                }

                _buffer.Enqueue(complete);
                return;
            }
        }

        OnMessage(this, complete);
    }

    private IncomingDelivery CreateDelivery(Transfer first, byte[] payload, bool? lastSettled = null) =>
        new(this, first.DeliveryId!.Value, first.DeliveryTag!, first.MessageFormat ?? 0, (first.Settled ?? false) || (lastSettled ?? false) || SenderSettleMode == SenderSettleMode.Settled, payload);

    internal override void OnFlow(Flow flow)
    {
        TaskCompletionSource? drained = null;
        lock (Sync)
        {
            if (flow.DeliveryCount is { } count)
            {
                _deliveryCount = count;
            }

            if (flow.LinkCredit is { } credit)
            {
                _credit = credit;
            }

            if (_drainCompleted is not null && (_credit == 0 || !flow.Drain))
            {
                drained = _drainCompleted;
                _drainCompleted = null;
                _drain = false;
            }

            if (flow.Echo)
            {
                Session.SendFlow(this);
            }
        }

        drained?.TrySetResult();
    }

    internal override void OnRemoteDisposition(OutgoingDelivery delivery, DeliveryState? state, bool settled) =>
        throw new AmqpException(ErrorCondition.IllegalState, "A receiver link received a disposition for an outgoing delivery.");

    internal override void OnRemoteDisposition(IncomingDelivery delivery, DeliveryState? state, bool settled)
    {
        delivery.RemoteState = state ?? delivery.RemoteState;
        if (!settled)
        {
            return;
        }

        delivery.RemoteSettled = true;
        lock (Sync)
        {
            delivery.Settled = true;
            _awaitingOutcome.Remove(delivery);
        }

        delivery.PendingDisposition?.TrySetResult(state);
    }

    private protected override void OnClosedCore(AmqpException exception)
    {
        TaskCompletionSource<IncomingDelivery?>[] waiters;
        IncomingDelivery[] awaiting;
        TaskCompletionSource? drain;
        lock (Sync)
        {
            _closedException = exception;
            waiters = [.. _waiters];
            _waiters.Clear();
            awaiting = [.. _awaitingOutcome];
            _awaitingOutcome.Clear();
            drain = _drainCompleted;
            _drainCompleted = null;
            _partialPayload?.Dispose();
            _partialPayload = null;
        }

        foreach (var waiter in waiters)
        {
            waiter.TrySetException(exception);
        }

        foreach (var delivery in awaiting)
        {
            delivery.PendingDisposition?.TrySetException(exception);
        }

        drain?.TrySetException(exception);
    }
}
