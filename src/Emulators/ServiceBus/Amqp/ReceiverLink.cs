using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

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
