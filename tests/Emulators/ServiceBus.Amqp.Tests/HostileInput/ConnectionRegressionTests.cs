using System.Buffers.Binary;
using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests.HostileInput;

/// <summary>The defects the generated hostile-input tests found in the connection and session, one input each.</summary>
public sealed class ConnectionRegressionTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    private static readonly AmqpConnectionOptions Client = new() { OperationTimeout = Bound };

    [Fact]
    public async Task An_attach_on_a_handle_beyond_the_announced_handle_max_is_a_framing_error()
    {
        // Spec 2.7.2: begin announces handle-max (4095 here); a handle beyond it let a peer spread links over the
        // whole uint range.
        await using var broker = new LoopbackBroker(mechanisms: []);
        using var client = new TcpClient();
        await client.ConnectAsync("127.0.0.1", broker.Port);
        var stream = client.GetStream();

        await stream.WriteAsync("AMQP\0\u0001\0\0"u8.ToArray());
        await stream.WriteAsync(AmqpGen.Frame(new Open { ContainerId = "raw" }));
        await stream.WriteAsync(AmqpGen.Frame(new Begin { NextOutgoingId = 0, IncomingWindow = 100, OutgoingWindow = 100 }));
        await stream.WriteAsync(AmqpGen.Frame(new Attach { Name = "far", Handle = AmqpSession.HandleMax + 1, Role = LinkRole.Sender, Target = new Target { Address = "q" } }));
        var frames = Frames(await ReadToEndAsync(stream));

        // Everything the broker sent, decoded, so a failure shows what came instead.
        var seen = string.Join(", ", frames.Select(f => f is Close { Error: { } e } ? $"close({e.Condition}: {e.Description})" : f?.GetType().Name ?? "empty"));
        var close = Assert.Single(frames.OfType<Close>());
        Assert.True(close.Error?.Condition == ErrorCondition.FramingError && close.Error.Description?.Contains("handle-max", StringComparison.Ordinal) == true, seen);
    }

    [Fact]
    public async Task A_performative_that_cannot_be_encoded_fails_alone_and_the_connection_keeps_working()
    {
        // The half-written frame stayed in the outgoing stream, and the next frame sent corrupted the connection.
        await using var broker = new LoopbackBroker(mechanisms: []);
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client);
        var session = await connection.BeginSessionAsync();

        await Assert.ThrowsAnyAsync<Exception>(() => session.AttachSenderAsync(new LinkOptions
        {
            Name = "unencodable",
            Target = new Target { Address = "queue" },
            Properties = new Dictionary<object, object?> { [new AmqpSymbol("x")] = new object() },
        }).WaitAsync(Bound));
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "fine", Source = new Source(), Target = new Target { Address = "queue" } });

        Assert.IsType<Accepted>(await sender.SendAsync(new AmqpMessage { Body = new ValueBody("still fine") }.ToArray(), [1]));
    }

    private static async Task<byte[]> ReadToEndAsync(NetworkStream stream)
    {
        var received = new List<byte>();
        var buffer = new byte[4096];
        using var timeout = new CancellationTokenSource(Bound);
        int n;
        while ((n = await stream.ReadAsync(buffer, timeout.Token)) > 0)
        {
            received.AddRange(buffer.AsSpan(0, n));
        }

        return [.. received];
    }

    /// <summary>The AMQP frames after the 8-byte protocol header, decoded (null for an empty frame).</summary>
    private static List<Performative?> Frames(byte[] answer)
    {
        var frames = new List<Performative?>();
        var offset = 8;
        while (answer.Length - offset >= 8)
        {
            var size = (int)BinaryPrimitives.ReadUInt32BigEndian(answer.AsSpan(offset));
            Assert.True(size >= 8 && offset + size <= answer.Length, $"a frame of {size} bytes at {offset} of {answer.Length}: {Convert.ToHexString(answer)}");
            frames.Add(AmqpConnection.DecodeFrame(answer.AsSpan(offset, size), ushort.MaxValue).Performative);
            offset += size;
        }

        Assert.True(offset == answer.Length, $"{answer.Length - offset} bytes after the last whole frame: {Convert.ToHexString(answer)}");
        return frames;
    }
}
