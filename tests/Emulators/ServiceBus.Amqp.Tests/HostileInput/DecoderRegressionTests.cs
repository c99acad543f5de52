using System.Buffers.Binary;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests.HostileInput;

/// <summary>
/// The defects the generated hostile-input tests found in the AMQP codec, one input each: what the decoder accepts
/// it can encode again, what it refuses costs little, and a refusal is an <see cref="AmqpDecodeException"/>.
/// </summary>
public sealed class DecoderRegressionTests
{
    private static byte[] List32(params byte[][] items)
    {
        var body = items.SelectMany(x => x).ToArray();
        var bytes = new byte[9 + body.Length];
        bytes[0] = FormatCode.List32;
        BinaryPrimitives.WriteInt32BigEndian(bytes.AsSpan(1), body.Length + 4);
        BinaryPrimitives.WriteInt32BigEndian(bytes.AsSpan(5), items.Length);
        body.CopyTo(bytes, 9);
        return bytes;
    }

    private static byte[] Described(byte descriptor, byte[] value) => [0x00, 0x53, descriptor, .. value];

    private static object? Decode(byte[] bytes)
    {
        var reader = new AmqpReader(bytes);
        return reader.ReadObject();
    }

    private static DeliveryState? ReadState(byte[] bytes)
    {
        var reader = new AmqpReader(bytes);
        return DeliveryState.Read(ref reader);
    }

    private static byte[] Encode(object? value)
    {
        using var buffer = new ByteBuffer();
        AmqpEncoder.WriteObject(buffer, value);
        return buffer.ToArray();
    }

