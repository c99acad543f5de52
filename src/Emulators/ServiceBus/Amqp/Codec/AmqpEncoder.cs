using System.Buffers.Binary;
using System.Collections;
using System.Text;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

/// <summary>Writes values in the AMQP 1.0 type system, choosing the most compact encoding.</summary>
/// <remarks>
/// .NET to AMQP mapping: typed arrays (<c>long[]</c>, <c>Guid[]</c>, <c>DateTime[]</c>, <c>AmqpSymbol[]</c>, ...)
/// are AMQP arrays; <c>byte[]</c>, <see cref="ReadOnlyMemory{T}"/> and <see cref="ArraySegment{T}"/> of byte are
/// binary; any other <see cref="IList"/> is an AMQP list; any <see cref="IDictionary"/> is a map;
/// <see cref="DateTime"/> is a timestamp (milliseconds since the Unix epoch, UTC).
/// </remarks>
public static class AmqpEncoder
{
    private const int MaxDepth = 64;
    private static readonly long UnixEpochTicks = DateTime.UnixEpoch.Ticks;

    public static void WriteNull(ByteBuffer buffer) => buffer.WriteByte(FormatCode.Null);

    public static void WriteBoolean(ByteBuffer buffer, bool value) => buffer.WriteByte(value ? FormatCode.BooleanTrue : FormatCode.BooleanFalse);

    public static void WriteUByte(ByteBuffer buffer, byte value)
    {
        var span = buffer.GetSpan(2);
        span[0] = FormatCode.UByte;
        span[1] = value;
        buffer.Advance(2);
    }

    public static void WriteUShort(ByteBuffer buffer, ushort value)
    {
        var span = buffer.GetSpan(3);
        span[0] = FormatCode.UShort;
        BinaryPrimitives.WriteUInt16BigEndian(span[1..], value);
        buffer.Advance(3);
    }

    public static void WriteUInt(ByteBuffer buffer, uint value)
    {
        var span = buffer.GetSpan(5);
        if (value == 0)
        {
            span[0] = FormatCode.UInt0;
            buffer.Advance(1);
        }
        else if (value < 256)
        {
            span[0] = FormatCode.SmallUInt;
            span[1] = (byte)value;
            buffer.Advance(2);
        }
        else
        {
            span[0] = FormatCode.UInt;
            BinaryPrimitives.WriteUInt32BigEndian(span[1..], value);
            buffer.Advance(5);
        }
    }

    public static void WriteULong(ByteBuffer buffer, ulong value)
    {
        var span = buffer.GetSpan(9);
        if (value == 0)
        {
            span[0] = FormatCode.ULong0;
            buffer.Advance(1);
        }
        else if (value < 256)
        {
            span[0] = FormatCode.SmallULong;
            span[1] = (byte)value;
            buffer.Advance(2);
        }
        else
        {
            span[0] = FormatCode.ULong;
            BinaryPrimitives.WriteUInt64BigEndian(span[1..], value);
            buffer.Advance(9);
        }
    }

    public static void WriteByte(ByteBuffer buffer, sbyte value)
    {
        var span = buffer.GetSpan(2);
        span[0] = FormatCode.Byte;
        span[1] = (byte)value;
        buffer.Advance(2);
    }

    public static void WriteShort(ByteBuffer buffer, short value)
    {
        var span = buffer.GetSpan(3);
        span[0] = FormatCode.Short;
        BinaryPrimitives.WriteInt16BigEndian(span[1..], value);
        buffer.Advance(3);
    }

    public static void WriteInt(ByteBuffer buffer, int value)
    {
        var span = buffer.GetSpan(5);
        if (value is >= sbyte.MinValue and <= sbyte.MaxValue)
        {
            span[0] = FormatCode.SmallInt;
            span[1] = (byte)(sbyte)value;
            buffer.Advance(2);
        }
        else
        {
            span[0] = FormatCode.Int;
            BinaryPrimitives.WriteInt32BigEndian(span[1..], value);
            buffer.Advance(5);
        }
    }

