using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

/// <summary>A frame body of the AMQP transport or SASL layer (spec 2.7, 5.3).</summary>
public abstract class Performative : IAmqpEncodable
{
    public abstract ulong Descriptor { get; }

    public void Encode(ByteBuffer buffer)
    {
        var writer = AmqpEncoder.BeginComposite(buffer, Descriptor);
        WriteFields(ref writer);
        writer.End();
    }

    protected abstract void WriteFields(ref CompositeWriter writer);

    /// <summary>Decodes one performative; unknown descriptors are a decode error.</summary>
    public static Performative Decode(ref AmqpReader reader)
    {
        var code = reader.ReadDescriptorCode();
        var count = reader.ReadListHeader(out var end);
        Performative result = code switch
        {
            Descriptors.Open => Open.Read(ref reader, count),
            Descriptors.Begin => Begin.Read(ref reader, count),
            Descriptors.Attach => Attach.Read(ref reader, count),
            Descriptors.Flow => Flow.Read(ref reader, count),
            Descriptors.Transfer => Transfer.Read(ref reader, count),
            Descriptors.Disposition => Disposition.Read(ref reader, count),
            Descriptors.Detach => Detach.Read(ref reader, count),
            Descriptors.End => End.Read(ref reader, count),
            Descriptors.Close => Close.Read(ref reader, count),
            Descriptors.SaslMechanisms => SaslMechanisms.Read(ref reader, count),
            Descriptors.SaslInit => SaslInit.Read(ref reader, count),
            Descriptors.SaslChallenge => SaslChallenge.Read(ref reader, count),
            Descriptors.SaslResponse => SaslResponse.Read(ref reader, count),
            Descriptors.SaslOutcome => SaslOutcome.Read(ref reader, count),
            _ => throw new AmqpDecodeException($"Descriptor 0x{code:x} is not a performative."),
        };
        reader.SeekTo(end);
        return result;
    }

    internal static AmqpDecodeException Missing(string performative, string field) =>
        new($"Mandatory field '{field}' of '{performative}' is missing.");
}

public sealed class Open : Performative
{
    public override ulong Descriptor => Descriptors.Open;

    public required string ContainerId { get; init; }

    public string? HostName { get; init; }

    public uint MaxFrameSize { get; init; } = uint.MaxValue;

    public ushort ChannelMax { get; init; } = ushort.MaxValue;

    /// <summary>Milliseconds; null or 0 means no idle time-out.</summary>
    public uint? IdleTimeOut { get; init; }

    public AmqpSymbol[]? OfferedCapabilities { get; init; }

    public AmqpSymbol[]? DesiredCapabilities { get; init; }

    public Dictionary<object, object?>? Properties { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.String(ContainerId);
        writer.String(HostName);
        writer.UInt(MaxFrameSize);
        writer.UShort(ChannelMax);
        writer.UInt(IdleTimeOut);
        writer.Null();
        writer.Null();
        writer.Symbols(OfferedCapabilities);
        writer.Symbols(DesiredCapabilities);
        writer.Value(Properties);
    }

    internal static Open Read(ref AmqpReader r, int count)
    {
        var containerId = count > 0 ? r.ReadString() : null;
        var hostName = count > 1 ? r.ReadString() : null;
        var maxFrameSize = count > 2 ? r.ReadUInt() : null;
        var channelMax = count > 3 ? r.ReadUShort() : null;
        var idle = count > 4 ? r.ReadUInt() : null;
        if (count > 5) r.SkipValue();
        if (count > 6) r.SkipValue();
        return new Open
        {
            ContainerId = containerId ?? throw Missing("open", "container-id"),
            HostName = hostName,
            MaxFrameSize = maxFrameSize ?? uint.MaxValue,
            ChannelMax = channelMax ?? ushort.MaxValue,
            IdleTimeOut = idle,
            OfferedCapabilities = count > 7 ? r.ReadSymbols() : null,
            DesiredCapabilities = count > 8 ? r.ReadSymbols() : null,
            Properties = count > 9 ? r.ReadMap() : null,
        };
    }
}

