using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

/// <summary>The state of a delivery: an outcome (accepted, rejected, released, modified) or received / transactional state.</summary>
public abstract class DeliveryState : IAmqpEncodable
{
    public abstract void Encode(ByteBuffer buffer);

    /// <summary>True for the terminal outcomes of spec 3.4.</summary>
    public virtual bool IsOutcome => true;

    public static DeliveryState? Read(ref AmqpReader r)
    {
        if (r.TryReadNull())
        {
            return null;
        }

        var code = r.ReadDescriptorCode();
        var count = r.ReadListHeader(out var end);
        DeliveryState state = code switch
        {
            Descriptors.Accepted => Accepted.Instance,
            Descriptors.Released => Released.Instance,
            Descriptors.Rejected => new Rejected { Error = count > 0 ? Error.Read(ref r) : null },
            Descriptors.Modified => new Modified
            {
                DeliveryFailed = (count > 0 ? r.ReadBoolean() : null) ?? false,
                UndeliverableHere = (count > 1 ? r.ReadBoolean() : null) ?? false,
                MessageAnnotations = count > 2 ? r.ReadMap() : null,
            },
            Descriptors.Received => new Received
            {
                SectionNumber = (count > 0 ? r.ReadUInt() : null) ?? throw Performative.Missing("received", "section-number"),
                SectionOffset = (count > 1 ? r.ReadULong() : null) ?? throw Performative.Missing("received", "section-offset"),
            },
            Descriptors.TransactionalState => new TransactionalState
            {
                TransactionId = (count > 0 ? r.ReadBinary() : null) ?? throw Performative.Missing("transactional-state", "txn-id"),
                Outcome = count > 1 ? ReadOutcome(ref r) : null,
            },
            _ => throw new AmqpDecodeException($"Descriptor 0x{code:x} is not a delivery state."),
        };
        r.SeekTo(end);
        return state;
    }

    /// <summary>
    /// The outcome a transactional-state carries (spec 4.5.5): accepted, rejected, released or modified, never another
    /// transactional or received state. Reading it as a state would let a frame nest states until the stack ran out.
    /// </summary>
    private static DeliveryState? ReadOutcome(ref AmqpReader r)
    {
        var start = r.Position;
        if (!r.TryReadNull())
        {
            var code = r.ReadDescriptorCode();
            if (code is not (Descriptors.Accepted or Descriptors.Rejected or Descriptors.Released or Descriptors.Modified))
            {
                throw new AmqpDecodeException($"The outcome of a transactional-state must be accepted, rejected, released or modified, not descriptor 0x{code:x}.");
            }
        }

        r.Rewind(start);
        return Read(ref r);
    }

    protected static void WriteEmpty(ByteBuffer buffer, ulong descriptor) => AmqpEncoder.BeginComposite(buffer, descriptor).End();
}

public sealed class Accepted : DeliveryState
{
    public static readonly Accepted Instance = new();

    public override void Encode(ByteBuffer buffer) => WriteEmpty(buffer, Descriptors.Accepted);

    public override string ToString() => "accepted";
}

public sealed class Released : DeliveryState
{
    public static readonly Released Instance = new();

    public override void Encode(ByteBuffer buffer) => WriteEmpty(buffer, Descriptors.Released);

    public override string ToString() => "released";
}

public sealed class Rejected : DeliveryState
{
    public Error? Error { get; init; }

    public override void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Rejected);
        w.Value(Error);
        w.End();
    }

    public override string ToString() => Error is null ? "rejected" : $"rejected ({Error})";
}

public sealed class Modified : DeliveryState
{
    public bool DeliveryFailed { get; init; }

    public bool UndeliverableHere { get; init; }

    public Dictionary<object, object?>? MessageAnnotations { get; init; }

    public override void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Modified);
        w.Boolean(DeliveryFailed ? true : null);
        w.Boolean(UndeliverableHere ? true : null);
        w.Value(MessageAnnotations is { Count: > 0 } ? MessageAnnotations : null);
        w.End();
    }

    public override string ToString() => $"modified (delivery-failed={DeliveryFailed}, undeliverable-here={UndeliverableHere})";
}

public sealed class Received : DeliveryState
{
    public uint SectionNumber { get; init; }

    public ulong SectionOffset { get; init; }

    public override bool IsOutcome => false;

    public override void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Received);
        w.UInt(SectionNumber);
        w.ULong(SectionOffset);
        w.End();
    }
}

public sealed class TransactionalState : DeliveryState
{
    public required byte[] TransactionId { get; init; }

    public DeliveryState? Outcome { get; init; }

    public override bool IsOutcome => false;

    public override void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.TransactionalState);
        w.Binary(TransactionId);
        w.Value(Outcome);
        w.End();
    }
}
