using System.Buffers.Binary;
using System.Globalization;
using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Lite = global::Amqp;
using LiteFraming = global::Amqp.Framing;
using LiteTypes = global::Amqp.Types;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The emulator as AMQPNetLite, an AMQP 1.0 implementation of another lineage, sees it: CBS put-token and
/// management requests spelled out on the wire, and the answers read back with their exact status codes and
/// condition strings.
/// </summary>
internal static class LitePeer
{
    public static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    public static Task<Lite.Connection> ConnectAsync(ServiceBusEmulator emulator) =>
        Lite.Connection.Factory.CreateAsync(new Lite.Address($"amqp://127.0.0.1:{emulator.AmqpEndPoint.Port}"));

    /// <summary>The audience of an entity path, as the SDKs put it on $cbs.</summary>
    public static string Audience(ServiceBusEmulator emulator, string path) => $"sb://{emulator.Options.NamespaceName}/{path}";

    /// <summary>A shared access signature for <paramref name="resource"/>, signed with the emulator's key unless told otherwise.</summary>
    public static string Token(ServiceBusEmulator emulator, string resource, TimeSpan? validFor = null, string? key = null) =>
        SharedAccessSignature.Create(resource, emulator.Options.SharedAccessKeyName, key ?? emulator.Options.SharedAccessKey, validFor ?? TimeSpan.FromHours(1)).ToString();

    /// <summary>Puts a SAS token for <paramref name="audience"/> (an entity path or URI) and returns $cbs's status code.</summary>
    public static async Task<int> PutTokenAsync(Lite.Session session, ServiceBusEmulator emulator, string audience) =>
        (await CbsAsync(session, Token(emulator, audience.Contains("://", StringComparison.Ordinal) ? audience : Audience(emulator, audience)),
            audience.Contains("://", StringComparison.Ordinal) ? audience : Audience(emulator, audience))).Status;

    /// <summary>One $cbs request: a token (or any body) for an audience; the answer's status-code and status-description.</summary>
    public static async Task<(int Status, string Description)> CbsAsync(
        Lite.Session session, object? token, string? audience, string type = "servicebus.windows.net:sastoken", string operation = "put-token")
    {
        var properties = new Dictionary<string, object?> { ["operation"] = operation, ["type"] = type };
        if (audience is not null)
        {
            properties["name"] = audience;
        }

        var reply = await RequestAsync(session, "$cbs", token, properties);
        return (Convert.ToInt32(reply.ApplicationProperties["status-code"], CultureInfo.InvariantCulture), (string)reply.ApplicationProperties["status-description"]);
    }

    /// <summary>One management request to <c>&lt;entity&gt;/$management</c>; the answer's statusCode, errorCondition and body.</summary>
    public static async Task<ManagementReply> ManagementAsync(Lite.Session session, string entity, string operation, LiteTypes.Map body)
    {
        var reply = await RequestAsync(session, $"{entity}/$management", body, new Dictionary<string, object?> { ["operation"] = operation });
        var condition = reply.ApplicationProperties["errorCondition"]?.ToString();
        return new ManagementReply(
            Convert.ToInt32(reply.ApplicationProperties["statusCode"], CultureInfo.InvariantCulture),
            condition,
            reply.ApplicationProperties["statusDescription"]?.ToString(),
            reply.Body as LiteTypes.Map);
    }

    /// <summary>A request on a fresh request/response link pair to <paramref name="node"/>, and its reply.</summary>
    public static async Task<Lite.Message> RequestAsync(Lite.Session session, string node, object? body, Dictionary<string, object?> applicationProperties)
    {
        var replyTo = "replies-" + Guid.NewGuid().ToString("N");
        var receiver = new Lite.ReceiverLink(session, replyTo, new LiteFraming.Source { Address = node }, null);
        var sender = new Lite.SenderLink(session, "requests-" + Guid.NewGuid().ToString("N"), node);
        try
        {
            var request = new Lite.Message(body)
            {
                Properties = new LiteFraming.Properties { MessageId = Guid.NewGuid().ToString(), ReplyTo = replyTo },
                ApplicationProperties = new LiteFraming.ApplicationProperties(),
            };
            foreach (var (key, value) in applicationProperties)
            {
                request.ApplicationProperties[key] = value;
            }

            await sender.SendAsync(request);
            var reply = await receiver.ReceiveAsync(Bound) ?? throw new TimeoutException($"No reply from {node} within {Bound}.");
            receiver.Accept(reply);
            Assert.Equal(request.Properties.MessageId, reply.Properties.CorrelationId);
            return reply;
        }
        finally
        {
            await sender.CloseAsync();
            await receiver.CloseAsync();
        }
    }

    /// <summary>Completes with the error a link, session or connection ended with (null for a clean end).</summary>
    public static Task<LiteFraming.Error?> ClosedAsync(Lite.AmqpObject amqpObject)
    {
        var closed = new TaskCompletionSource<LiteFraming.Error?>(TaskCreationOptions.RunContinuationsAsynchronously);
        amqpObject.AddClosedCallback((_, error) => closed.TrySetResult(error));
        return closed.Task.WaitAsync(Bound);
    }

    /// <summary>The condition a refused link ended with.</summary>
    public static async Task<string?> RefusalAsync(Lite.Link link) => (await ClosedAsync(link))?.Condition.ToString();
}

/// <summary>A management answer: statusCode, errorCondition (null on success), statusDescription and body.</summary>
internal sealed record ManagementReply(int Status, string? Condition, string? Description, LiteTypes.Map? Body);