    public static void WriteLong(ByteBuffer buffer, long value)
    {
        var span = buffer.GetSpan(9);
        if (value is >= sbyte.MinValue and <= sbyte.MaxValue)
        {
            span[0] = FormatCode.SmallLong;
            span[1] = (byte)(sbyte)value;
            buffer.Advance(2);
        }
        else
        {
            span[0] = FormatCode.Long;
            BinaryPrimitives.WriteInt64BigEndian(span[1..], value);
            buffer.Advance(9);
        }
    }

    public static void WriteFloat(ByteBuffer buffer, float value)
    {
        var span = buffer.GetSpan(5);
        span[0] = FormatCode.Float;
        BinaryPrimitives.WriteSingleBigEndian(span[1..], value);
        buffer.Advance(5);
    }

    public static void WriteDouble(ByteBuffer buffer, double value)
    {
        var span = buffer.GetSpan(9);
        span[0] = FormatCode.Double;
        BinaryPrimitives.WriteDoubleBigEndian(span[1..], value);
        buffer.Advance(9);
    }

    public static void WriteDecimal(ByteBuffer buffer, decimal value)
    {
        var span = buffer.GetSpan(17);
        span[0] = FormatCode.Decimal128;
        AmqpDecimal.EncodeDecimal128(value, span[1..]);
        buffer.Advance(17);
    }

    public static void WriteChar(ByteBuffer buffer, Rune value)
    {
        var span = buffer.GetSpan(5);
        span[0] = FormatCode.Char;
        BinaryPrimitives.WriteInt32BigEndian(span[1..], value.Value);
        buffer.Advance(5);
    }

    public static void WriteTimestamp(ByteBuffer buffer, DateTime value)
    {
        var span = buffer.GetSpan(9);
        span[0] = FormatCode.Timestamp;
        BinaryPrimitives.WriteInt64BigEndian(span[1..], ToUnixMilliseconds(value));
        buffer.Advance(9);
    }

    public static void WriteUuid(ByteBuffer buffer, Guid value)
    {
        var span = buffer.GetSpan(17);
        span[0] = FormatCode.Uuid;
        value.TryWriteBytes(span.Slice(1, 16), bigEndian: true, out _);
        buffer.Advance(17);
    }

    public static void WriteBinary(ByteBuffer buffer, ReadOnlySpan<byte> value)
    {
        if (value.Length < 256)
        {
            var span = buffer.GetSpan(2 + value.Length);
            span[0] = FormatCode.Binary8;
            span[1] = (byte)value.Length;
            value.CopyTo(span[2..]);
            buffer.Advance(2 + value.Length);
        }
        else
        {
            var span = buffer.GetSpan(5 + value.Length);
            span[0] = FormatCode.Binary32;
            BinaryPrimitives.WriteInt32BigEndian(span[1..], value.Length);
            value.CopyTo(span[5..]);
            buffer.Advance(5 + value.Length);
        }
    }

    public static void WriteString(ByteBuffer buffer, string value) => WriteText(buffer, value, FormatCode.String8, FormatCode.String32, ascii: false);

    public static void WriteSymbol(ByteBuffer buffer, AmqpSymbol value) => WriteText(buffer, value.Value ?? string.Empty, FormatCode.Symbol8, FormatCode.Symbol32, ascii: true);

    /// <summary>Writes the constructor of a described type whose descriptor is a numeric code.</summary>
    public static void WriteDescriptor(ByteBuffer buffer, ulong code)
    {
        buffer.WriteByte(FormatCode.Described);
        WriteULong(buffer, code);
    }

    /// <summary>Starts a described list (a composite type); fields are appended with the returned writer.</summary>
    public static CompositeWriter BeginComposite(ByteBuffer buffer, ulong descriptor)
    {
        WriteDescriptor(buffer, descriptor);
        return CompositeWriter.Begin(buffer);
    }

    public static void WriteList(ByteBuffer buffer, IList list) => WriteList(buffer, list, 0);

    public static void WriteMap(ByteBuffer buffer, IDictionary map) => WriteMap(buffer, map, 0);

    public static void WriteArray(ByteBuffer buffer, Array array) => WriteArray(buffer, array, 0);

    public static void WriteObject(ByteBuffer buffer, object? value) => WriteObject(buffer, value, 0);

