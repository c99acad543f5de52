using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

/// <summary>The source of a link (spec 3.5.3).</summary>
public sealed class Source : IAmqpEncodable
{
    public string? Address { get; init; }

    public uint? Durable { get; init; }

    public AmqpSymbol? ExpiryPolicy { get; init; }

    public uint? Timeout { get; init; }

    public bool? Dynamic { get; init; }

    public Dictionary<object, object?>? DynamicNodeProperties { get; init; }

    public AmqpSymbol? DistributionMode { get; init; }

    public Dictionary<object, object?>? Filter { get; init; }

    public object? DefaultOutcome { get; init; }

    public AmqpSymbol[]? Outcomes { get; init; }

    public AmqpSymbol[]? Capabilities { get; init; }

    public void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Source);
        w.String(Address);
        w.UInt(Durable);
        w.Symbol(ExpiryPolicy);
        w.UInt(Timeout);
        w.Boolean(Dynamic);
        w.Value(DynamicNodeProperties);
        w.Symbol(DistributionMode);
        w.Value(Filter);
        w.Value(DefaultOutcome);
        w.Symbols(Outcomes);
        w.Symbols(Capabilities);
        w.End();
    }

    public static Source? Read(ref AmqpReader r)
    {
        if (r.TryReadNull())
        {
            return null;
        }

        if (r.ReadDescriptorCode() != Descriptors.Source)
        {
            throw new AmqpDecodeException("Expected a source.");
        }

        var count = r.ReadListHeader(out var end);
        var source = new Source
        {
            Address = count > 0 ? ReadAddress(ref r) : null,
            Durable = count > 1 ? r.ReadUInt() : null,
            ExpiryPolicy = count > 2 ? r.ReadSymbol() : null,
            Timeout = count > 3 ? r.ReadUInt() : null,
            Dynamic = count > 4 ? r.ReadBoolean() : null,
            DynamicNodeProperties = count > 5 ? r.ReadMap() : null,
            DistributionMode = count > 6 ? r.ReadSymbol() : null,
            Filter = count > 7 ? r.ReadMap() : null,
            DefaultOutcome = count > 8 ? r.ReadObject() : null,
            Outcomes = count > 9 ? r.ReadSymbols() : null,
            Capabilities = count > 10 ? r.ReadSymbols() : null,
        };
        r.SeekTo(end);
        return source;
    }

    internal static string? ReadAddress(ref AmqpReader r) => r.ReadObject() switch
    {
        null => null,
        string s => s,
        AmqpSymbol sym => sym.Value,
        var other => other.ToString(),
    };
}

/// <summary>The target of a link (spec 3.5.4). A transaction coordinator target is reported through <see cref="IsCoordinator"/>.</summary>
public sealed class Target : IAmqpEncodable
{
    public string? Address { get; init; }

    public uint? Durable { get; init; }

    public AmqpSymbol? ExpiryPolicy { get; init; }

    public uint? Timeout { get; init; }

    public bool? Dynamic { get; init; }

    public Dictionary<object, object?>? DynamicNodeProperties { get; init; }

    public AmqpSymbol[]? Capabilities { get; init; }

    public bool IsCoordinator { get; init; }

    public void Encode(ByteBuffer buffer)
    {
        if (IsCoordinator)
        {
            var c = AmqpEncoder.BeginComposite(buffer, Descriptors.Coordinator);
            c.Symbols(Capabilities);
            c.End();
            return;
        }

        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Target);
        w.String(Address);
        w.UInt(Durable);
        w.Symbol(ExpiryPolicy);
        w.UInt(Timeout);
        w.Boolean(Dynamic);
        w.Value(DynamicNodeProperties);
        w.Symbols(Capabilities);
        w.End();
    }

    public static Target? Read(ref AmqpReader r)
    {
        if (r.TryReadNull())
        {
            return null;
        }

        var code = r.ReadDescriptorCode();
        var count = r.ReadListHeader(out var end);
        Target target;
        if (code == Descriptors.Coordinator)
        {
            target = new Target { IsCoordinator = true, Capabilities = count > 0 ? r.ReadSymbols() : null };
        }
        else if (code == Descriptors.Target)
        {
            target = new Target
            {
                Address = count > 0 ? Source.ReadAddress(ref r) : null,
                Durable = count > 1 ? r.ReadUInt() : null,
                ExpiryPolicy = count > 2 ? r.ReadSymbol() : null,
                Timeout = count > 3 ? r.ReadUInt() : null,
                Dynamic = count > 4 ? r.ReadBoolean() : null,
                DynamicNodeProperties = count > 5 ? r.ReadMap() : null,
                Capabilities = count > 6 ? r.ReadSymbols() : null,
            };
        }
        else
        {
            throw new AmqpDecodeException("Expected a target.");
        }

        r.SeekTo(end);
        return target;
    }
}