/// <summary>
/// A raw AMQP peer whose frames AMQPNetLite encodes and decodes, for the faults no client library commits: frames
/// are written as given, however wrong, and what the emulator answers is read back frame by frame.
/// </summary>
internal sealed class RawLitePeer : IAsyncDisposable
{
    private static readonly byte[] AmqpHeader = "AMQP\0\u0001\0\0"u8.ToArray();
    private readonly TcpClient _client;
    private readonly NetworkStream _stream;

    private RawLitePeer(TcpClient client)
    {
        _client = client;
        _stream = client.GetStream();
    }

    /// <summary>Connects without SASL to the emulator and exchanges the protocol header and open.</summary>
    public static Task<RawLitePeer> OpenAsync(ServiceBusEmulator emulator) => OpenAsync(emulator.AmqpEndPoint.Port);

    /// <summary>Connects without SASL to <paramref name="port"/> on loopback and exchanges the protocol header and open.</summary>
    public static async Task<RawLitePeer> OpenAsync(int port)
    {
        var client = new TcpClient();
        await client.ConnectAsync("127.0.0.1", port);
        var peer = new RawLitePeer(client);
        await peer.SendRawAsync(AmqpHeader);
        await peer.SendAsync(0, new LiteFraming.Open { ContainerId = "raw-lite-peer", MaxFrameSize = 65536, ChannelMax = 1024 });
        var header = new byte[8];
        await peer.ReadExactlyAsync(header);
        Assert.Equal(AmqpHeader, header);
        Assert.IsType<LiteFraming.Open>((await peer.ReadAsync()).Performative);
        return peer;
    }

    public Task SendRawAsync(byte[] bytes) => _stream.WriteAsync(bytes).AsTask();

    /// <summary>Sends one frame: <paramref name="performative"/> encoded by AMQPNetLite, then <paramref name="payload"/>.</summary>
    public Task SendAsync(ushort channel, LiteTypes.Described performative, byte[]? payload = null) => SendRawAsync(Frame(channel, performative, payload));

    public static byte[] Frame(ushort channel, LiteTypes.Described performative, byte[]? payload = null)
    {
        var body = new Lite.ByteBuffer(1024, true);
        performative.Encode(body);
        payload ??= [];
        var frame = new byte[8 + body.Length + payload.Length];
        BinaryPrimitives.WriteUInt32BigEndian(frame, (uint)frame.Length);
        frame[4] = 2;
        BinaryPrimitives.WriteUInt16BigEndian(frame.AsSpan(6), channel);
        Buffer.BlockCopy(body.Buffer, body.Offset, frame, 8, body.Length);
        payload.CopyTo(frame, 8 + body.Length);
        return frame;
    }

    /// <summary>The next frame that is not a heartbeat, decoded by AMQPNetLite; null performative when the emulator closed the socket.</summary>
    public async Task<(ushort Channel, object? Performative)> ReadAsync()
    {
        while (true)
        {
            var size = new byte[4];
            if (!await TryReadExactlyAsync(size))
            {
                return (0, null);
            }

            var frame = new byte[BinaryPrimitives.ReadUInt32BigEndian(size)];
            size.CopyTo(frame, 0);
            await ReadExactlyAsync(frame.AsMemory(4));
            var offset = frame[4] * 4;
            if (offset == frame.Length)
            {
                continue; // heartbeat
            }

            var buffer = new Lite.ByteBuffer(frame, offset, frame.Length - offset, frame.Length);
            return (BinaryPrimitives.ReadUInt16BigEndian(frame.AsSpan(6)), LiteTypes.Encoder.ReadObject(buffer));
        }
    }

    /// <summary>Reads frames until one of type <typeparamref name="T"/> arrives (flows and the like pass by); fails on a close or the end of the stream.</summary>
    public async Task<(ushort Channel, T Performative)> ExpectAsync<T>()
        where T : class
    {
        while (true)
        {
            var (channel, performative) = await ReadAsync();
            switch (performative)
            {
                case T wanted:
                    return (channel, wanted);
                case LiteFraming.Close close when typeof(T) != typeof(LiteFraming.Close):
                    Assert.Fail($"The emulator closed the connection while {typeof(T).Name} was expected: {close.Error}");
                    break;
                case null:
                    Assert.Fail($"The emulator closed the socket while {typeof(T).Name} was expected.");
                    break;
            }
        }
    }

    /// <summary>The error of the close the emulator ends the connection with.</summary>
    public async Task<LiteFraming.Error?> ClosedWithAsync() => (await ExpectAsync<LiteFraming.Close>()).Performative.Error;

    /// <summary>Begins a session on <paramref name="channel"/>; returns the channel the emulator answers (and ends it) on.</summary>
    public async Task<ushort> BeginAsync(ushort channel)
    {
        await SendAsync(channel, new LiteFraming.Begin { NextOutgoingId = 0, IncomingWindow = 1000, OutgoingWindow = 1000, HandleMax = 255 });
        var (theirs, begin) = await ExpectAsync<LiteFraming.Begin>();
        Assert.Equal(channel, begin.RemoteChannel);
        return theirs;
    }

    private async Task ReadExactlyAsync(Memory<byte> buffer)
    {
        using var timeout = new CancellationTokenSource(LitePeer.Bound);
        await _stream.ReadExactlyAsync(buffer, timeout.Token);
    }

    private async Task<bool> TryReadExactlyAsync(Memory<byte> buffer)
    {
        try
        {
            await ReadExactlyAsync(buffer);
            return true;
        }
        catch (EndOfStreamException)
        {
            return false;
        }
    }

    public ValueTask DisposeAsync()
    {
        _client.Dispose();
        return ValueTask.CompletedTask;
    }
}
