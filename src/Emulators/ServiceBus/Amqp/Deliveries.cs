using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>A message this side received on a receiver link.</summary>
public sealed class IncomingDelivery
{
    private AmqpMessage? _message;

    internal IncomingDelivery(ReceiverLink link, uint deliveryId, byte[] tag, uint messageFormat, bool settled, ReadOnlyMemory<byte> payload)
    {
        Link = link;
        DeliveryId = deliveryId;
        Tag = tag;
        MessageFormat = messageFormat;
        RemoteSettled = settled;
        Payload = payload;
    }

    public ReceiverLink Link { get; }

    public uint DeliveryId { get; }

    public byte[] Tag { get; }

    public uint MessageFormat { get; }

    /// <summary>True when the sender settled the delivery on transfer (pre-settled, "at most once").</summary>
    public bool RemoteSettled { get; internal set; }

    /// <summary>The delivery's encoded message.</summary>
    public ReadOnlyMemory<byte> Payload { get; }

    /// <summary>True once this side settled the delivery.</summary>
    public bool Settled { get; internal set; }

    public DeliveryState? RemoteState { get; internal set; }

    /// <summary>Per-delivery state for the application (e.g. the broker's record of the message).</summary>
    public object? Context { get; set; }

    /// <summary>The decoded message (decoded once, on first access).</summary>
    public AmqpMessage Message => _message ??= AmqpMessage.Decode(Payload.Span);

    internal TaskCompletionSource<DeliveryState?>? PendingDisposition { get; set; }
}

/// <summary>A message this side sent on a sender link.</summary>
public sealed class OutgoingDelivery
{
    internal OutgoingDelivery(SenderLink link, byte[] tag, uint messageFormat, bool settled, ReadOnlyMemory<byte> payload, object? context)
    {
        Link = link;
        Tag = tag;
        MessageFormat = messageFormat;
        Settled = settled;
        Payload = payload;
        Context = context;
    }

    public SenderLink Link { get; }

    public uint DeliveryId { get; internal set; }

    public byte[] Tag { get; }

    public uint MessageFormat { get; }

    public ReadOnlyMemory<byte> Payload { get; }

    /// <summary>True once this side considers the delivery settled (pre-settled, or settled after the peer's outcome).</summary>
    public bool Settled { get; internal set; }

    public bool RemoteSettled { get; internal set; }

    public DeliveryState? RemoteState { get; internal set; }

    /// <summary>Per-delivery state for the application (e.g. the broker's record of the message).</summary>
    public object? Context { get; }

    internal TaskCompletionSource<DeliveryState?>? Outcome { get; set; }
}
