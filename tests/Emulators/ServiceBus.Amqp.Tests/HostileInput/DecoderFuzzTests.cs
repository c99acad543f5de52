using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.TestSupport;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests.HostileInput;

/// <summary>
/// Generated hostile input for the AMQP decoder and frame reader: arbitrary bytes and mutated valid encodings of values,
/// performatives, messages, frames and SASL frames. Each either decodes, and then encodes again (a broker passes what
/// it decoded on), or is refused with a decode or framing error; nothing else escapes, nothing hangs, and refusing
/// costs little memory.
/// </summary>
public sealed class DecoderFuzzTests(ITestOutputHelper output)
{
    private static readonly TimeSpan HangBound = TimeSpan.FromSeconds(20);

    /// <summary>What decoding one case may allocate, for inputs of at most a few hundred kilobytes.</summary>
    private const long AllocationBound = 64L * 1024 * 1024;

    private static readonly ulong[] PerformativeDescriptors = [0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x40, 0x41, 0x42, 0x43, 0x44];

    private static Gen<byte[]> ValidPerformative =>
        Gen.OneOf(
            AmqpGen.Text.Select(s => Encoded(new Open { ContainerId = s, HostName = s, Properties = new Dictionary<object, object?> { [new AmqpSymbol(s)] = s } })),
            AmqpGen.Text.Select(s => Encoded(new Attach { Name = s, Handle = 3, Role = LinkRole.Receiver, Source = new Source { Address = s }, Target = new Target { Address = s } })),
            Gen.Choose(0, 1000).Select(n => Encoded(new Transfer { Handle = (uint)n, DeliveryId = (uint)n, DeliveryTag = [1, 2], More = n % 2 == 0 })),
            Gen.Constant(Encoded(new Disposition { Role = LinkRole.Receiver, First = 1, Last = 9, Settled = true, State = new TransactionalState { TransactionId = [1], Outcome = new Rejected { Error = new Error { Condition = ErrorCondition.DecodeError, Description = "x" } } } })),
            AmqpGen.Text.Select(s => Encoded(new SaslInit { Mechanism = new AmqpSymbol(s), InitialResponse = System.Text.Encoding.UTF8.GetBytes(s), HostName = s })));

    private static Gen<byte[]> AnyPerformative =>
        AmqpGen.Pick((2, ValidPerformative), (1, Gen.Elements(PerformativeDescriptors).SelectMany(AmqpGen.UntypedPerformative)));

    private static Arbitrary<byte[]> Values => Arb.From(AmqpGen.Pick((1, AmqpGen.Bytes), (1, AmqpGen.Mutated(AmqpGen.EncodedValue))));

    private static Arbitrary<byte[]> Performatives => Arb.From(AmqpGen.Pick((1, AmqpGen.Bytes), (2, AmqpGen.Mutated(AnyPerformative)), (1, AnyPerformative)));

    private static Arbitrary<byte[]> Messages => Arb.From(AmqpGen.MessagePayload);

    private static Arbitrary<byte[]> Frames => Arb.From(AmqpGen.Pick(
        (1, AmqpGen.Bytes),
        (3, AmqpGen.Mutated(Gen.Zip(AnyPerformative, AmqpGen.MessagePayload).Select(p => AmqpGen.Frame([.. p.Item1, .. p.Item2]))))));

    [Fact]
    public void Values_decode_and_encode_again_or_are_a_decode_error() =>
        HostileInputRunner.Report(output, "AMQP values", "no escaped exception, hang or unbounded allocation",
            ("arbitrary and mutated encodings", () => HostileInputRunner.Run("values", Values, HostileInputRunner.Cases, bytes => Check(bytes, DecodeValue), () => { })));

    [Fact]
    public void Performatives_decode_or_are_a_decode_error() =>
        HostileInputRunner.Report(output, "AMQP performatives", "no escaped exception, hang or unbounded allocation",
            ("arbitrary, mutated and ill-typed performatives", () => HostileInputRunner.Run("performatives", Performatives, HostileInputRunner.Cases, bytes => Check(bytes, DecodePerformative), () => { })));

    [Fact]
    public void Messages_decode_or_are_a_decode_error() =>
        HostileInputRunner.Report(output, "AMQP messages", "no escaped exception, hang or unbounded allocation",
            ("hostile sections and mutated messages", () => HostileInputRunner.Run("messages", Messages, HostileInputRunner.Cases, bytes => Check(bytes, DecodeMessage), () => { })));

    [Fact]
    public void Frames_decode_or_are_a_framing_or_decode_error() =>
        HostileInputRunner.Report(output, "AMQP and SASL frames", "no escaped exception, hang or unbounded allocation",
            ("mutated and arbitrary frames, read as AMQP and as SASL frames", () => HostileInputRunner.Run("frames", Frames, HostileInputRunner.Cases, bytes => Check(bytes, DecodeFrames), () => { })));

    private static void Check(byte[] bytes, Action<byte[]> decode)
    {
        var (allocated, error) = HostileInputRunner.Bounded(Convert.ToHexString(bytes.AsSpan(0, Math.Min(bytes.Length, 512))), HangBound, () =>
        {
            var before = GC.GetAllocatedBytesForCurrentThread();
            decode(bytes);
            return GC.GetAllocatedBytesForCurrentThread() - before;
        });
        if (error is not null and not AmqpDecodeException and not AmqpException)
        {
            throw new InvalidOperationException($"{Convert.ToHexString(bytes)}: {error.GetType().Name} escaped instead of a decode error: {error}");
        }

        if (allocated > AllocationBound)
        {
            throw new InvalidOperationException($"{Convert.ToHexString(bytes)}: decoding {bytes.Length} bytes allocated {allocated:N0}.");
        }
    }

    private static void DecodeValue(byte[] bytes)
    {
        var reader = new AmqpReader(bytes);
        var value = reader.ReadObject();
        ReEncode(value);
    }

    private static void DecodePerformative(byte[] bytes)
    {
        var reader = new AmqpReader(bytes);
        var performative = Performative.Decode(ref reader);
        using var buffer = new ByteBuffer();
        performative.Encode(buffer);
    }

    private static void DecodeMessage(byte[] bytes)
    {
        var message = AmqpMessage.Decode(bytes);
        _ = message.ToArray();
    }

    private static void DecodeFrames(byte[] bytes)
    {
        Refusable(() =>
        {
            var (_, performative, payloadOffset) = AmqpConnection.DecodeFrame(bytes, channelMax: 255);
            if (performative is Transfer && payloadOffset < bytes.Length)
            {
                DecodeMessage(bytes[payloadOffset..]);
            }
        });
        Refusable(() =>
        {
            if (bytes.Length >= 4)
            {
                AmqpConnection.CheckSaslFrameSize(System.Buffers.Binary.BinaryPrimitives.ReadUInt32BigEndian(bytes));
                AmqpConnection.DecodeSaslFrame(bytes.AsSpan(4));
            }
        });
    }

    // A refusal in the protocol's terms is an answer; anything else escapes to the check.
    private static void Refusable(Action decode)
    {
        try
        {
            decode();
        }
        catch (AmqpException)
        {
        }
        catch (AmqpDecodeException)
        {
        }
    }

    /// <summary>What was decoded can be written again: the broker passes decoded properties and bodies on.</summary>
    private static void ReEncode(object? value)
    {
        var bytes = AmqpGen.Encode(value);
        var reader = new AmqpReader(bytes);
        _ = reader.ReadObject();
    }

    private static byte[] Encoded(Performative performative)
    {
        using var buffer = new ByteBuffer();
        performative.Encode(buffer);
        return buffer.ToArray();
    }
}
