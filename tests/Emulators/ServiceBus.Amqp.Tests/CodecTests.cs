using System.Text;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests;

public sealed class CodecTests
{
    private static byte[] Encode(object? value)
    {
        using var buffer = new ByteBuffer();
        AmqpEncoder.WriteObject(buffer, value);
        return buffer.ToArray();
    }

    private static object? RoundTrip(object? value)
    {
        var bytes = Encode(value);
        var reader = new AmqpReader(bytes);
        var decoded = reader.ReadObject();
        Assert.True(reader.IsAtEnd);
        return decoded;
    }

    public static TheoryData<object?> Primitives => new()
    {
        null, true, false, (byte)200, (ushort)60000, 0u, 7u, 4_000_000_000u, 0ul, 9ul, ulong.MaxValue,
        (sbyte)-5, (short)-30000, 0, -100, int.MinValue, 5L, long.MinValue, 3.5f, -2.25d, "", "héllo",
        new string('z', 300), Guid.Parse("00112233-4455-6677-8899-aabbccddeeff"), new AmqpSymbol("amqp:not-found"),
        new AmqpSymbol(new string('s', 300)), new Rune(0x1F600), 12345.6789m, -0.001m,
    };

    [Theory]
    [MemberData(nameof(Primitives))]
    public void Primitive_values_round_trip_with_their_type(object? value)
    {
        var decoded = RoundTrip(value);

        Assert.Equal(value, decoded);
        Assert.Equal(value?.GetType(), decoded?.GetType());
    }

    [Fact]
    public void Compact_encodings_are_used_for_small_values()
    {
        Assert.Equal([0x43], Encode(0u));
        Assert.Equal([0x52, 7], Encode(7u));
        Assert.Equal([0x44], Encode(0ul));
        Assert.Equal([0x54, 0xfb], Encode(-5));
        Assert.Equal([0x55, 0x05], Encode(5L));
        Assert.Equal([0xa1, 2, (byte)'h', (byte)'i'], Encode("hi"));
        Assert.Equal([0x45], Encode(new List<object?>()));
    }

    [Fact]
    public void Timestamps_are_milliseconds_since_the_unix_epoch()
    {
        var time = new DateTime(2024, 1, 2, 3, 4, 5, 678, DateTimeKind.Utc);

        var bytes = Encode(time);

        Assert.Equal(0x83, bytes[0]);
        Assert.Equal(new DateTimeOffset(time).ToUnixTimeMilliseconds(), System.Buffers.Binary.BinaryPrimitives.ReadInt64BigEndian(bytes.AsSpan(1)));
        Assert.Equal(time, RoundTrip(time));
    }

    [Fact]
    public void Uuid_is_written_in_rfc4122_byte_order()
    {
        var bytes = Encode(Guid.Parse("00112233-4455-6677-8899-aabbccddeeff"));

        Assert.Equal(Convert.FromHexString("98" + "00112233445566778899aabbccddeeff"), bytes);
    }

    [Fact]
    public void Typed_arrays_are_amqp_arrays_and_lists_are_lists()
    {
        var longs = Encode(new long[] { 1, 2, 3 });
        var list = Encode(new List<object?> { 1L, 2L, 3L });

        Assert.Equal(0xf0, longs[0]);
        Assert.Equal(0x81, longs[9]);
        Assert.Equal(0xd0, list[0]);
        Assert.Equal(new long[] { 1, 2, 3 }, RoundTrip(new long[] { 1, 2, 3 }));
        Assert.IsType<List<object?>>(RoundTrip(new List<object?> { 1L, 2L, 3L }));
    }

    [Fact]
    public void Arrays_of_every_element_kind_round_trip()
    {
        object[] arrays =
        [
            new[] { true, false }, new ushort[] { 1, 2 }, new uint[] { 0, 70000 }, new ulong[] { 9 }, new sbyte[] { -1 }, new short[] { -2 },
            new[] { 1, -1 }, new[] { 1.5f }, new[] { 2.5d }, new[] { 1.25m }, new[] { new Rune('a') },
            new[] { new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc) }, new[] { Guid.NewGuid(), Guid.NewGuid() }, new[] { "a", "bb" },
            new[] { new AmqpSymbol("x"), new AmqpSymbol("y") }, new[] { new byte[] { 1, 2 }, new byte[] { 3 } },
        ];

