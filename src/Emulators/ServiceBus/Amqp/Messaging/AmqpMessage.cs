using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

/// <summary>
/// An AMQP 1.0 message (spec 3.2): header, delivery and message annotations, properties, application
/// properties, a body of data sections, one amqp-value or amqp-sequence sections, and a footer.
/// </summary>
public sealed class AmqpMessage
{
    public MessageHeader? Header { get; set; }

    public Dictionary<object, object?>? DeliveryAnnotations { get; set; }

    /// <summary>Message annotations; keys are <see cref="AmqpSymbol"/>s.</summary>
    public Dictionary<object, object?>? MessageAnnotations { get; set; }

    public MessageProperties? Properties { get; set; }

    public Dictionary<string, object?>? ApplicationProperties { get; set; }

    public MessageBody? Body { get; set; }

    public Dictionary<object, object?>? Footer { get; set; }

    public MessageProperties EnsureProperties() => Properties ??= new MessageProperties();

    public Dictionary<string, object?> EnsureApplicationProperties() => ApplicationProperties ??= new(StringComparer.Ordinal);

    public void Encode(ByteBuffer buffer)
    {
        Header?.Encode(buffer);
        WriteMapSection(buffer, Descriptors.DeliveryAnnotations, DeliveryAnnotations);
        WriteMapSection(buffer, Descriptors.MessageAnnotations, MessageAnnotations);
        Properties?.Encode(buffer);
        if (ApplicationProperties is { Count: > 0 })
        {
            AmqpEncoder.WriteDescriptor(buffer, Descriptors.ApplicationProperties);
            AmqpEncoder.WriteMap(buffer, ApplicationProperties);
        }

        Body?.Encode(buffer);
        WriteMapSection(buffer, Descriptors.Footer, Footer);
    }

    public byte[] ToArray()
    {
        using var buffer = new ByteBuffer(512);
        Encode(buffer);
        return buffer.ToArray();
    }

    /// <summary>Decodes a complete encoded message; throws <see cref="AmqpDecodeException"/> on malformed input.</summary>
    public static AmqpMessage Decode(ReadOnlySpan<byte> payload)
    {
        var reader = new AmqpReader(payload);
        var message = new AmqpMessage();
        List<ReadOnlyMemory<byte>>? data = null;
        List<IList<object?>>? sequence = null;
        ulong? previous = null;
        while (!reader.IsAtEnd)
        {
            var code = reader.ReadDescriptorCode();
            CheckSectionOrder(previous, code);
            previous = code;
            switch (code)
            {
                case Descriptors.Header:
                    message.Header = MessageHeader.Read(ref reader);
                    break;
                case Descriptors.DeliveryAnnotations:
                    message.DeliveryAnnotations = reader.ReadMap();
                    break;
                case Descriptors.MessageAnnotations:
                    message.MessageAnnotations = reader.ReadMap();
                    break;
                case Descriptors.Properties:
                    message.Properties = MessageProperties.Read(ref reader);
                    break;
                case Descriptors.ApplicationProperties:
                    message.ApplicationProperties = ToStringKeys(reader.ReadMap());
                    break;
                case Descriptors.Data:
                    (data ??= []).Add(reader.ReadBinarySpan().ToArray());
                    break;
                case Descriptors.AmqpSequence:
                    (sequence ??= []).Add(reader.ReadObject() as IList<object?> ?? throw new AmqpDecodeException("amqp-sequence must hold a list."));
                    break;
                case Descriptors.AmqpValue:
                    message.Body = new ValueBody(reader.ReadObject());
                    break;
                case Descriptors.Footer:
                    message.Footer = reader.ReadMap();
                    break;
                default:
                    throw new AmqpDecodeException($"Descriptor 0x{code:x} is not a message section.");
            }
        }

        if (data is not null)
        {
            message.Body = message.Body is null && sequence is null ? new DataBody(data) : throw new AmqpDecodeException("A message body mixes section kinds.");
        }
        else if (sequence is not null)
        {
            message.Body = message.Body is null ? new SequenceBody(sequence) : throw new AmqpDecodeException("A message body mixes section kinds.");
        }

        return message;
    }