    [Fact]
    public void A_transactional_state_whose_outcome_is_another_transactional_state_is_a_decode_error()
    {
        // Spec 4.5.5: the outcome is accepted, rejected, released or modified. Taking any state let a frame nest
        // states one inside the other until the stack ran out, which ends the whole process.
        var accepted = Described(0x24, [FormatCode.List0]);
        var inner = Described(0x34, List32([0xa0, 1, 7], accepted));
        var outer = Described(0x34, List32([0xa0, 1, 7], inner));

        var error = Assert.Throws<AmqpDecodeException>(() => ReadState(outer));

        Assert.Contains("outcome", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_transactional_state_with_an_accepted_outcome_still_decodes()
    {
        var state = Described(0x34, List32([0xa0, 1, 7], Described(0x24, [FormatCode.List0])));

        var decoded = Assert.IsType<TransactionalState>(ReadState(state));

        Assert.IsType<Accepted>(decoded.Outcome);
    }

    [Theory]
    [InlineData(0x74, 0x73, "properties section comes after its application-properties")]
    [InlineData(0x70, 0x70, "repeats its header")]
    [InlineData(0x77, 0x75, "data section comes after its amqp-value")]
    [InlineData(0x77, 0x77, "repeats its amqp-value")]
    public void Message_sections_out_of_order_or_repeated_are_a_decode_error(byte first, byte second, string naming)
    {
        // Spec 3.2: each section at most once, in order. Before, the second silently replaced the first.
        static byte[] Section(byte code) => code switch
        {
            0x70 or 0x73 => Described(code, [FormatCode.List0]),
            0x74 => Described(code, [0xc1, 1, 0]),
            0x75 => Described(code, [0xa0, 1, 0x41]),
            _ => Described(code, [0xa1, 1, 0x41]),
        };

        var error = Assert.Throws<AmqpDecodeException>(() => AmqpMessage.Decode([.. Section(first), .. Section(second)]));

        Assert.Contains(naming, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Several_data_sections_in_a_row_still_make_one_body()
    {
        var message = AmqpMessage.Decode([.. Described(0x75, [0xa0, 1, 0x41]), .. Described(0x75, [0xa0, 1, 0x42])]);

        Assert.Equal(2, Assert.IsType<DataBody>(message.Body).Sections.Count);
    }

    [Fact]
    public void A_value_nested_as_deeply_as_the_decoder_allows_can_be_encoded_again()
    {
        // A broker passes decoded application properties and bodies on; the encoder counted each list's elements as
        // one level deeper than the list, so it refused values the decoder had accepted.
        byte[] bytes = [FormatCode.List0];
        for (var i = 0; i < 60; i++)
        {
            bytes = List32(bytes);
        }

        Assert.Equal(bytes, Encode(Decode(bytes)));
    }

    [Theory]
    [InlineData("e0020340")] // an array of three nulls
    [InlineData("e00802e0020040020040")] // an array of two empty arrays of nulls
    [InlineData("e00500005301" + "71")] // an empty array of described ints
    [InlineData("e00502005301" + "40")] // two described nulls
    public void Arrays_the_decoder_gives_can_be_encoded_again(string hex)
    {
        var decoded = Decode(Convert.FromHexString(hex));

        var again = Decode(Encode(decoded));

        Assert.Equal(System.Text.Json.JsonSerializer.Serialize(decoded), System.Text.Json.JsonSerializer.Serialize(again));
    }

    [Fact]
    public void A_declared_count_reserves_nothing_before_its_elements_arrive()
    {
        // Nested lists each declaring as many elements as their size could describe: a 60 KB frame made the decoder
        // reserve capacity for millions of elements at every level.
        const int size = 60_000;
        var bytes = new byte[size];
        for (int depth = 0, at = 0; depth < 60; depth++, at += 9)
        {
            bytes[at] = FormatCode.List32;
            BinaryPrimitives.WriteInt32BigEndian(bytes.AsSpan(at + 1), size - at - 5);
            BinaryPrimitives.WriteInt32BigEndian(bytes.AsSpan(at + 5), size - at - 9);
        }

        var allocated = AllocatedBy(() => Assert.Throws<AmqpDecodeException>(() => Decode(bytes)));

        Assert.True(allocated < 20 * size, $"decoding {size:N0} bytes allocated {allocated:N0}");
    }

    [Theory]
    [InlineData(FormatCode.Null, 0)] // zero-width elements
    [InlineData(FormatCode.ULong, 8)]
    [InlineData(FormatCode.Uuid, 16)]
    public void An_array_declaring_more_elements_than_its_bytes_hold_is_refused_before_it_is_allocated(byte element, int width)
    {
        // Any array could declare eight elements per byte of its size: a 60 KB array of nulls, ulongs or uuids made the
        // decoder allocate 64 to 128 times its size before finding the elements missing.
        var bytes = new byte[60_000];
        bytes[0] = FormatCode.Array32;
        BinaryPrimitives.WriteInt32BigEndian(bytes.AsSpan(1), bytes.Length - 5);
        BinaryPrimitives.WriteInt32BigEndian(bytes.AsSpan(5), (bytes.Length - 10) * 8);
        bytes[9] = element;

        var allocated = AllocatedBy(() => Assert.Throws<AmqpDecodeException>(() => Decode(bytes)));

        Assert.True(allocated < 4 * bytes.Length, $"an array declaring {(bytes.Length - 10) * 8:N0} elements of width {width} in {bytes.Length:N0} bytes allocated {allocated:N0}");
    }

    [Fact]
    public void A_decimal_beyond_System_Decimal_is_passed_on_unmapped_without_scaling_it_first()
    {
        // decimal128 with the largest exponent: it was multiplied by ten six thousand times before being found too
        // large, in every element of an array.
        var bytes = new byte[17];
        bytes[0] = FormatCode.Decimal128;
        bytes[1] = 0x5f; // exponent bits all but the top set: 2^14 - 1 - 2^13
        bytes[2] = 0xfc;
        bytes[16] = 1;

        var allocated = AllocatedBy(() => Assert.IsType<AmqpUnmappedDecimal>(Decode(bytes)));

        Assert.True(allocated < 64 * 1024, $"reading one decimal allocated {allocated:N0}");
    }

    [Fact]
    public void Zero_with_any_exponent_is_zero()
    {
        var bytes = new byte[17];
        bytes[0] = FormatCode.Decimal128;
        bytes[1] = 0x5f;
        bytes[2] = 0xfc;

        Assert.Equal(0m, Decode(bytes));
    }

    private static long AllocatedBy(Action action)
    {
        var before = GC.GetAllocatedBytesForCurrentThread();
        action();
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }
}