public sealed class Begin : Performative
{
    public override ulong Descriptor => Descriptors.Begin;

    public ushort? RemoteChannel { get; init; }

    public uint NextOutgoingId { get; init; }

    public uint IncomingWindow { get; init; }

    public uint OutgoingWindow { get; init; }

    public uint HandleMax { get; init; } = uint.MaxValue;

    public AmqpSymbol[]? OfferedCapabilities { get; init; }

    public AmqpSymbol[]? DesiredCapabilities { get; init; }

    public Dictionary<object, object?>? Properties { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.UShort(RemoteChannel);
        writer.UInt(NextOutgoingId);
        writer.UInt(IncomingWindow);
        writer.UInt(OutgoingWindow);
        writer.UInt(HandleMax);
        writer.Symbols(OfferedCapabilities);
        writer.Symbols(DesiredCapabilities);
        writer.Value(Properties);
    }

    internal static Begin Read(ref AmqpReader r, int count)
    {
        var remoteChannel = count > 0 ? r.ReadUShort() : null;
        return new Begin
        {
            RemoteChannel = remoteChannel,
            NextOutgoingId = (count > 1 ? r.ReadUInt() : null) ?? throw Missing("begin", "next-outgoing-id"),
            IncomingWindow = (count > 2 ? r.ReadUInt() : null) ?? throw Missing("begin", "incoming-window"),
            OutgoingWindow = (count > 3 ? r.ReadUInt() : null) ?? throw Missing("begin", "outgoing-window"),
            HandleMax = (count > 4 ? r.ReadUInt() : null) ?? uint.MaxValue,
            OfferedCapabilities = count > 5 ? r.ReadSymbols() : null,
            DesiredCapabilities = count > 6 ? r.ReadSymbols() : null,
            Properties = count > 7 ? r.ReadMap() : null,
        };
    }
}

/// <summary>Link role: false is sender, true is receiver (spec 2.8.1).</summary>
public enum LinkRole
{
    Sender = 0,
    Receiver = 1,
}

/// <summary>Sender settle mode (spec 2.8.2).</summary>
public enum SenderSettleMode : byte
{
    Unsettled = 0,
    Settled = 1,
    Mixed = 2,
}

/// <summary>Receiver settle mode (spec 2.8.3).</summary>
public enum ReceiverSettleMode : byte
{
    First = 0,
    Second = 1,
}

public sealed class Attach : Performative
{
    public override ulong Descriptor => Descriptors.Attach;

    public required string Name { get; init; }

    public uint Handle { get; init; }

    public LinkRole Role { get; init; }

    public SenderSettleMode SenderSettleMode { get; init; } = SenderSettleMode.Mixed;

    public ReceiverSettleMode ReceiverSettleMode { get; init; } = ReceiverSettleMode.First;

    public Source? Source { get; init; }

    public Target? Target { get; init; }

    public uint? InitialDeliveryCount { get; init; }

    public ulong? MaxMessageSize { get; init; }

    public AmqpSymbol[]? OfferedCapabilities { get; init; }

    public AmqpSymbol[]? DesiredCapabilities { get; init; }

    public Dictionary<object, object?>? Properties { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.String(Name);
        writer.UInt(Handle);
        writer.Boolean(Role == LinkRole.Receiver);
        writer.UByte(SenderSettleMode == SenderSettleMode.Mixed ? null : (byte)SenderSettleMode);
        writer.UByte(ReceiverSettleMode == ReceiverSettleMode.First ? null : (byte)ReceiverSettleMode);
        writer.Value(Source);
        writer.Value(Target);
        writer.Null();
        writer.Null();
        writer.UInt(InitialDeliveryCount);
        writer.ULong(MaxMessageSize);
        writer.Symbols(OfferedCapabilities);
        writer.Symbols(DesiredCapabilities);
        writer.Value(Properties);
    }