        foreach (var array in arrays)
        {
            Assert.Equal(array, RoundTrip(array));
        }
    }

    [Fact]
    public void Arrays_of_maps_and_described_values_round_trip()
    {
        var maps = new[] { new Dictionary<object, object?> { ["a"] = 1 }, new Dictionary<object, object?> { ["b"] = 2 } };
        var described = new[] { new DescribedValue(0x99ul, "x"), new DescribedValue(0x99ul, "y") };

        var decodedMaps = Assert.IsType<Dictionary<object, object?>[]>(RoundTrip(maps));
        var decodedDescribed = Assert.IsType<DescribedValue[]>(RoundTrip(described));

        Assert.Equal(1, decodedMaps[0]["a"]);
        Assert.Equal(2, decodedMaps[1]["b"]);
        Assert.Equal(described, decodedDescribed);
    }

    [Fact]
    public void Maps_keep_their_key_types_and_nested_values()
    {
        var map = new Dictionary<object, object?>
        {
            ["text"] = "v",
            [new AmqpSymbol("sym")] = new List<object?> { 1, "two", null },
            [42L] = new Dictionary<object, object?> { ["inner"] = new byte[] { 9 } },
        };

        var decoded = Assert.IsType<Dictionary<object, object?>>(RoundTrip(map));

        Assert.Equal("v", decoded["text"]);
        Assert.Equal(new List<object?> { 1, "two", null }, decoded[new AmqpSymbol("sym")]);
        Assert.Equal(new byte[] { 9 }, ((Dictionary<object, object?>)decoded[42L]!)["inner"]);
    }

    [Fact]
    public void Decimal32_and_decimal64_in_bid_layout_decode()
    {
        // 15 x 10^-1 with exponent bias 101 (decimal32) and 398 (decimal64).
        var d32 = new AmqpReader(Convert.FromHexString("74" + "3200000F")).ReadObject();
        var d64 = new AmqpReader(Convert.FromHexString("84" + "31A000000000000F")).ReadObject();

        Assert.Equal(1.5m, d32);
        Assert.Equal(1.5m, d64);
    }

    [Theory]
    [InlineData("940C3C00000000000000000000000004D2")] // 12.34m as Microsoft.Azure.Amqp writes it (exponent bits shifted)
    [InlineData("947C000000000000000000000000000000")]   // decimal128 NaN
    public void Decimals_System_Decimal_cannot_hold_pass_through_unchanged(string hex)
    {
        var encoded = Convert.FromHexString(hex);

        var decoded = new AmqpReader(encoded).ReadObject();
        using var buffer = new ByteBuffer(32);
        AmqpEncoder.WriteObject(buffer, decoded);

        Assert.IsType<AmqpUnmappedDecimal>(decoded);
        Assert.Equal(hex, Convert.ToHexString(buffer.ToArray()));
    }

    [Fact]
    public void Unknown_described_types_decode_as_described_values()
    {
        var decoded = RoundTrip(new DescribedValue(new AmqpSymbol("com.example:thing"), 5L));

        Assert.Equal(new DescribedValue(new AmqpSymbol("com.example:thing"), 5L), decoded);
    }

    [Theory]
    [InlineData("a1")]                   // str8 without its length
    [InlineData("a105616263")]           // str8 shorter than declared
    [InlineData("b0ffffffff")]           // binary claiming 4 GiB
    [InlineData("d0000000100fffffff")]   // list32 whose count exceeds its size
    [InlineData("c1030141")]             // map8 with an odd element count
    [InlineData("ff")]                   // unknown format code
    [InlineData("5602")]                 // boolean that is neither 0 nor 1
    [InlineData("a102c328")]             // invalid UTF-8
    public void Malformed_input_is_a_decode_error(string hex)
    {
        var bytes = Convert.FromHexString(hex);

        Assert.Throws<AmqpDecodeException>(() => new AmqpReader(bytes).ReadObject());
    }

    [Fact]
    public void Deep_nesting_is_refused_instead_of_overflowing_the_stack()
    {
        var bytes = new List<byte>();
        for (var i = 0; i < 10_000; i++)
        {
            bytes.AddRange([0x00, 0x53, 0x01]); // described, descriptor 1, then the next value
        }

        bytes.Add(0x40);

        Assert.Throws<AmqpDecodeException>(() => new AmqpReader(bytes.ToArray()).ReadObject());
    }

    [Fact]
    public void Message_sections_round_trip()
    {
        var message = new AmqpMessage
        {
            Header = new MessageHeader { Durable = true, Priority = 4, Ttl = 60000, DeliveryCount = 0 },
            DeliveryAnnotations = new Dictionary<object, object?> { [new AmqpSymbol("x-da")] = 1 },
            MessageAnnotations = new Dictionary<object, object?> { [new AmqpSymbol("x-opt-sequence-number")] = 7L },
            Properties = new MessageProperties
            {
                MessageId = "id-1", UserId = [1], To = "queue", Subject = "s", ReplyTo = "r", CorrelationId = Guid.Empty,
                ContentType = new AmqpSymbol("application/json"), ContentEncoding = new AmqpSymbol("gzip"),
                AbsoluteExpiryTime = new DateTime(2030, 1, 1, 0, 0, 0, DateTimeKind.Utc), CreationTime = new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc),
                GroupId = "g", GroupSequence = 3, ReplyToGroupId = "rg",
            },
            ApplicationProperties = new Dictionary<string, object?> { ["operation"] = "delivery", ["n"] = 1 },
            Body = new DataBody([new byte[] { 1, 2 }, new byte[] { 3 }]),
            Footer = new Dictionary<object, object?> { [new AmqpSymbol("x-f")] = "f" },
        };

        var decoded = AmqpMessage.Decode(message.ToArray());

        Assert.Equal(0u, decoded.Header!.DeliveryCount);
        Assert.True(decoded.Header.Durable);
        Assert.Equal(60000u, decoded.Header.Ttl);
        Assert.Equal(7L, decoded.MessageAnnotations![new AmqpSymbol("x-opt-sequence-number")]);
        Assert.Equal("id-1", decoded.Properties!.MessageId);
        Assert.Equal(Guid.Empty, decoded.Properties.CorrelationId);
        Assert.Equal("application/json", decoded.Properties.ContentType!.Value.Value);
        Assert.Equal(3u, decoded.Properties.GroupSequence);
        Assert.Equal("delivery", decoded.ApplicationProperties!["operation"]);
        Assert.Equal(new byte[] { 1, 2, 3 }, ((DataBody)decoded.Body!).Combined().ToArray());
        Assert.Equal("f", decoded.Footer![new AmqpSymbol("x-f")]);
        Assert.Equal(1, decoded.DeliveryAnnotations![new AmqpSymbol("x-da")]);
    }

    [Fact]
    public void Value_and_sequence_bodies_round_trip()
    {
        var value = AmqpMessage.Decode(new AmqpMessage { Body = new ValueBody(new Dictionary<object, object?> { ["k"] = 1 }) }.ToArray());
        var sequence = AmqpMessage.Decode(new AmqpMessage { Body = new SequenceBody([new List<object?> { 1, 2 }, new List<object?> { "x" }]) }.ToArray());

        Assert.Equal(1, ((Dictionary<object, object?>)((ValueBody)value.Body!).Value!)["k"]);
        Assert.Equal(2, ((SequenceBody)sequence.Body!).Sections.Count);
    }

    [Fact]
    public void Performatives_round_trip_and_omit_trailing_nulls()
    {
        var attach = new Attach
        {
            Name = "link", Handle = 3, Role = LinkRole.Receiver, ReceiverSettleMode = ReceiverSettleMode.Second,
            Source = new Source { Address = "queue", Filter = new Dictionary<object, object?> { [new AmqpSymbol("f")] = "v" } },
            Target = new Target { Address = "me" }, InitialDeliveryCount = null, MaxMessageSize = 262144,
            Properties = new Dictionary<object, object?> { [new AmqpSymbol("com.microsoft:timeout")] = 60000u },
        };
        var disposition = new Disposition
        {
            Role = LinkRole.Receiver, First = 5, Last = 9, Settled = false,
            State = new Rejected { Error = new Error { Condition = "com.microsoft:dead-letter", Info = new Dictionary<object, object?> { ["DeadLetterReason"] = "r" } } },
        };
        var flow = new Flow { NextIncomingId = 1, IncomingWindow = 100, NextOutgoingId = 2, OutgoingWindow = 50, Handle = 0, DeliveryCount = 10, LinkCredit = 0, Drain = true };

        var a = (Attach)Decode(attach);
        var d = (Disposition)Decode(disposition);
        var f = (Flow)Decode(flow);
        using var buffer = new ByteBuffer();
        new End().Encode(buffer);

        Assert.Equal("queue", a.Source!.Address);
        Assert.Equal(ReceiverSettleMode.Second, a.ReceiverSettleMode);
        Assert.Equal(262144UL, a.MaxMessageSize);
        Assert.Equal(60000u, a.Properties![new AmqpSymbol("com.microsoft:timeout")]);
        Assert.Equal(9u, d.Last);
        Assert.Equal("r", ((Rejected)d.State!).Error!.Info!["DeadLetterReason"]);
        Assert.True(f.Drain);
        Assert.Equal(10u, f.DeliveryCount);
        Assert.Equal(0u, f.LinkCredit);
        Assert.Equal(Convert.FromHexString("005317d00000000400000000"), buffer.ToArray());
    }

    private static Performative Decode(Performative performative)
    {
        using var buffer = new ByteBuffer();
        performative.Encode(buffer);
        var reader = new AmqpReader(buffer.WrittenSpan);
        return Performative.Decode(ref reader);
    }
}
