using System.Buffers.Binary;
using System.Text;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using FsCheck;
using FsCheck.Fluent;

namespace DroneDelivery.TestSupport.HostileInput;

/// <summary>
/// Building blocks for hostile AMQP input: odd strings, every primitive type at its edges, nested values of any type
/// where a field expects one type, messages with hostile sections, frames, and the mutations that turn valid bytes
/// into near-valid bytes (a byte changed, a length field set to an extreme, bytes dropped, doubled or cut off).
/// </summary>
internal static class AmqpGen
{
    /// <summary>Characters and short runs that break naive parsers, escaping and routing.</summary>
    public static readonly string[] OddPieces =
    [
        "", "\0", "\u0001", "\u007f", "\t", "\r\n", "\u00a0", "\u2028", "\u202e", "\ufeff", "\uffff", "😀", "é", "中文", "'", "''", "\"",
        "\\", "/", "//", "?", "#", "%", "%2F", "%00", "..", "../", "$", "$cbs", "$management", "orders", "orders/$management", "sb://", ":",
        ";", "&", "=", " ", "amqp:", "com.microsoft:", "SharedAccessSignature ", "sr=", "sig=", "se=", "skn=", "null", "-1",
        "9999999999999999999", "\u0000\u0000",
    ];

    /// <summary>Bytes that mean something to the decoder: constructors, lengths at their edges.</summary>
    public static readonly byte[] MeaningfulBytes =
    [
        0x00, 0x01, 0x02, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x50, 0x53, 0x54, 0x55, 0x56, 0x60, 0x61, 0x70, 0x71, 0x72, 0x80, 0x81, 0x82,
        0x83, 0x84, 0x94, 0x98, 0xa0, 0xa1, 0xa3, 0xb0, 0xb1, 0xb3, 0xc0, 0xc1, 0xd0, 0xd1, 0xe0, 0xf0, 0x7f, 0xfe, 0xff,
    ];

    public static Gen<T> Pick<T>(params (int Weight, Gen<T> Gen)[] choices) => Gen.Frequency(choices);

    /// <summary>A string of odd pieces, now and then empty, long, or of unusual characters only.</summary>
    public static Gen<string> Text =>
        Pick(
            (10, Gen.Choose(0, 6).SelectMany(n => Gen.ArrayOf(Gen.Elements(OddPieces), n)).Select(parts => string.Concat(parts))),
            (3, Gen.Elements("a", "orders", "$cbs", "$management", "orders/$management", "sb://127.0.0.1/orders", "put-token",
                "com.microsoft:peek-message", "MSSBCBS", "PLAIN", "ANONYMOUS", "EXTERNAL")),
            (1, Gen.Elements(256, 1_025, 4_096).SelectMany(n => Gen.Elements("a", "é", "😀", "%").Select(c => string.Concat(Enumerable.Repeat(c, n))))));

    public static Gen<AmqpSymbol> Symbol => Text.Select(s => new AmqpSymbol(s));

