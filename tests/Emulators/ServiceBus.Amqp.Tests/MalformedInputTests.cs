using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests;

public sealed class MalformedInputTests
{
    /// <summary>Bounds a wait for something that must happen, so a bug fails the test instead of hanging it.</summary>
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    private static async Task<byte[]> ExchangeAsync(int port, params byte[][] writes)
    {
        using var client = new TcpClient();
        await client.ConnectAsync("127.0.0.1", port);
        var stream = client.GetStream();
        foreach (var write in writes)
        {
            await stream.WriteAsync(write);
        }

        return await ReadToEndAsync(stream);
    }

    /// <summary>Everything the peer sends until it closes the socket.</summary>
    private static async Task<byte[]> ReadToEndAsync(NetworkStream stream)
    {
        var received = new List<byte>();
        var buffer = new byte[4096];
        using var timeout = new CancellationTokenSource(Bound);
        while (true)
        {
            var n = await stream.ReadAsync(buffer, timeout.Token);
            if (n == 0)
            {
                return [.. received];
            }

            received.AddRange(buffer.AsSpan(0, n));
        }
    }

    private static readonly byte[] AmqpHeader = "AMQP\0\u0001\0\0"u8.ToArray();


    [Fact]
    public async Task Wrong_protocol_header_is_answered_with_ours_and_the_socket_is_closed()
    {
        await using var broker = new LoopbackBroker();

        var answer = await ExchangeAsync(broker.Port, "HTTP/1.1 GET /\r\n"u8.ToArray());

        Assert.Equal("AMQP"u8.ToArray(), answer.Take(4));
    }

    [Fact]
    public async Task Undecodable_frame_closes_that_connection_with_a_decode_error_and_others_keep_working()
    {
        await using var broker = new LoopbackBroker(mechanisms: [], connection: new AmqpConnectionOptions()) ;
        await using var healthy = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, new AmqpConnectionOptions { OperationTimeout = TimeSpan.FromSeconds(30) });

        var answer = await ExchangeAsync(broker.Port, AmqpHeader, Open(), [0, 0, 0, 12, 2, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef]);