    internal static Attach Read(ref AmqpReader r, int count)
    {
        var name = count > 0 ? r.ReadString() : null;
        var handle = count > 1 ? r.ReadUInt() : null;
        var role = count > 2 ? r.ReadBoolean() : null;
        var snd = count > 3 ? r.ReadUByte() : null;
        var rcv = count > 4 ? r.ReadUByte() : null;
        var source = count > 5 ? Source.Read(ref r) : null;
        var target = count > 6 ? Target.Read(ref r) : null;
        if (count > 7) r.SkipValue();
        if (count > 8) r.SkipValue();
        if (snd > 2 || rcv > 1)
        {
            throw new AmqpDecodeException("Invalid settle mode in attach.");
        }

        return new Attach
        {
            Name = name ?? throw Missing("attach", "name"),
            Handle = handle ?? throw Missing("attach", "handle"),
            Role = (role ?? throw Missing("attach", "role")) ? LinkRole.Receiver : LinkRole.Sender,
            SenderSettleMode = (SenderSettleMode)(snd ?? 2),
            ReceiverSettleMode = (ReceiverSettleMode)(rcv ?? 0),
            Source = source,
            Target = target,
            InitialDeliveryCount = count > 9 ? r.ReadUInt() : null,
            MaxMessageSize = count > 10 ? r.ReadULong() : null,
            OfferedCapabilities = count > 11 ? r.ReadSymbols() : null,
            DesiredCapabilities = count > 12 ? r.ReadSymbols() : null,
            Properties = count > 13 ? r.ReadMap() : null,
        };
    }
}

public sealed class Flow : Performative
{
    public override ulong Descriptor => Descriptors.Flow;

    public uint? NextIncomingId { get; init; }

    public uint IncomingWindow { get; init; }

    public uint NextOutgoingId { get; init; }

    public uint OutgoingWindow { get; init; }

    public uint? Handle { get; init; }

    public uint? DeliveryCount { get; init; }

    public uint? LinkCredit { get; init; }

    public uint? Available { get; init; }

    public bool Drain { get; init; }

    public bool Echo { get; init; }

    public Dictionary<object, object?>? Properties { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.UInt(NextIncomingId);
        writer.UInt(IncomingWindow);
        writer.UInt(NextOutgoingId);
        writer.UInt(OutgoingWindow);
        writer.UInt(Handle);
        writer.UInt(DeliveryCount);
        writer.UInt(LinkCredit);
        writer.UInt(Available);
        writer.Boolean(Drain ? true : null);
        writer.Boolean(Echo ? true : null);
        writer.Value(Properties);
    }

    internal static Flow Read(ref AmqpReader r, int count) => new()
    {
        NextIncomingId = count > 0 ? r.ReadUInt() : null,
        IncomingWindow = (count > 1 ? r.ReadUInt() : null) ?? throw Missing("flow", "incoming-window"),
        NextOutgoingId = (count > 2 ? r.ReadUInt() : null) ?? throw Missing("flow", "next-outgoing-id"),
        OutgoingWindow = (count > 3 ? r.ReadUInt() : null) ?? throw Missing("flow", "outgoing-window"),
        Handle = count > 4 ? r.ReadUInt() : null,
        DeliveryCount = count > 5 ? r.ReadUInt() : null,
        LinkCredit = count > 6 ? r.ReadUInt() : null,
        Available = count > 7 ? r.ReadUInt() : null,
        Drain = (count > 8 ? r.ReadBoolean() : null) ?? false,
        Echo = (count > 9 ? r.ReadBoolean() : null) ?? false,
        Properties = count > 10 ? r.ReadMap() : null,
    };
}

public sealed class Transfer : Performative
{
    public override ulong Descriptor => Descriptors.Transfer;

    public uint Handle { get; init; }