    internal static long ToUnixMilliseconds(DateTime value)
    {
        var utc = value.Kind == DateTimeKind.Local ? value.ToUniversalTime() : value;
        return (utc.Ticks - UnixEpochTicks) / TimeSpan.TicksPerMillisecond;
    }

    private static void WriteText(ByteBuffer buffer, string value, byte code8, byte code32, bool ascii)
    {
        var encoding = ascii ? Encoding.ASCII : Encoding.UTF8;
        var max = encoding.GetMaxByteCount(value.Length);
        var span = buffer.GetSpan(5 + max);
        if (max < 256)
        {
            var written = encoding.GetBytes(value, span[2..]);
            span[0] = code8;
            span[1] = (byte)written;
            buffer.Advance(2 + written);
            return;
        }

        var length = encoding.GetBytes(value, span[5..]);
        if (length < 256)
        {
            span.Slice(5, length).CopyTo(span[2..]);
            span[0] = code8;
            span[1] = (byte)length;
            buffer.Advance(2 + length);
        }
        else
        {
            span[0] = code32;
            BinaryPrimitives.WriteInt32BigEndian(span[1..], length);
            buffer.Advance(5 + length);
        }
    }

    private static void WriteObject(ByteBuffer buffer, object? value, int depth)
    {
        switch (value)
        {
            case null: WriteNull(buffer); break;
            case string s: WriteString(buffer, s); break;
            case AmqpSymbol sym: WriteSymbol(buffer, sym); break;
            case bool b: WriteBoolean(buffer, b); break;
            case int i: WriteInt(buffer, i); break;
            case long l: WriteLong(buffer, l); break;
            case uint ui: WriteUInt(buffer, ui); break;
            case ulong ul: WriteULong(buffer, ul); break;
            case byte ub: WriteUByte(buffer, ub); break;
            case ushort us: WriteUShort(buffer, us); break;
            case sbyte sb: WriteByte(buffer, sb); break;
            case short sh: WriteShort(buffer, sh); break;
            case float f: WriteFloat(buffer, f); break;
            case double d: WriteDouble(buffer, d); break;
            case decimal m: WriteDecimal(buffer, m); break;
            case AmqpUnmappedDecimal unmapped:
                buffer.WriteByte(unmapped.FormatCode);
                buffer.Write(unmapped.Encoding);
                break;
            case char c: WriteChar(buffer, new Rune(c)); break;
            case Rune r: WriteChar(buffer, r); break;
            case DateTime t: WriteTimestamp(buffer, t); break;
            case DateTimeOffset o: WriteTimestamp(buffer, o.UtcDateTime); break;
            case Guid g: WriteUuid(buffer, g); break;
            case TimeSpan ts: WriteLong(buffer, ts.Ticks); break;
            case Uri uri: WriteString(buffer, uri.ToString()); break;
            case byte[] bytes when bytes.GetType() == typeof(byte[]): WriteBinary(buffer, bytes); break;
            case ReadOnlyMemory<byte> rom: WriteBinary(buffer, rom.Span); break;
            case Memory<byte> mem: WriteBinary(buffer, mem.Span); break;
            case ArraySegment<byte> seg: WriteBinary(buffer, seg); break;
            case IAmqpEncodable encodable: encodable.Encode(buffer); break;
            case DescribedValue described:
                Enter(ref depth);
                buffer.WriteByte(FormatCode.Described);
                WriteObject(buffer, described.Descriptor, depth);
                WriteObject(buffer, described.Value, depth);
                break;
            case Array array: WriteArray(buffer, array, depth + 1); break;
            case IDictionary map: WriteMap(buffer, map, depth + 1); break;
            case IList list: WriteList(buffer, list, depth + 1); break;
            default: throw new NotSupportedException($"Type '{value.GetType()}' has no AMQP encoding.");
        }
    }

    // Each list, map, array and described value counts one level, as AmqpReader counts them, so that whatever the
    // reader accepts can be written again (a broker passes decoded values on).
    private static void Enter(ref int depth)
    {
        if (++depth > MaxDepth)
        {
            throw new InvalidOperationException("AMQP value nests too deeply.");
        }
    }

    private static void CheckDepth(int depth)
    {
        if (depth > MaxDepth)
        {
            throw new InvalidOperationException("AMQP value nests too deeply.");
        }
    }

