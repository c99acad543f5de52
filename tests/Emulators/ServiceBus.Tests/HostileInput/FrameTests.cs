using System.Text;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.TestSupport.HostileInput;
using DroneDelivery.TestSupport;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// Hostile connections to a real emulator over TCP: protocol headers, SASL init with hostile mechanisms and credentials,
/// then open, begin, attach, flow, transfer (with hostile message sections), disposition, detach and end with hostile
/// fields, any frame of it mutated. The emulator answers each with its protocol header, its frames and, when it refuses,
/// an AMQP error of the protocol's own (decode-error, framing-error, not-found, unauthorized-access...), never
/// internal-error; it never hangs a connection, and a healthy client keeps sending and receiving throughout.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class FrameTests(ITestOutputHelper output)
{
    /// <summary>Connections run side by side in each generated case, as clients arrive at a broker.</summary>
    private const int Parallel = 8;

    private static readonly byte[] AmqpHeader = "AMQP\0\u0001\0\0"u8.ToArray();
    private static readonly byte[] SaslHeader = "AMQP\u0003\u0001\0\0"u8.ToArray();

    private static readonly string[] Addresses =
        [HostileBroker.Queue, HostileBroker.Topic, HostileBroker.Subscription, "$cbs", "orders/$management", "sessions", "orders/$deadletterqueue", "nowhere"];

    private static Gen<string> Address => AmqpGen.Pick((3, Gen.Elements(Addresses)), (1, AmqpGen.Text));

    private static Gen<uint> Edge => Gen.Elements(0u, 1u, 2u, 255u, 4095u, 4096u, 65535u, 0x7fffffffu, uint.MaxValue);

    private static Gen<byte[]> Header =>
        AmqpGen.Pick(
            (12, Gen.Constant(SaslHeader)),
            (3, Gen.Constant(AmqpHeader)),
            (1, Gen.Elements("AMQP\u0001\u0001\0\0", "AMQP\0\u0002\0\0", "AMQP\u0003\u0001\u0000\u0001", "HTTP/1.1", "AMQ", "\0\0\0\0\0\0\0\0").Select(Encoding.Latin1.GetBytes)),
            (1, AmqpGen.Bytes));

    private static Gen<byte[]> SaslInit =>
        AmqpGen.Pick(
            (6, Gen.Constant(AmqpGen.Frame(new SaslInit { Mechanism = new AmqpSymbol("MSSBCBS") }, type: 1))),
            (2, Gen.Zip(Gen.Zip(AmqpGen.Symbol, AmqpGen.Binary), AmqpGen.Text).Select(p =>
                AmqpGen.Frame(new SaslInit { Mechanism = p.Item1.Item1, InitialResponse = p.Item1.Item2, HostName = p.Item2 }, type: 1))),
            (1, Gen.Elements("PLAIN", "ANONYMOUS", "EXTERNAL", "MSSBCBS").SelectMany(m => AmqpGen.Binary.Select(r =>
                AmqpGen.Frame(new SaslInit { Mechanism = new AmqpSymbol(m), InitialResponse = r }, type: 1)))),
            (1, AmqpGen.UntypedPerformative(0x41).Select(b => AmqpGen.Frame(b, type: 1))),
            (1, AmqpGen.UntypedPerformative(0x43).Select(b => AmqpGen.Frame(b, type: 1))));

    private static Gen<byte[]> Open =>
        AmqpGen.Pick(
            (4, Gen.Constant(AmqpGen.Frame(new Open { ContainerId = "hostile", HostName = "127.0.0.1" }))),
            (2, Gen.Zip(Gen.Zip(AmqpGen.Text, Edge), Gen.Zip(Edge, AmqpGen.Map(1))).Select(p => AmqpGen.Frame(new Open
            {
                ContainerId = p.Item1.Item1,
                HostName = p.Item1.Item1,
                MaxFrameSize = p.Item1.Item2,
                ChannelMax = (ushort)p.Item2.Item1,
                Properties = p.Item2.Item2,
            }))),
            (1, AmqpGen.UntypedPerformative(0x10).Select(b => AmqpGen.Frame(b))));

    private static Gen<byte[]> Begin =>
        AmqpGen.Pick(
            (4, Gen.Constant(AmqpGen.Frame(new Begin { NextOutgoingId = 0, IncomingWindow = 5000, OutgoingWindow = 5000 }))),
            (2, Gen.Zip(Gen.Zip(Edge, Edge), Gen.Zip(Edge, Edge)).Select(p => AmqpGen.Frame(new Begin
            {
                RemoteChannel = p.Item1.Item1 % 3 == 0 ? (ushort)p.Item1.Item1 : null,
                NextOutgoingId = p.Item1.Item2,
                IncomingWindow = p.Item2.Item1,
                OutgoingWindow = p.Item2.Item2,
                HandleMax = p.Item1.Item1,
            }))),
            (1, AmqpGen.UntypedPerformative(0x11).Select(b => AmqpGen.Frame(b))));

    private static Gen<byte[]> Attach =>
        AmqpGen.Pick(
            (4, Gen.Zip(Gen.Zip(AmqpGen.Text, Gen.Elements(0u, 0u, 1u, 4095u, 4096u, uint.MaxValue)), Gen.Zip(Gen.Elements(LinkRole.Sender, LinkRole.Receiver), Gen.Zip(Address, AmqpGen.Map(1))))
                .Select(p => AmqpGen.Frame(new Attach
                {
                    Name = p.Item1.Item1,
                    Handle = p.Item1.Item2,
                    Role = p.Item2.Item1,
                    Source = new Source { Address = p.Item2.Item1 == LinkRole.Receiver ? p.Item2.Item2.Item1 : "me" },
                    Target = new Target { Address = p.Item2.Item1 == LinkRole.Sender ? p.Item2.Item2.Item1 : "me" },
                    Properties = p.Item2.Item2.Item2,
                    InitialDeliveryCount = p.Item2.Item1 == LinkRole.Sender ? 0 : null,
                }))),
            (1, AmqpGen.UntypedPerformative(0x12).Select(b => AmqpGen.Frame(b))));

    private static Gen<byte[]> Other =>
        AmqpGen.Pick(
            (4, Gen.Zip(Gen.Zip(Edge, Gen.Elements(true, false)), AmqpGen.MessagePayload).Select(p => AmqpGen.Frame(new Transfer
            {
                Handle = p.Item1.Item1 % 7 == 0 ? p.Item1.Item1 : 0,
                DeliveryId = p.Item1.Item1,
                DeliveryTag = [1],
                Settled = p.Item1.Item2,
                More = p.Item1.Item1 == 1,
            }, p.Item2))),
            (2, Gen.Zip(Edge, Edge).Select(p => AmqpGen.Frame(new Flow { Handle = p.Item1 % 3 == 0 ? p.Item1 : 0, LinkCredit = p.Item2, NextIncomingId = p.Item1, IncomingWindow = p.Item2, NextOutgoingId = 0, OutgoingWindow = p.Item2, DeliveryCount = p.Item1 }))),
            (2, Gen.Elements<ulong>(0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x40, 0x44, 0x99).SelectMany(AmqpGen.UntypedPerformative).Select(b => AmqpGen.Frame(b))),
            (1, Gen.Zip(Edge, AmqpGen.Bytes).Select(p => AmqpGen.Frame(p.Item2, channel: (ushort)p.Item1))),
            (1, Gen.Constant(AmqpGen.Frame([]))));

    /// <summary>A connection's bytes: header, SASL, header, open, begin, attach and more, each step possibly mutated or left out.</summary>
    private static Gen<byte[][]> Script =>
        Gen.Zip(Gen.Zip(Gen.Zip(Header, SaslInit), Gen.Zip(Open, Begin)), Gen.Zip(Gen.Choose(0, 3).SelectMany(n => Gen.ArrayOf(Attach, n)), Gen.Choose(0, 4).SelectMany(n => Gen.ArrayOf(Other, n))))
            .SelectMany(p =>
            {
                var (((header, sasl), (open, begin)), (attaches, others)) = p;
                byte[][] steps = header.AsSpan().SequenceEqual(SaslHeader)
                    ? [header, sasl, AmqpHeader, open, begin, .. attaches, .. others]
                    : [header, open, begin, .. attaches, .. others];
                return Gen.Choose(0, steps.Length).SelectMany(cut => Gen.Choose(-1, steps.Length - 1).SelectMany(mutate => mutate < 0
                    ? Gen.Constant(steps[..Math.Max(1, cut)])
                    : AmqpGen.Mutated(Gen.Constant(steps[mutate])).Select(m => steps.Select((s, i) => i == mutate ? m : s).ToArray())));
            });

    private static Arbitrary<byte[][][]> Scripts => Arb.From(Gen.ArrayOf(Script, Parallel));

    /// <summary>Runs one generated case's connections side by side; returns how many the emulator refused with an error.</summary>
    private static int Exchange(int port, byte[][][] scripts)
    {
        var answers = Task.WhenAll(scripts.Select(script => HostileBroker.ExchangeAsync(port, script)));
        if (!answers.Wait(HostileBroker.HangBound * 2))
        {
            throw new TimeoutException("A batch of hostile connections was not answered (a hang).");
        }

        return answers.Result.Count(a => a.Errors.Count > 0);
    }

    [Fact]
    public async Task Hostile_connections_get_the_protocols_errors_and_others_keep_working()
    {
        await using var broker = await HostileBroker.StartAsync();
        var closedWithError = 0;

        HostileInputRunner.Report(output, "AMQP connections over TCP", "no hang, no internal-error, no malformed frame; a healthy client served after every batch",
            ("connections", () => Parallel * HostileInputRunner.Run("connections", Scripts, HostileInputRunner.Cases / Parallel,
                scripts => closedWithError += Exchange(broker.Port, scripts), broker.AssertHealthy)));

        output.WriteLine($"{closedWithError:N0} connections were refused with an AMQP error");
        broker.AssertHealthy();
        Assert.True(closedWithError > 0);
    }
}