    public uint? DeliveryId { get; init; }

    public byte[]? DeliveryTag { get; init; }

    public uint? MessageFormat { get; init; }

    public bool? Settled { get; init; }

    public bool More { get; init; }

    public ReceiverSettleMode? ReceiverSettleMode { get; init; }

    public DeliveryState? State { get; init; }

    public bool Resume { get; init; }

    public bool Aborted { get; init; }

    public bool Batchable { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.UInt(Handle);
        writer.UInt(DeliveryId);
        writer.Binary(DeliveryTag);
        writer.UInt(MessageFormat);
        writer.Boolean(Settled);
        writer.Boolean(More ? true : null);
        writer.UByte((byte?)ReceiverSettleMode);
        writer.Value(State);
        writer.Boolean(Resume ? true : null);
        writer.Boolean(Aborted ? true : null);
        writer.Boolean(Batchable ? true : null);
    }

    internal static Transfer Read(ref AmqpReader r, int count)
    {
        var handle = (count > 0 ? r.ReadUInt() : null) ?? throw Missing("transfer", "handle");
        var deliveryId = count > 1 ? r.ReadUInt() : null;
        var tag = count > 2 ? r.ReadBinary() : null;
        var format = count > 3 ? r.ReadUInt() : null;
        var settled = count > 4 ? r.ReadBoolean() : null;
        var more = (count > 5 ? r.ReadBoolean() : null) ?? false;
        var rcv = count > 6 ? r.ReadUByte() : null;
        if (rcv > 1)
        {
            throw new AmqpDecodeException("Invalid receiver settle mode in transfer.");
        }

        return new Transfer
        {
            Handle = handle,
            DeliveryId = deliveryId,
            DeliveryTag = tag,
            MessageFormat = format,
            Settled = settled,
            More = more,
            ReceiverSettleMode = (ReceiverSettleMode?)rcv,
            State = count > 7 ? DeliveryState.Read(ref r) : null,
            Resume = (count > 8 ? r.ReadBoolean() : null) ?? false,
            Aborted = (count > 9 ? r.ReadBoolean() : null) ?? false,
            Batchable = (count > 10 ? r.ReadBoolean() : null) ?? false,
        };
    }
}

public sealed class Disposition : Performative
{
    public override ulong Descriptor => Descriptors.Disposition;

    public LinkRole Role { get; init; }

    public uint First { get; init; }

    public uint? Last { get; init; }

    public bool Settled { get; init; }

    public DeliveryState? State { get; init; }

    public bool Batchable { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.Boolean(Role == LinkRole.Receiver);
        writer.UInt(First);
        writer.UInt(Last);
        writer.Boolean(Settled ? true : null);
        writer.Value(State);
        writer.Boolean(Batchable ? true : null);
    }

    internal static Disposition Read(ref AmqpReader r, int count) => new()
    {
        Role = ((count > 0 ? r.ReadBoolean() : null) ?? throw Missing("disposition", "role")) ? LinkRole.Receiver : LinkRole.Sender,
        First = (count > 1 ? r.ReadUInt() : null) ?? throw Missing("disposition", "first"),
        Last = count > 2 ? r.ReadUInt() : null,
        Settled = (count > 3 ? r.ReadBoolean() : null) ?? false,
        State = count > 4 ? DeliveryState.Read(ref r) : null,
        Batchable = (count > 5 ? r.ReadBoolean() : null) ?? false,
    };
}

public sealed class Detach : Performative
{
    public override ulong Descriptor => Descriptors.Detach;

    public uint Handle { get; init; }

    public bool Closed { get; init; }

    public Error? Error { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.UInt(Handle);
        writer.Boolean(Closed ? true : null);
        writer.Value(Error);
    }

