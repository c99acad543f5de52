namespace DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

/// <summary>An AMQP symbol: an ASCII name from a constrained domain, distinct from a string on the wire.</summary>
public readonly record struct AmqpSymbol(string Value)
{
    public static implicit operator AmqpSymbol(string value) => new(value);

    public override string ToString() => Value;
}

/// <summary>A described value whose descriptor this codec does not map to a known type.</summary>
public sealed record DescribedValue(object Descriptor, object? Value);

/// <summary>
/// A decimal32, decimal64 or decimal128 that <see cref="decimal"/> cannot hold (a NaN, an infinity, or an exponent or
/// precision beyond its range), kept as its encoding so that it passes through a decode and an encode unchanged.
/// Microsoft.Azure.Amqp, for one, writes a System.Decimal's decimal128 exponent in a layout other decoders read as
/// such a value.
/// </summary>
public sealed class AmqpUnmappedDecimal(byte formatCode, byte[] encoding)
{
    /// <summary>0x74 (decimal32), 0x84 (decimal64) or 0x94 (decimal128).</summary>
    public byte FormatCode { get; } = formatCode;

    /// <summary>The 4, 8 or 16 bytes after the format code, as received.</summary>
    public byte[] Encoding { get; } = encoding;

    public override bool Equals(object? obj) => obj is AmqpUnmappedDecimal other && other.FormatCode == FormatCode && other.Encoding.AsSpan().SequenceEqual(Encoding);

    public override int GetHashCode() => HashCode.Combine(FormatCode, Encoding.Length > 0 ? Encoding[^1] : 0);

    public override string ToString() => $"decimal(0x{FormatCode:x2}: {Convert.ToHexString(Encoding)})";
}

/// <summary>Format codes of the AMQP 1.0 type system (section 1.6).</summary>
internal static class FormatCode
{
    public const byte Described = 0x00;
    public const byte Null = 0x40;
    public const byte BooleanTrue = 0x41;
    public const byte BooleanFalse = 0x42;
    public const byte Boolean = 0x56;
    public const byte UByte = 0x50;
    public const byte UShort = 0x60;
    public const byte UInt = 0x70;
    public const byte SmallUInt = 0x52;
    public const byte UInt0 = 0x43;
    public const byte ULong = 0x80;
    public const byte SmallULong = 0x53;
    public const byte ULong0 = 0x44;
    public const byte Byte = 0x51;
    public const byte Short = 0x61;
    public const byte Int = 0x71;
    public const byte SmallInt = 0x54;
    public const byte Long = 0x81;
    public const byte SmallLong = 0x55;
    public const byte Float = 0x72;
    public const byte Double = 0x82;
    public const byte Decimal32 = 0x74;
    public const byte Decimal64 = 0x84;
    public const byte Decimal128 = 0x94;
    public const byte Char = 0x73;
    public const byte Timestamp = 0x83;
    public const byte Uuid = 0x98;
    public const byte Binary8 = 0xa0;
    public const byte Binary32 = 0xb0;
    public const byte String8 = 0xa1;
    public const byte String32 = 0xb1;
    public const byte Symbol8 = 0xa3;
    public const byte Symbol32 = 0xb3;
    public const byte List0 = 0x45;
    public const byte List8 = 0xc0;
    public const byte List32 = 0xd0;
    public const byte Map8 = 0xc1;
    public const byte Map32 = 0xd1;
    public const byte Array8 = 0xe0;
    public const byte Array32 = 0xf0;
}

/// <summary>Input that is not valid AMQP 1.0 encoding.</summary>
public sealed class AmqpDecodeException(string message) : Exception(message);
