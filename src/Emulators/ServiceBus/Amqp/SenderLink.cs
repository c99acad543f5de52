using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

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