    private static void WriteList(ByteBuffer buffer, IList list, int depth)
    {
        CheckDepth(depth);
        if (list.Count == 0)
        {
            buffer.WriteByte(FormatCode.List0);
            return;
        }

        buffer.WriteByte(FormatCode.List32);
        var sizeOffset = buffer.Reserve(8);
        foreach (var item in list)
        {
            WriteObject(buffer, item, depth);
        }

        PatchSizeAndCount(buffer, sizeOffset, list.Count);
    }

    private static void WriteMap(ByteBuffer buffer, IDictionary map, int depth)
    {
        CheckDepth(depth);
        buffer.WriteByte(FormatCode.Map32);
        var sizeOffset = buffer.Reserve(8);
        foreach (DictionaryEntry entry in map)
        {
            WriteObject(buffer, entry.Key, depth);
            WriteObject(buffer, entry.Value, depth);
        }

        PatchSizeAndCount(buffer, sizeOffset, map.Count * 2);
    }

    internal static void PatchSizeAndCount(ByteBuffer buffer, int sizeOffset, int count)
    {
        var span = buffer.WrittenRange(sizeOffset, 8);
        BinaryPrimitives.WriteInt32BigEndian(span, buffer.Length - sizeOffset - 4);
        BinaryPrimitives.WriteInt32BigEndian(span[4..], count);
    }

    private static void WriteArray(ByteBuffer buffer, Array array, int depth)
    {
        CheckDepth(depth);
        buffer.WriteByte(FormatCode.Array32);
        var sizeOffset = buffer.Reserve(8);
        var elementType = array.GetType().GetElementType()!;
        WriteArrayBody(buffer, array, elementType, depth);
        PatchSizeAndCount(buffer, sizeOffset, array.Length);
    }