    /// <summary>
    /// Spec 3.2: header, delivery-annotations, message-annotations, properties, application-properties, the body (data
    /// sections, amqp-sequence sections or one amqp-value), footer — each at most once and in that order. A section out
    /// of place or repeated would otherwise overwrite the one before it unnoticed.
    /// </summary>
    private static void CheckSectionOrder(ulong? previous, ulong code)
    {
        if (previous is not { } before || code is < Descriptors.Header or > Descriptors.Footer)
        {
            return; // the switch names a descriptor that is no section
        }

        var repeatable = code is Descriptors.Data or Descriptors.AmqpSequence;
        if (before == code && repeatable)
        {
            return;
        }

        if (Rank(code) <= Rank(before))
        {
            throw new AmqpDecodeException(before == code
                ? $"The message repeats its {SectionName(code)} section."
                : $"The message's {SectionName(code)} section comes after its {SectionName(before)} section; sections must be in the specification's order.");
        }
    }

    // The body's three kinds share one place in the order.
    private static int Rank(ulong code) => code switch
    {
        Descriptors.Data or Descriptors.AmqpSequence or Descriptors.AmqpValue => (int)(Descriptors.Data - Descriptors.Header),
        Descriptors.Footer => (int)(Descriptors.Data - Descriptors.Header) + 1,
        _ => (int)(code - Descriptors.Header),
    };

    private static string SectionName(ulong code) => code switch
    {
        Descriptors.Header => "header",
        Descriptors.DeliveryAnnotations => "delivery-annotations",
        Descriptors.MessageAnnotations => "message-annotations",
        Descriptors.Properties => "properties",
        Descriptors.ApplicationProperties => "application-properties",
        Descriptors.Data => "data",
        Descriptors.AmqpSequence => "amqp-sequence",
        Descriptors.AmqpValue => "amqp-value",
        _ => "footer",
    };

    private static void WriteMapSection(ByteBuffer buffer, ulong descriptor, Dictionary<object, object?>? map)
    {
        if (map is { Count: > 0 })
        {
            AmqpEncoder.WriteDescriptor(buffer, descriptor);
            AmqpEncoder.WriteMap(buffer, map);
        }
    }

    private static Dictionary<string, object?>? ToStringKeys(Dictionary<object, object?>? map)
    {
        if (map is null)
        {
            return null;
        }

        var result = new Dictionary<string, object?>(map.Count, StringComparer.Ordinal);
        foreach (var (key, value) in map)
        {
            result[key as string ?? throw new AmqpDecodeException("Application property keys must be strings.")] = value;
        }

        return result;
    }
}

/// <summary>The header section (spec 3.2.1).</summary>
public sealed class MessageHeader
{
    public bool Durable { get; set; }

    public byte? Priority { get; set; }

    /// <summary>Time to live in milliseconds.</summary>
    public uint? Ttl { get; set; }

    public bool FirstAcquirer { get; set; }

    /// <summary>Number of prior unsuccessful delivery attempts; always written when set.</summary>
    public uint? DeliveryCount { get; set; }

    public void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Header);
        w.Boolean(Durable ? true : null);
        w.UByte(Priority);
        w.UInt(Ttl);
        w.Boolean(FirstAcquirer ? true : null);
        w.UInt(DeliveryCount);
        w.End();
    }

    internal static MessageHeader Read(ref AmqpReader r)
    {
        var count = r.ReadListHeader(out var end);
        var header = new MessageHeader
        {
            Durable = (count > 0 ? r.ReadBoolean() : null) ?? false,
            Priority = count > 1 ? r.ReadUByte() : null,
            Ttl = count > 2 ? r.ReadUInt() : null,
            FirstAcquirer = (count > 3 ? r.ReadBoolean() : null) ?? false,
            DeliveryCount = count > 4 ? r.ReadUInt() : null,
        };
        r.SeekTo(end);
        return header;
    }
}

/// <summary>The properties section (spec 3.2.4). Message and correlation ids may be string, ulong, uuid or binary.</summary>
public sealed class MessageProperties
{
    public object? MessageId { get; set; }

    public byte[]? UserId { get; set; }

    public string? To { get; set; }

    public string? Subject { get; set; }

    public string? ReplyTo { get; set; }

    public object? CorrelationId { get; set; }

    public AmqpSymbol? ContentType { get; set; }

    public AmqpSymbol? ContentEncoding { get; set; }

    public DateTime? AbsoluteExpiryTime { get; set; }

    public DateTime? CreationTime { get; set; }

    public string? GroupId { get; set; }

    public uint? GroupSequence { get; set; }

    public string? ReplyToGroupId { get; set; }