    public static Gen<byte[]> Binary =>
        Pick(
            (6, Gen.Choose(0, 24).SelectMany(n => Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b), n))),
            (2, Text.Select(s => Encoding.UTF8.GetBytes(s))),
            (1, Gen.Elements(1_000, 4_096, 70_000).Select(n => new byte[n])));

    /// <summary>Every primitive AMQP type, at its edges more often than not.</summary>
    public static Gen<object?> Scalar =>
        Gen.OneOf(
            Gen.Constant<object?>(null),
            Gen.Elements<object?>(true, false),
            Gen.Elements<object?>(byte.MinValue, byte.MaxValue, sbyte.MinValue, sbyte.MaxValue, (ushort)0, ushort.MaxValue, short.MinValue, short.MaxValue),
            Gen.Elements<object?>(0u, 1u, uint.MaxValue, 0, -1, int.MinValue, int.MaxValue, 0ul, 1ul, ulong.MaxValue, 0L, -1L, long.MinValue, long.MaxValue),
            Gen.Choose(int.MinValue, int.MaxValue).Select(i => (object?)((long)i * 7919)),
            Gen.Elements<object?>(0f, float.NaN, float.PositiveInfinity, double.NaN, double.NegativeInfinity, double.Epsilon, -0d, 1.5d),
            Gen.Elements<object?>(decimal.MaxValue, decimal.MinValue, 0.0000000000000000000000000001m),
            Gen.Elements<object?>(DateTime.MinValue.ToUniversalTime(), DateTime.MaxValue.ToUniversalTime(), DateTime.UnixEpoch, Guid.Empty, Guid.Parse("ffffffff-ffff-ffff-ffff-ffffffffffff")),
            Gen.Elements<object?>(new Rune(0), new Rune(0x10ffff), 'x'),
            Text.Select(s => (object?)s),
            Symbol.Select(s => (object?)s),
            Binary.Select(b => (object?)b));

    /// <summary>Any AMQP value: scalars, and lists, maps, arrays and described values of them, nested up to <paramref name="depth"/>.</summary>
    public static Gen<object?> Value(int depth) => depth <= 0
        ? Scalar
        : Pick(
            (6, Scalar),
            (1, Gen.Choose(0, 4).SelectMany(n => Gen.ArrayOf(Value(depth - 1), n)).Select(items => (object?)items.ToList())),
            (1, Map(depth - 1).Select(m => (object?)m)),
            (1, Gen.OneOf(
                Gen.Choose(0, 5).SelectMany(n => Gen.ArrayOf(Gen.Choose(int.MinValue, int.MaxValue), n)).Select(a => (object?)a),
                Gen.Choose(0, 5).SelectMany(n => Gen.ArrayOf(Text, n)).Select(a => (object?)a),
                Gen.Choose(0, 3).SelectMany(n => Gen.ArrayOf(Symbol, n)).Select(a => (object?)a))),
            (1, Gen.Zip(Pick((3, Gen.Choose(0, 0x80).Select(d => (object)(ulong)d)), (1, Symbol.Select(s => (object)s))), Value(depth - 1))
                .Select(p => (object?)new DescribedValue(p.Item1, p.Item2))));

    /// <summary>A map whose keys are anything but null (strings, symbols, numbers, binary) and values anything.</summary>
    public static Gen<Dictionary<object, object?>> Map(int depth) =>
        Gen.Choose(0, 4).SelectMany(n => Gen.ArrayOf(Gen.Zip(Scalar.Where(k => k is not null).Select(k => k!), Value(depth)), n))
            .Select(pairs =>
            {
                var map = new Dictionary<object, object?>();
                foreach (var (key, value) in pairs)
                {
                    map.TryAdd(key, value);
                }

                return map;
            });

    /// <summary>Application properties as a client sends them: string keys, hostile values.</summary>
    public static Gen<Dictionary<string, object?>> Properties =>
        Gen.Choose(0, 4).SelectMany(n => Gen.ArrayOf(Gen.Zip(Text, Value(1)), n)).Select(pairs =>
        {
            var map = new Dictionary<string, object?>(StringComparer.Ordinal);
            foreach (var (key, value) in pairs)
            {
                map.TryAdd(key, value);
            }

            return map;
        });

    /// <summary>Encoded AMQP values: what the encoder writes for a hostile value.</summary>
    public static Gen<byte[]> EncodedValue => Value(3).Select(Encode);

    /// <summary>A message whose sections each may be present, hold hostile values, or be missing.</summary>
    public static Gen<AmqpMessage> Message =>
        Gen.Zip(Gen.Zip(Properties, Gen.Zip(Text, Text)), Gen.OneOf(
                Value(2).Select(v => (MessageBody?)new ValueBody(v)),
                Binary.Select(b => (MessageBody?)new DataBody(b)),
                Gen.Constant<MessageBody?>(null)))
            .Select(p => new AmqpMessage
            {
                ApplicationProperties = p.Item1.Item1,
                Properties = new MessageProperties { MessageId = p.Item1.Item2.Item1, Subject = p.Item1.Item2.Item2, ReplyTo = p.Item1.Item2.Item2 },
                Body = p.Item2,
            });

    /// <summary>Message payloads: a hostile message, its encoding mutated, or sections glued together in any order.</summary>
    public static Gen<byte[]> MessagePayload =>
        Pick(
            (4, Message.Select(m => m.ToArray())),
            (3, Mutated(Message.Select(m => m.ToArray()))),
            (2, Gen.Choose(0, 4).SelectMany(n => Gen.ArrayOf(Gen.Zip(Gen.Choose(0x70, 0x78), Value(1)), n))
                .Select(sections => sections.SelectMany(s => Encode(new DescribedValue((ulong)s.Item1, s.Item2))).ToArray())),
            (1, Binary));

    /// <summary>Random bytes leaning on the decoder's constructors and length edges.</summary>
    public static Gen<byte[]> Bytes =>
        Gen.Choose(0, 48).SelectMany(n => Gen.ArrayOf(Pick(
            (3, Gen.Elements(MeaningfulBytes)),
            (2, Gen.Choose(0, 255).Select(b => (byte)b))), n));

    /// <summary>Valid bytes from <paramref name="valid"/>, changed by one to three mutations.</summary>
    public static Gen<byte[]> Mutated(Gen<byte[]> valid) =>
        Gen.Zip(valid, Gen.Choose(1, 3)).SelectMany(p => Mutations(p.Item1, p.Item2));

    private static Gen<byte[]> Mutations(byte[] bytes, int remaining) => remaining == 0
        ? Gen.Constant(bytes)
        : Mutation(bytes).SelectMany(next => Mutations(next, remaining - 1));

    private static Gen<byte[]> Mutation(byte[] bytes)
    {
        if (bytes.Length == 0)
        {
            return Bytes;
        }

        var at = Gen.Choose(0, bytes.Length - 1);
        return Gen.OneOf(
            Gen.Zip(at, Gen.Elements(MeaningfulBytes)).Select(p => With(bytes, b => b[p.Item1] = p.Item2)),
            Gen.Zip(at, Gen.Choose(0, 255)).Select(p => With(bytes, b => b[p.Item1] = (byte)p.Item2)),
            Gen.Zip(at, Gen.Elements(0u, 1u, 0x7fu, 0x80u, 0xffu, 0xffffu, 0x7fffffffu, 0x80000000u, 0xffffffffu, (uint)bytes.Length, (uint)bytes.Length + 1))
                .Select(p => With(bytes, b =>
                {
                    // A length or count field set to an extreme (the four bytes at the position, or what fits).
                    Span<byte> value = stackalloc byte[4];
                    BinaryPrimitives.WriteUInt32BigEndian(value, p.Item2);
                    value[..Math.Min(4, b.Length - p.Item1)].CopyTo(b.AsSpan(p.Item1));
                })),
            at.Select(n => bytes[..n]),
            Gen.Zip(at, Gen.Choose(1, 8)).Select(p => (byte[])[.. bytes[..p.Item1], .. bytes[Math.Min(bytes.Length, p.Item1 + p.Item2)..]]),
            Gen.Zip(at, Bytes).Select(p => (byte[])[.. bytes[..p.Item1], .. p.Item2, .. bytes[p.Item1..]]),
            Gen.Zip(at, Gen.Choose(1, 16)).Select(p =>
            {
                var end = Math.Min(bytes.Length, p.Item1 + p.Item2);
                return (byte[])[.. bytes[..end], .. bytes[p.Item1..end], .. bytes[end..]];
            }));
    }

    private static byte[] With(byte[] bytes, Action<byte[]> change)
    {
        var copy = (byte[])bytes.Clone();
        change(copy);
        return copy;
    }

    public static byte[] Encode(object? value)
    {
        using var buffer = new ByteBuffer();
        AmqpEncoder.WriteObject(buffer, value);
        return buffer.ToArray();
    }

    /// <summary>An AMQP (type 0) or SASL (type 1) frame around an encoded performative and payload.</summary>
    public static byte[] Frame(byte[] body, byte type = 0, ushort channel = 0)
    {
        var frame = new byte[8 + body.Length];
        BinaryPrimitives.WriteUInt32BigEndian(frame, (uint)frame.Length);
        frame[4] = 2;
        frame[5] = type;
        BinaryPrimitives.WriteUInt16BigEndian(frame.AsSpan(6), channel);
        body.CopyTo(frame, 8);
        return frame;
    }

    public static byte[] Frame(Performative performative, byte[]? payload = null, byte type = 0, ushort channel = 0)
    {
        using var buffer = new ByteBuffer();
        performative.Encode(buffer);
        return Frame([.. buffer.WrittenSpan, .. payload ?? []], type, channel);
    }

    /// <summary>A performative with any field of any type: a described list of hostile values.</summary>
    public static Gen<byte[]> UntypedPerformative(ulong descriptor) =>
        Gen.Choose(0, 12).SelectMany(n => Gen.ArrayOf(Value(1), n))
            .Select(fields => Encode(new DescribedValue(descriptor, fields.ToList())));
}
