using System.Buffers.Binary;
using System.Text;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

/// <summary>
/// Reads AMQP 1.0 encoded values from a span. Every read is bounds-checked and throws
/// <see cref="AmqpDecodeException"/> on malformed input; nesting depth and element counts are capped so
/// hostile input cannot exhaust the stack or memory.
/// </summary>
public ref struct AmqpReader
{
    private const int MaxDepth = 64;

    // Initial capacity of a list or map: what a declared count may reserve before its elements have arrived.
    private const int MaxPreallocated = 16;
    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    private readonly ReadOnlySpan<byte> _span;
    private int _position;
    private int _depth;

    // Array elements of zero width (null, true, uint0, list0...) take no input bytes; together they may not
    // outnumber the input's bytes, so a few bytes declaring a huge count cannot make the decoder allocate much.
    private long _zeroWidthBudget;

    public AmqpReader(ReadOnlySpan<byte> span)
    {
        _span = span;
        _position = 0;
        _depth = 0;
        _zeroWidthBudget = span.Length;
    }

    public readonly int Position => _position;

    public readonly int Remaining => _span.Length - _position;

    public readonly bool IsAtEnd => _position >= _span.Length;

    public readonly byte PeekFormatCode() => _position < _span.Length ? _span[_position] : throw Truncated();

    public byte ReadFormatCode() => ReadRaw(1)[0];

    /// <summary>Reads the descriptor of a described value, as a numeric code (symbolic descriptors are mapped).</summary>
    public ulong ReadDescriptorCode()
    {
        if (ReadFormatCode() != FormatCode.Described)
        {
            throw new AmqpDecodeException("Expected a described type.");
        }

        var code = ReadFormatCode();
        switch (code)
        {
            case FormatCode.ULong0: return 0;
            case FormatCode.SmallULong: return ReadRaw(1)[0];
            case FormatCode.ULong: return BinaryPrimitives.ReadUInt64BigEndian(ReadRaw(8));
            case FormatCode.Symbol8:
            case FormatCode.Symbol32:
                var name = ReadText(code, Encoding.ASCII);
                return Descriptors.TryGetCode(name, out var mapped) ? mapped : throw new AmqpDecodeException($"Unknown descriptor '{name}'.");
            default: throw new AmqpDecodeException($"Invalid descriptor format code 0x{code:x2}.");
        }
    }

    /// <summary>Reads a list header (list0/list8/list32); returns the field count and the end offset of the list.</summary>
    public int ReadListHeader(out int end)
    {
        var code = ReadFormatCode();
        switch (code)
        {
            case FormatCode.List0:
                end = _position;
                return 0;
            case FormatCode.List8:
            {
                var size = ReadRaw(1)[0];
                end = CheckedEnd(size);
                var count = size == 0 ? throw new AmqpDecodeException("List8 without a count.") : ReadRaw(1)[0];
                return count;
            }
            case FormatCode.List32:
            {
                var size = ReadLength();
                end = CheckedEnd(size);
                if (size < 4)
                {
                    throw new AmqpDecodeException("List32 without a count.");
                }

                var count = ReadLength();
                if (count > end - _position)
                {
                    throw new AmqpDecodeException("List count exceeds its size.");
                }

                return count;
            }
            default:
                throw new AmqpDecodeException($"Expected a list, found format code 0x{code:x2}.");
        }
    }

    /// <summary>Moves back to <paramref name="position"/>, one this reader has passed, to read a value again.</summary>
    internal void Rewind(int position)
    {
        if (position < 0 || position > _position)
        {
            throw new ArgumentOutOfRangeException(nameof(position));
        }

        _position = position;
    }

    /// <summary>Moves to <paramref name="end"/> (ignoring fields a newer peer may have added).</summary>
    public void SeekTo(int end)
    {
        if (end < _position || end > _span.Length)
        {
            throw new AmqpDecodeException("Composite fields overrun their list.");
        }

        _position = end;
    }

    public bool TryReadNull()
    {
        if (PeekFormatCode() == FormatCode.Null)
        {
            _position++;
            return true;
        }

        return false;
    }

    public uint? ReadUInt()
    {
        var code = ReadFormatCode();
        return code switch
        {
            FormatCode.Null => null,
            FormatCode.UInt0 => 0u,
            FormatCode.SmallUInt => ReadRaw(1)[0],
            FormatCode.UInt => BinaryPrimitives.ReadUInt32BigEndian(ReadRaw(4)),
            _ => throw new AmqpDecodeException($"Expected a uint, found format code 0x{code:x2}."),
        };
    }

    public ulong? ReadULong()
    {
        var code = ReadFormatCode();
        return code switch
        {
            FormatCode.Null => null,
            FormatCode.ULong0 => 0ul,
            FormatCode.SmallULong => ReadRaw(1)[0],
            FormatCode.ULong => BinaryPrimitives.ReadUInt64BigEndian(ReadRaw(8)),
            _ => throw new AmqpDecodeException($"Expected a ulong, found format code 0x{code:x2}."),
        };
    }

    public ushort? ReadUShort()
    {
        var code = ReadFormatCode();
        return code switch
        {
            FormatCode.Null => null,
            FormatCode.UShort => BinaryPrimitives.ReadUInt16BigEndian(ReadRaw(2)),
            _ => throw new AmqpDecodeException($"Expected a ushort, found format code 0x{code:x2}."),
        };
    }

    public byte? ReadUByte()
    {
        var code = ReadFormatCode();
        return code switch
        {
            FormatCode.Null => null,
            FormatCode.UByte => ReadRaw(1)[0],
            _ => throw new AmqpDecodeException($"Expected a ubyte, found format code 0x{code:x2}."),
        };
    }

    public bool? ReadBoolean()
    {
        var code = ReadFormatCode();
        return code switch
        {
            FormatCode.Null => null,
            FormatCode.BooleanTrue => true,
            FormatCode.BooleanFalse => false,
            FormatCode.Boolean => ReadRaw(1)[0] switch
            {
                0 => false,
                1 => true,
                _ => throw new AmqpDecodeException("Invalid boolean value."),
            },
            _ => throw new AmqpDecodeException($"Expected a boolean, found format code 0x{code:x2}."),
        };
    }

    public DateTime? ReadTimestamp() => TryReadNull() ? null : ReadValue(ReadFormatCode()) switch
    {
        DateTime v => v,
        _ => throw new AmqpDecodeException("Expected a timestamp."),
    };

    public string? ReadString() => TryReadNull() ? null : ReadValue(ReadFormatCode()) switch
    {
        string v => v,
        _ => throw new AmqpDecodeException("Expected a string."),
    };

    public AmqpSymbol? ReadSymbol()
    {
        if (TryReadNull())
        {
            return null;
        }

        return ReadValue(ReadFormatCode()) is AmqpSymbol symbol ? symbol : throw new AmqpDecodeException("Expected a symbol.");
    }

    public byte[]? ReadBinary() => TryReadNull() ? null : ReadValue(ReadFormatCode()) switch
    {
        byte[] v => v,
        _ => throw new AmqpDecodeException("Expected binary."),
    };

    /// <summary>A binary value as a slice of the input, without copying.</summary>
    public ReadOnlySpan<byte> ReadBinarySpan()
    {
        var code = ReadFormatCode();
        return code switch
        {
            FormatCode.Binary8 => ReadRaw(ReadRaw(1)[0]),
            FormatCode.Binary32 => ReadRaw(ReadLength()),
            _ => throw new AmqpDecodeException($"Expected binary, found format code 0x{code:x2}."),
        };
    }

    /// <summary>A multiple-symbol field: a single symbol or an array of symbols.</summary>
    public AmqpSymbol[]? ReadSymbols() => TryReadNull() ? null : ReadValue(ReadFormatCode()) switch
    {
        AmqpSymbol v => [v],
        AmqpSymbol[] a => a,
        _ => throw new AmqpDecodeException("Expected a symbol or an array of symbols."),
    };

    public Dictionary<object, object?>? ReadMap() => TryReadNull() ? null : ReadValue(ReadFormatCode()) switch
    {
        Dictionary<object, object?> v => v,
        _ => throw new AmqpDecodeException("Expected a map."),
    };

    public object? ReadObject() => ReadValue(ReadFormatCode());

    /// <summary>Skips one encoded value without materialising it.</summary>
    public void SkipValue()
    {
        var code = ReadFormatCode();
        if (code == FormatCode.Described)
        {
            Enter();
            SkipValue();
            SkipValue();
            _depth--;
            return;
        }

        SkipBody(code);
    }

    private void SkipBody(byte code)
    {
        var width = FixedWidth(code);
        if (width >= 0)
        {
            ReadRaw(width);
            return;
        }

        var size = (code & 0xf0) switch
        {
            0xa0 or 0xc0 or 0xe0 => ReadRaw(1)[0],
            0xb0 or 0xd0 or 0xf0 => ReadLength(),
            _ => throw new AmqpDecodeException($"Invalid format code 0x{code:x2}."),
        };
        ReadRaw(size);
    }

    private object? ReadValue(byte code)
    {
        switch (code)
        {
            case FormatCode.Null: return null;
            case FormatCode.BooleanTrue: return true;
            case FormatCode.BooleanFalse: return false;
            case FormatCode.Boolean:
                return ReadRaw(1)[0] switch
                {
                    0 => false,
                    1 => true,
                    _ => throw new AmqpDecodeException("Invalid boolean value."),
                };
            case FormatCode.UByte: return ReadRaw(1)[0];
            case FormatCode.UShort: return BinaryPrimitives.ReadUInt16BigEndian(ReadRaw(2));
            case FormatCode.UInt0: return 0u;
            case FormatCode.SmallUInt: return (uint)ReadRaw(1)[0];
            case FormatCode.UInt: return BinaryPrimitives.ReadUInt32BigEndian(ReadRaw(4));
            case FormatCode.ULong0: return 0ul;
            case FormatCode.SmallULong: return (ulong)ReadRaw(1)[0];
            case FormatCode.ULong: return BinaryPrimitives.ReadUInt64BigEndian(ReadRaw(8));
            case FormatCode.Byte: return (sbyte)ReadRaw(1)[0];
            case FormatCode.Short: return BinaryPrimitives.ReadInt16BigEndian(ReadRaw(2));
            case FormatCode.SmallInt: return (int)(sbyte)ReadRaw(1)[0];
            case FormatCode.Int: return BinaryPrimitives.ReadInt32BigEndian(ReadRaw(4));
            case FormatCode.SmallLong: return (long)(sbyte)ReadRaw(1)[0];
            case FormatCode.Long: return BinaryPrimitives.ReadInt64BigEndian(ReadRaw(8));
            case FormatCode.Float: return BinaryPrimitives.ReadSingleBigEndian(ReadRaw(4));
            case FormatCode.Double: return BinaryPrimitives.ReadDoubleBigEndian(ReadRaw(8));
            case FormatCode.Decimal32: return ReadDecimal(code, ReadRaw(4));
            case FormatCode.Decimal64: return ReadDecimal(code, ReadRaw(8));
            case FormatCode.Decimal128: return ReadDecimal(code, ReadRaw(16));
            case FormatCode.Char: return ReadRune(ReadRaw(4));
            case FormatCode.Timestamp: return FromUnixMilliseconds(BinaryPrimitives.ReadInt64BigEndian(ReadRaw(8)));
            case FormatCode.Uuid: return new Guid(ReadRaw(16), bigEndian: true);
            case FormatCode.Binary8: return ReadRaw(ReadRaw(1)[0]).ToArray();
            case FormatCode.Binary32: return ReadRaw(ReadLength()).ToArray();
            case FormatCode.String8:
            case FormatCode.String32: return ReadText(code, StrictUtf8);
            case FormatCode.Symbol8:
            case FormatCode.Symbol32: return new AmqpSymbol(ReadText(code, Encoding.ASCII));
            case FormatCode.List0: return new List<object?>();
            case FormatCode.List8:
            case FormatCode.List32: return ReadListBody(code);
            case FormatCode.Map8:
            case FormatCode.Map32: return ReadMapBody(code);
            case FormatCode.Array8:
            case FormatCode.Array32: return ReadArrayBody(code);
            case FormatCode.Described:
            {
                Enter();
                var descriptor = ReadObject();
                var value = ReadObject();
                _depth--;
                return new DescribedValue(descriptor ?? throw new AmqpDecodeException("Null descriptor."), value);
            }

            default: throw new AmqpDecodeException($"Invalid format code 0x{code:x2}.");
        }
    }

    private List<object?> ReadListBody(byte code)
    {
        var (count, end) = ReadCompoundHeader(code == FormatCode.List8);
        Enter();
        var list = new List<object?>(Math.Min(count, MaxPreallocated));
        for (var i = 0; i < count; i++)
        {
            list.Add(ReadObject());
        }

        _depth--;
        ExpectEnd(end);
        return list;
    }

    private Dictionary<object, object?> ReadMapBody(byte code)
    {
        var (count, end) = ReadCompoundHeader(code == FormatCode.Map8);
        if (count % 2 != 0)
        {
            throw new AmqpDecodeException("A map needs an even number of elements.");
        }

        Enter();
        var map = new Dictionary<object, object?>(Math.Min(count / 2, MaxPreallocated));
        for (var i = 0; i < count; i += 2)
        {
            var key = ReadObject() ?? throw new AmqpDecodeException("Null map keys are not supported.");
            map[key] = ReadObject();
        }

        _depth--;
        ExpectEnd(end);
        return map;
    }

    private object ReadArrayBody(byte code)
    {
        var (count, end) = ReadCompoundHeader(code == FormatCode.Array8, isArray: true);
        Enter();
        object? descriptor = null;
        var element = ReadFormatCode();
        if (element == FormatCode.Described)
        {
            descriptor = ReadObject() ?? throw new AmqpDecodeException("Null descriptor.");
            element = ReadFormatCode();
        }

        var width = FixedWidth(element);
        if (width == 0)
        {
            _zeroWidthBudget -= count;
            if (_zeroWidthBudget < 0)
            {
                throw new AmqpDecodeException($"An array declares {count} elements of zero width, more than its input could describe.");
            }
        }
        else if (width > 0 && (long)count * width > end - _position)
        {
            throw new AmqpDecodeException($"An array declares {count} elements of {width} bytes, more than its size holds.");
        }

        Array result = element switch
        {
            FormatCode.Boolean => ReadElements<bool>(count, element),
            FormatCode.BooleanTrue or FormatCode.BooleanFalse => ReadElements<bool>(count, element),
            FormatCode.UByte => ReadElements<byte>(count, element),
            FormatCode.UShort => ReadElements<ushort>(count, element),
            FormatCode.UInt or FormatCode.SmallUInt or FormatCode.UInt0 => ReadElements<uint>(count, element),
            FormatCode.ULong or FormatCode.SmallULong or FormatCode.ULong0 => ReadElements<ulong>(count, element),
            FormatCode.Byte => ReadElements<sbyte>(count, element),
            FormatCode.Short => ReadElements<short>(count, element),
            FormatCode.Int or FormatCode.SmallInt => ReadElements<int>(count, element),
            FormatCode.Long or FormatCode.SmallLong => ReadElements<long>(count, element),
            FormatCode.Float => ReadElements<float>(count, element),
            FormatCode.Double => ReadElements<double>(count, element),
            FormatCode.Decimal32 or FormatCode.Decimal64 or FormatCode.Decimal128 => ReadElements<decimal>(count, element),
            FormatCode.Char => ReadElements<Rune>(count, element),
            FormatCode.Timestamp => ReadElements<DateTime>(count, element),
            FormatCode.Uuid => ReadElements<Guid>(count, element),
            FormatCode.Binary8 or FormatCode.Binary32 => ReadElements<byte[]>(count, element),
            FormatCode.String8 or FormatCode.String32 => ReadElements<string>(count, element),
            FormatCode.Symbol8 or FormatCode.Symbol32 => ReadElements<AmqpSymbol>(count, element),
            FormatCode.List0 or FormatCode.List8 or FormatCode.List32 => ReadElements<List<object?>>(count, element),
            FormatCode.Map8 or FormatCode.Map32 => ReadElements<Dictionary<object, object?>>(count, element),
            FormatCode.Array8 or FormatCode.Array32 => ReadElements<object>(count, element),
            FormatCode.Null => new object?[count],
            _ => throw new AmqpDecodeException($"Invalid array element format code 0x{element:x2}."),
        };
        _depth--;
        ExpectEnd(end);
        if (descriptor is null)
        {
            return result;
        }

        var described = new DescribedValue[count];
        for (var i = 0; i < count; i++)
        {
            described[i] = new DescribedValue(descriptor, result.GetValue(i));
        }

        return described;
    }

    private T[] ReadElements<T>(int count, byte element)
    {
        // Fixed-width elements were checked against the array's size; variable-width ones (strings, lists, arrays)
        // are collected as they arrive, so a declared count reserves nothing.
        if (FixedWidth(element) >= 0)
        {
            var values = new T[count];
            for (var i = 0; i < count; i++)
            {
                values[i] = ReadElement<T>(element);
            }

            return values;
        }

        var collected = new List<T>(Math.Min(count, MaxPreallocated));
        for (var i = 0; i < count; i++)
        {
            collected.Add(ReadElement<T>(element));
        }

        return [.. collected];
    }

    private T ReadElement<T>(byte element) =>
        ReadValue(element) is T value ? value : throw new AmqpDecodeException("Array element of unexpected type.");

    private (int Count, int End) ReadCompoundHeader(bool small, bool isArray = false)
    {
        int size, count;
        if (small)
        {
            size = ReadRaw(1)[0];
            var end8 = CheckedEnd(size);
            count = size == 0 ? throw new AmqpDecodeException("Compound value without a count.") : ReadRaw(1)[0];
            CheckCount(count, end8, isArray);
            return (count, end8);
        }

        size = ReadLength();
        var end = CheckedEnd(size);
        if (size < 4)
        {
            throw new AmqpDecodeException("Compound value without a count.");
        }

        count = ReadLength();
        CheckCount(count, end, isArray);
        return (count, end);
    }

    // Every element of a list or map takes at least one byte. Array elements may take none (they share a
    // constructor): they are checked once the constructor is known.
    private readonly void CheckCount(int count, int end, bool isArray)
    {
        if (!isArray && count > end - _position)
        {
            throw new AmqpDecodeException($"A compound value declares {count} elements, more than its {end - _position} bytes hold.");
        }
    }

    private readonly void ExpectEnd(int end)
    {
        if (_position != end)
        {
            throw new AmqpDecodeException("Compound value size does not match its contents.");
        }
    }

    private int CheckedEnd(int size)
    {
        var end = (long)_position + size;
        if (end > _span.Length)
        {
            throw Truncated();
        }

        return (int)end;
    }

    private void Enter()
    {
        if (++_depth > MaxDepth)
        {
            throw new AmqpDecodeException("AMQP value nests too deeply.");
        }
    }

    private int ReadLength()
    {
        var value = BinaryPrimitives.ReadUInt32BigEndian(ReadRaw(4));
        if (value > int.MaxValue)
        {
            throw new AmqpDecodeException("Length out of range.");
        }

        return (int)value;
    }

    private string ReadText(byte code, Encoding encoding)
    {
        var length = (code & 0xf0) == 0xa0 ? ReadRaw(1)[0] : ReadLength();
        try
        {
            return encoding.GetString(ReadRaw(length));
        }
        catch (DecoderFallbackException)
        {
            throw new AmqpDecodeException("Invalid UTF-8 in a string.");
        }
    }

    private ReadOnlySpan<byte> ReadRaw(int count)
    {
        if (count < 0 || _span.Length - _position < count)
        {
            throw Truncated();
        }

        var slice = _span.Slice(_position, count);
        _position += count;
        return slice;
    }

    /// <summary>A <see cref="decimal"/> when it can hold the value; otherwise the encoding itself, to pass on unchanged.</summary>
    private static object ReadDecimal(byte code, ReadOnlySpan<byte> bytes)
    {
        try
        {
            return AmqpDecimal.Decode(bytes);
        }
        catch (AmqpDecodeException)
        {
            return new AmqpUnmappedDecimal(code, bytes.ToArray());
        }
    }

    private static Rune ReadRune(ReadOnlySpan<byte> bytes)
    {
        var value = BinaryPrimitives.ReadInt32BigEndian(bytes);
        return Rune.IsValid(value) ? new Rune(value) : throw new AmqpDecodeException("Invalid char value.");
    }

    internal static DateTime FromUnixMilliseconds(long milliseconds)
    {
        const long min = -62135596800000L; // 0001-01-01
        const long max = 253402300799999L; // 9999-12-31
        return DateTime.UnixEpoch.AddMilliseconds(Math.Clamp(milliseconds, min, max));
    }

    // Width of fixed-width encodings after the format code; -1 for variable width.
    private static int FixedWidth(byte code) => code switch
    {
        FormatCode.Null or FormatCode.BooleanTrue or FormatCode.BooleanFalse or FormatCode.UInt0 or FormatCode.ULong0 or FormatCode.List0 => 0,
        FormatCode.Boolean or FormatCode.UByte or FormatCode.Byte or FormatCode.SmallUInt or FormatCode.SmallULong or FormatCode.SmallInt or FormatCode.SmallLong => 1,
        FormatCode.UShort or FormatCode.Short => 2,
        FormatCode.UInt or FormatCode.Int or FormatCode.Float or FormatCode.Char or FormatCode.Decimal32 => 4,
        FormatCode.ULong or FormatCode.Long or FormatCode.Double or FormatCode.Timestamp or FormatCode.Decimal64 => 8,
        FormatCode.Uuid or FormatCode.Decimal128 => 16,
        _ => -1,
    };

    private static AmqpDecodeException Truncated() => new("Truncated AMQP value.");
}