    public void Encode(ByteBuffer buffer)
    {
        var w = AmqpEncoder.BeginComposite(buffer, Descriptors.Properties);
        w.Value(MessageId);
        w.Binary(UserId);
        w.String(To);
        w.String(Subject);
        w.String(ReplyTo);
        w.Value(CorrelationId);
        w.Symbol(ContentType);
        w.Symbol(ContentEncoding);
        w.Timestamp(AbsoluteExpiryTime);
        w.Timestamp(CreationTime);
        w.String(GroupId);
        w.UInt(GroupSequence);
        w.String(ReplyToGroupId);
        w.End();
    }

    internal static MessageProperties Read(ref AmqpReader r)
    {
        var count = r.ReadListHeader(out var end);
        var properties = new MessageProperties
        {
            MessageId = count > 0 ? ReadId(ref r) : null,
            UserId = count > 1 ? r.ReadBinary() : null,
            To = count > 2 ? ReadAddress(ref r) : null,
            Subject = count > 3 ? r.ReadString() : null,
            ReplyTo = count > 4 ? ReadAddress(ref r) : null,
            CorrelationId = count > 5 ? ReadId(ref r) : null,
            ContentType = count > 6 ? r.ReadSymbol() : null,
            ContentEncoding = count > 7 ? r.ReadSymbol() : null,
            AbsoluteExpiryTime = count > 8 ? r.ReadTimestamp() : null,
            CreationTime = count > 9 ? r.ReadTimestamp() : null,
            GroupId = count > 10 ? r.ReadString() : null,
            GroupSequence = count > 11 ? r.ReadUInt() : null,
            ReplyToGroupId = count > 12 ? r.ReadString() : null,
        };
        r.SeekTo(end);
        return properties;
    }

    private static object? ReadId(ref AmqpReader r) => r.ReadObject() switch
    {
        null => null,
        string id => id,
        ulong id => id,
        Guid id => id,
        byte[] id => id,
        var other => throw new AmqpDecodeException($"A message id cannot be of type {other.GetType().Name}."),
    };

    private static string? ReadAddress(ref AmqpReader r) => r.ReadObject() switch
    {
        null => null,
        string s => s,
        AmqpSymbol s => s.Value,
        var other => throw new AmqpDecodeException($"An address cannot be of type {other.GetType().Name}."),
    };
}

/// <summary>The body of a message: data sections, one amqp-value, or amqp-sequence sections.</summary>
public abstract class MessageBody
{
    public abstract void Encode(ByteBuffer buffer);
}

public sealed class DataBody(IReadOnlyList<ReadOnlyMemory<byte>> sections) : MessageBody
{
    public DataBody(ReadOnlyMemory<byte> single)
        : this([single])
    {
    }

    public IReadOnlyList<ReadOnlyMemory<byte>> Sections { get; } = sections;

    /// <summary>All sections concatenated (a copy unless there is exactly one).</summary>
    public ReadOnlyMemory<byte> Combined()
    {
        if (Sections.Count == 1)
        {
            return Sections[0];
        }

        var length = 0;
        foreach (var s in Sections)
        {
            length += s.Length;
        }

        var combined = new byte[length];
        var offset = 0;
        foreach (var s in Sections)
        {
            s.Span.CopyTo(combined.AsSpan(offset));
            offset += s.Length;
        }

        return combined;
    }

    public override void Encode(ByteBuffer buffer)
    {
        foreach (var section in Sections)
        {
            AmqpEncoder.WriteDescriptor(buffer, Descriptors.Data);
            AmqpEncoder.WriteBinary(buffer, section.Span);
        }
    }
}

public sealed class ValueBody(object? value) : MessageBody
{
    public object? Value { get; } = value;

    public override void Encode(ByteBuffer buffer)
    {
        AmqpEncoder.WriteDescriptor(buffer, Descriptors.AmqpValue);
        AmqpEncoder.WriteObject(buffer, Value);
    }
}

public sealed class SequenceBody(IReadOnlyList<IList<object?>> sections) : MessageBody
{
    public IReadOnlyList<IList<object?>> Sections { get; } = sections;

    public override void Encode(ByteBuffer buffer)
    {
        foreach (var section in Sections)
        {
            AmqpEncoder.WriteDescriptor(buffer, Descriptors.AmqpSequence);
            AmqpEncoder.WriteList(buffer, (System.Collections.IList)section);
        }
    }
}