    // Element types are matched exactly: the runtime lets long[] pass as ulong[] (and sbyte[] as byte[]).
    private static void WriteArrayBody(ByteBuffer buffer, Array array, Type elementType, int depth)
    {
        if (elementType == typeof(bool))
        {
            buffer.WriteByte(FormatCode.Boolean);
            foreach (var v in (bool[])array) buffer.WriteByte(v ? (byte)1 : (byte)0);
        }
        else if (elementType == typeof(byte))
        {
            // Only inside an array of arrays: a byte[] on its own is binary.
            buffer.WriteByte(FormatCode.UByte);
            buffer.Write((byte[])array);
        }
        else if (elementType == typeof(ushort))
        {
            buffer.WriteByte(FormatCode.UShort);
            foreach (var v in (ushort[])array) BinaryPrimitives.WriteUInt16BigEndian(Fixed(buffer, 2), v);
        }
        else if (elementType == typeof(uint))
        {
            buffer.WriteByte(FormatCode.UInt);
            foreach (var v in (uint[])array) BinaryPrimitives.WriteUInt32BigEndian(Fixed(buffer, 4), v);
        }
        else if (elementType == typeof(ulong))
        {
            buffer.WriteByte(FormatCode.ULong);
            foreach (var v in (ulong[])array) BinaryPrimitives.WriteUInt64BigEndian(Fixed(buffer, 8), v);
        }
        else if (elementType == typeof(sbyte))
        {
            buffer.WriteByte(FormatCode.Byte);
            foreach (var v in (sbyte[])array) buffer.WriteByte((byte)v);
        }
        else if (elementType == typeof(short))
        {
            buffer.WriteByte(FormatCode.Short);
            foreach (var v in (short[])array) BinaryPrimitives.WriteInt16BigEndian(Fixed(buffer, 2), v);
        }
        else if (elementType == typeof(int))
        {
            buffer.WriteByte(FormatCode.Int);
            foreach (var v in (int[])array) BinaryPrimitives.WriteInt32BigEndian(Fixed(buffer, 4), v);
        }
        else if (elementType == typeof(long))
        {
            buffer.WriteByte(FormatCode.Long);
            foreach (var v in (long[])array) BinaryPrimitives.WriteInt64BigEndian(Fixed(buffer, 8), v);
        }
        else if (elementType == typeof(float))
        {
            buffer.WriteByte(FormatCode.Float);
            foreach (var v in (float[])array) BinaryPrimitives.WriteSingleBigEndian(Fixed(buffer, 4), v);
        }
        else if (elementType == typeof(double))
        {
            buffer.WriteByte(FormatCode.Double);
            foreach (var v in (double[])array) BinaryPrimitives.WriteDoubleBigEndian(Fixed(buffer, 8), v);
        }
        else if (elementType == typeof(decimal))
        {
            buffer.WriteByte(FormatCode.Decimal128);
            foreach (var v in (decimal[])array) AmqpDecimal.EncodeDecimal128(v, Fixed(buffer, 16));
        }
        else if (elementType == typeof(Rune))
        {
            buffer.WriteByte(FormatCode.Char);
            foreach (var v in (Rune[])array) BinaryPrimitives.WriteInt32BigEndian(Fixed(buffer, 4), v.Value);
        }
        else if (elementType == typeof(DateTime))
        {
            buffer.WriteByte(FormatCode.Timestamp);
            foreach (var v in (DateTime[])array) BinaryPrimitives.WriteInt64BigEndian(Fixed(buffer, 8), ToUnixMilliseconds(v));
        }
        else if (elementType == typeof(Guid))
        {
            buffer.WriteByte(FormatCode.Uuid);
            foreach (var v in (Guid[])array) v.TryWriteBytes(Fixed(buffer, 16), bigEndian: true, out _);
        }
        else if (elementType == typeof(string))
        {
            buffer.WriteByte(FormatCode.String32);
            foreach (var v in (string[])array) WriteArrayText(buffer, Encoding.UTF8.GetBytes(v));
        }
        else if (elementType == typeof(AmqpSymbol))
        {
            buffer.WriteByte(FormatCode.Symbol32);
            foreach (var v in (AmqpSymbol[])array) WriteArrayText(buffer, Encoding.ASCII.GetBytes(v.Value));
        }
        else if (elementType == typeof(byte[]))
        {
            buffer.WriteByte(FormatCode.Binary32);
            foreach (var v in (byte[][])array) WriteArrayText(buffer, v);
        }
        else if (elementType == typeof(DescribedValue))
        {
            var described = (DescribedValue[])array;
            if (described.Length == 0)
            {
                // Nothing says what the descriptor was: an empty array of nulls holds the same (nothing).
                buffer.WriteByte(FormatCode.Null);
                return;
            }

            buffer.WriteByte(FormatCode.Described);
            WriteObject(buffer, described[0].Descriptor, depth);
            var valueType = described[0].Value?.GetType() ?? typeof(object);
            var values = Array.CreateInstance(valueType, described.Length);
            for (var i = 0; i < described.Length; i++)
            {
                values.SetValue(described[i].Value, i);
            }

            WriteArrayBody(buffer, values, valueType, depth);
        }
        else if (typeof(IDictionary).IsAssignableFrom(elementType) || (typeof(IList).IsAssignableFrom(elementType) && !elementType.IsArray))
        {
            WriteArrayElements(buffer, array, depth);
        }
        else if (elementType.IsArray || elementType == typeof(object))
        {
            WriteUntypedArrayElements(buffer, array, depth);
        }
        else
        {
            throw new NotSupportedException($"Arrays of '{elementType}' have no AMQP encoding; use a List<object?> for a list.");
        }
    }

    /// <summary>
    /// The arrays a decoder gives for an array of nulls (every element null) and for an array of arrays (every
    /// element an array): the first shares the null constructor and has no element data, the second the array32
    /// constructor, each element carrying its size, count, element constructor and elements.
    /// </summary>
    private static void WriteUntypedArrayElements(ByteBuffer buffer, Array values, int depth)
    {
        var allNull = true;
        foreach (var value in values)
        {
            allNull &= value is null;
        }

        if (allNull)
        {
            buffer.WriteByte(FormatCode.Null);
            return;
        }

        buffer.WriteByte(FormatCode.Array32);
        foreach (var value in values)
        {
            if (value is not Array inner)
            {
                throw new NotSupportedException("Array elements must all be null or all be arrays.");
            }

            var start = buffer.Length;
            WriteArray(buffer, inner, depth + 1);
            var tail = buffer.WrittenSpan[(start + 1)..].ToArray();
            buffer.Truncate(start);
            buffer.Write(tail);
        }
    }