        Assert.Equal(AmqpHeader, answer.Take(8));
        Assert.Contains("amqp:decode-error", System.Text.Encoding.ASCII.GetString(answer), StringComparison.Ordinal);
        var session = await healthy.BeginSessionAsync();
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "s", Source = new Source(), Target = new Target { Address = "queue" } });
        Assert.IsType<Accepted>(await sender.SendAsync(new AmqpMessage { Body = new ValueBody("still fine") }.ToArray(), [1]));
    }

    [Fact]
    public async Task Frame_larger_than_the_negotiated_maximum_closes_the_connection_with_a_framing_error()
    {
        await using var broker = new LoopbackBroker(mechanisms: [], connection: new AmqpConnectionOptions { MaxFrameSize = 1024 });

        var answer = await ExchangeAsync(broker.Port, AmqpHeader, Open(), [0, 0x10, 0, 0, 2, 0, 0, 0]);

        Assert.Contains("amqp:connection:framing-error", System.Text.Encoding.ASCII.GetString(answer), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Transfer_on_an_unattached_handle_ends_that_session_with_the_error_and_the_connection_carries_on()
    {
        // A session error (spec 2.8.17) ends the session with an end carrying it, not the connection.
        await using var broker = new LoopbackBroker(mechanisms: [], connection: new AmqpConnectionOptions());
        using var client = new TcpClient();
        await client.ConnectAsync("127.0.0.1", broker.Port);
        var stream = client.GetStream();
        await stream.WriteAsync(AmqpHeader);
        await stream.WriteAsync(Open());
        await stream.WriteAsync(AmqpGen.Frame(new Begin { NextOutgoingId = 0, IncomingWindow = 10, OutgoingWindow = 10 }));

        await stream.WriteAsync(AmqpGen.Frame(new Transfer { Handle = 7, DeliveryId = 0, DeliveryTag = [1], MessageFormat = 0 }));
        var end = await ReadUntilAsync<End>(stream);
        await stream.WriteAsync(AmqpGen.Frame(new End()));
        await stream.WriteAsync(AmqpGen.Frame(new Begin { NextOutgoingId = 0, IncomingWindow = 10, OutgoingWindow = 10 }, channel: 1));
        var begin = await ReadUntilAsync<Begin>(stream);

        Assert.Equal(ErrorCondition.UnattachedHandle, end.Error?.Condition);
        Assert.Equal((ushort)1, begin.RemoteChannel);
        Assert.False(Assert.Single(broker.Connections).IsClosed);
    }

    /// <summary>Reads frames (after the protocol header) until one of type <typeparamref name="T"/>.</summary>
    private static async Task<T> ReadUntilAsync<T>(NetworkStream stream)
        where T : Performative
    {
        using var timeout = new CancellationTokenSource(Bound);
        while (true)
        {
            var size = new byte[4];
            await stream.ReadExactlyAsync(size, timeout.Token);
            if (size.AsSpan().SequenceEqual("AMQP"u8))
            {
                await stream.ReadExactlyAsync(new byte[4], timeout.Token); // the protocol header
                continue;
            }

            var frame = new byte[System.Buffers.Binary.BinaryPrimitives.ReadUInt32BigEndian(size)];
            size.CopyTo(frame, 0);
            await stream.ReadExactlyAsync(frame.AsMemory(4), timeout.Token);
            if (frame[4] * 4 < frame.Length && ReadFirstPerformative(frame) is T wanted)
            {
                return wanted;
            }
        }
    }

    [Fact]
    public async Task A_handler_that_throws_ends_only_its_connection()
    {
        await using var listener = AmqpListener.Start(new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0), new AmqpListenerOptions
        {
            SaslMechanisms = [],
            RequireSasl = false,
            HandlerFactory = _ => new ThrowingHandler(),
        });
        var options = new AmqpConnectionOptions { OperationTimeout = Bound };
        await using var victim = await AmqpConnection.ConnectAsync("127.0.0.1", listener.EndPoint.Port, options);
        await using var bystander = await AmqpConnection.ConnectAsync("127.0.0.1", listener.EndPoint.Port, options);
        var sender = await (await victim.BeginSessionAsync()).AttachSenderAsync(new LinkOptions { Name = "s", Source = new Source(), Target = new Target { Address = "boom" } });

        _ = sender.SendAsync(new AmqpMessage { Body = new ValueBody("x") }.ToArray(), [1]);
        await victim.Completion.WaitAsync(Bound);

        Assert.Equal(ErrorCondition.InternalError, victim.Error!.Condition);
        Assert.False(bystander.IsClosed);
        Assert.NotNull(await bystander.BeginSessionAsync());
    }

    private sealed class ThrowingHandler : IAmqpLinkHandler
    {
        public void OnAttach(AmqpLink link)
        {
            if (link is ReceiverLink receiver)
            {
                receiver.OnMessage = (_, _) => throw new InvalidOperationException("handler bug");
                receiver.Accept();
                receiver.SetCredit(10);
            }
        }
    }

    [Fact]
    public async Task A_silent_peer_is_closed_after_the_idle_time_out_and_was_told_half_of_it()
    {
        // The broker's idle clock is a fake one the test moves: the peer is closed once more than 1 s
        // passed without a frame from it, and not before, however long the test itself takes.
        var time = new FakeTimeProvider();
        await using var broker = new LoopbackBroker(mechanisms: [], connection: new AmqpConnectionOptions { IdleTimeout = TimeSpan.FromSeconds(1), TimeProvider = time });
        using var client = new TcpClient();
        await client.ConnectAsync("127.0.0.1", broker.Port);
        var stream = client.GetStream();
        await stream.WriteAsync(AmqpHeader);
        await stream.WriteAsync(Open());

        // The broker answers our open once it has handled it: from then on it waits to hear from us.
        using var timeout = new CancellationTokenSource(Bound);
        var header = new byte[12];
        await stream.ReadExactlyAsync(header, timeout.Token);
        var openFrame = new byte[System.Buffers.Binary.BinaryPrimitives.ReadUInt32BigEndian(header.AsSpan(8))];
        header.AsSpan(8).CopyTo(openFrame);
        await stream.ReadExactlyAsync(openFrame.AsMemory(4), timeout.Token);
        Assert.Equal(AmqpHeader, header.Take(8));
        Assert.Equal(500u, Assert.IsType<Open>(ReadFirstPerformative(openFrame)).IdleTimeOut);
        Assert.True(await Eventually.TrueAsync(() => broker.Connections.Count == 1, Bound));
        var served = broker.Connections.Single();

        // Timer callbacks run inside Advance, so the broker's idle check has run when it returns.
        time.Advance(TimeSpan.FromMilliseconds(999));
        Assert.Null(served.Error);
        time.Advance(TimeSpan.FromSeconds(1));
        var rest = await ReadToEndAsync(stream);

        Assert.Equal(ErrorCondition.ResourceLimitExceeded, served.Error?.Condition);
        Assert.Contains("amqp:resource-limit-exceeded", System.Text.Encoding.ASCII.GetString(rest), StringComparison.Ordinal);
    }

    private static Performative ReadFirstPerformative(ReadOnlySpan<byte> frames)
    {
        var size = (int)System.Buffers.Binary.BinaryPrimitives.ReadUInt32BigEndian(frames);
        var bodyOffset = frames[4] * 4;
        var reader = new Codec.AmqpReader(frames[bodyOffset..size]);
        return Performative.Decode(ref reader);
    }

    private static byte[] Open() => AmqpGen.Frame(new Open { ContainerId = "raw-client" });
}