    internal static Detach Read(ref AmqpReader r, int count) => new()
    {
        Handle = (count > 0 ? r.ReadUInt() : null) ?? throw Missing("detach", "handle"),
        Closed = (count > 1 ? r.ReadBoolean() : null) ?? false,
        Error = count > 2 ? Error.Read(ref r) : null,
    };
}

public sealed class End : Performative
{
    public override ulong Descriptor => Descriptors.End;

    public Error? Error { get; init; }

    protected override void WriteFields(ref CompositeWriter writer) => writer.Value(Error);

    internal static End Read(ref AmqpReader r, int count) => new() { Error = count > 0 ? Error.Read(ref r) : null };
}

public sealed class Close : Performative
{
    public override ulong Descriptor => Descriptors.Close;

    public Error? Error { get; init; }

    protected override void WriteFields(ref CompositeWriter writer) => writer.Value(Error);

    internal static Close Read(ref AmqpReader r, int count) => new() { Error = count > 0 ? Error.Read(ref r) : null };
}

public sealed class SaslMechanisms : Performative
{
    public override ulong Descriptor => Descriptors.SaslMechanisms;

    public required AmqpSymbol[] Mechanisms { get; init; }

    protected override void WriteFields(ref CompositeWriter writer) => writer.Value(Mechanisms);

    internal static SaslMechanisms Read(ref AmqpReader r, int count) =>
        new() { Mechanisms = (count > 0 ? r.ReadSymbols() : null) ?? throw Missing("sasl-mechanisms", "sasl-server-mechanisms") };
}

public sealed class SaslInit : Performative
{
    public override ulong Descriptor => Descriptors.SaslInit;

    public required AmqpSymbol Mechanism { get; init; }

    public byte[]? InitialResponse { get; init; }

    public string? HostName { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.Symbol(Mechanism);
        writer.Binary(InitialResponse);
        writer.String(HostName);
    }

    internal static SaslInit Read(ref AmqpReader r, int count) => new()
    {
        Mechanism = (count > 0 ? r.ReadSymbol() : null) ?? throw Missing("sasl-init", "mechanism"),
        InitialResponse = count > 1 ? r.ReadBinary() : null,
        HostName = count > 2 ? r.ReadString() : null,
    };
}

public sealed class SaslChallenge : Performative
{
    public override ulong Descriptor => Descriptors.SaslChallenge;

    public required byte[] Challenge { get; init; }

    protected override void WriteFields(ref CompositeWriter writer) => writer.Binary(Challenge);

    internal static SaslChallenge Read(ref AmqpReader r, int count) =>
        new() { Challenge = (count > 0 ? r.ReadBinary() : null) ?? throw Missing("sasl-challenge", "challenge") };
}

public sealed class SaslResponse : Performative
{
    public override ulong Descriptor => Descriptors.SaslResponse;

    public required byte[] Response { get; init; }

    protected override void WriteFields(ref CompositeWriter writer) => writer.Binary(Response);

    internal static SaslResponse Read(ref AmqpReader r, int count) =>
        new() { Response = (count > 0 ? r.ReadBinary() : null) ?? throw Missing("sasl-response", "response") };
}

/// <summary>SASL outcome codes (spec 5.3.3.6).</summary>
public enum SaslCode : byte
{
    Ok = 0,
    Auth = 1,
    Sys = 2,
    SysPerm = 3,
    SysTemp = 4,
}

public sealed class SaslOutcome : Performative
{
    public override ulong Descriptor => Descriptors.SaslOutcome;

    public SaslCode Code { get; init; }

    public byte[]? AdditionalData { get; init; }

    protected override void WriteFields(ref CompositeWriter writer)
    {
        writer.UByte((byte)Code);
        writer.Binary(AdditionalData);
    }

    internal static SaslOutcome Read(ref AmqpReader r, int count) => new()
    {
        Code = (SaslCode)((count > 0 ? r.ReadUByte() : null) ?? throw Missing("sasl-outcome", "code")),
        AdditionalData = count > 1 ? r.ReadBinary() : null,
    };
}