    // Lists and maps inside an array share one 32-bit constructor; each element carries size and count.
    private static void WriteArrayElements(ByteBuffer buffer, Array values, int depth)
    {
        var first = values.Length > 0 ? values.GetValue(0) : null;
        var isMap = first is IDictionary;
        buffer.WriteByte(isMap ? FormatCode.Map32 : FormatCode.List32);
        foreach (var value in values)
        {
            var start = buffer.Length;
            WriteObject(buffer, value, depth);
            var code = buffer.WrittenSpan[start];
            if (code == FormatCode.List0)
            {
                buffer.Truncate(start);
                var offset = buffer.Reserve(8);
                PatchSizeAndCount(buffer, offset, 0);
                continue;
            }

            if (code != (isMap ? FormatCode.Map32 : FormatCode.List32))
            {
                throw new NotSupportedException("Array elements must all be lists or all be maps.");
            }

            // Drop the per-element constructor byte: array elements share the array's constructor.
            var tail = buffer.WrittenSpan[(start + 1)..].ToArray();
            buffer.Truncate(start);
            buffer.Write(tail);
        }
    }

    private static Span<byte> Fixed(ByteBuffer buffer, int width)
    {
        var offset = buffer.Reserve(width);
        return buffer.WrittenRange(offset, width);
    }

    private static void WriteArrayText(ByteBuffer buffer, ReadOnlySpan<byte> bytes)
    {
        BinaryPrimitives.WriteInt32BigEndian(Fixed(buffer, 4), bytes.Length);
        buffer.Write(bytes);
    }
}

/// <summary>A value that writes its own AMQP encoding (performatives, sections, delivery states).</summary>
public interface IAmqpEncodable
{
    void Encode(ByteBuffer buffer);
}

/// <summary>Appends the fields of a composite (described list) and omits trailing nulls, as the specification allows.</summary>
public ref struct CompositeWriter
{
    private ByteBuffer _buffer;
    private int _sizeOffset;
    private int _count;
    private int _keptLength;
    private int _keptCount;

    internal static CompositeWriter Begin(ByteBuffer buffer)
    {
        buffer.WriteByte(FormatCode.List32);
        var offset = buffer.Reserve(8);
        return new CompositeWriter { _buffer = buffer, _sizeOffset = offset, _keptLength = buffer.Length };
    }

    public void Null()
    {
        _buffer.WriteByte(FormatCode.Null);
        _count++;
    }

    public void UInt(uint? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteUInt(_buffer, value.Value);
        Keep();
    }

    public void ULong(ulong? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteULong(_buffer, value.Value);
        Keep();
    }

    public void UShort(ushort? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteUShort(_buffer, value.Value);
        Keep();
    }

    public void UByte(byte? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteUByte(_buffer, value.Value);
        Keep();
    }

    public void Boolean(bool? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteBoolean(_buffer, value.Value);
        Keep();
    }

    public void Timestamp(DateTime? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteTimestamp(_buffer, value.Value);
        Keep();
    }

    public void String(string? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteString(_buffer, value);
        Keep();
    }

    public void Symbol(AmqpSymbol? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteSymbol(_buffer, value.Value);
        Keep();
    }

    public void Binary(ReadOnlyMemory<byte>? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteBinary(_buffer, value.Value.Span);
        Keep();
    }

    /// <summary>A multiple-symbol field: one symbol is written as itself, several as an array.</summary>
    public void Symbols(AmqpSymbol[]? value)
    {
        if (value is null || value.Length == 0) { Null(); return; }
        if (value.Length == 1)
        {
            AmqpEncoder.WriteSymbol(_buffer, value[0]);
        }
        else
        {
            AmqpEncoder.WriteArray(_buffer, value);
        }

        Keep();
    }

    public void Value(object? value)
    {
        if (value is null) { Null(); return; }
        AmqpEncoder.WriteObject(_buffer, value);
        Keep();
    }

    public readonly void End()
    {
        _buffer.Truncate(_keptLength);
        AmqpEncoder.PatchSizeAndCount(_buffer, _sizeOffset, _keptCount);
    }

    private void Keep()
    {
        _count++;
        _keptCount = _count;
        _keptLength = _buffer.Length;
    }
}
