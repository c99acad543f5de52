using System.Buffers.Binary;
using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// A real emulator on 127.0.0.1 for hostile input: raw TCP exchanges, requests to its <c>$cbs</c> and
/// <c>$management</c> nodes from a client that sends hostile requests, and a healthy client that proves after every
/// batch that the emulator still carries messages for everyone else.
/// </summary>
internal sealed class HostileBroker : IAsyncDisposable
{
    public const string Queue = "orders";
    public const string Topic = "events";
    public const string Subscription = "events/subscriptions/all";

    /// <summary>How long an answer may take on a busy machine before it counts as a hang.</summary>
    public static readonly TimeSpan HangBound = TimeSpan.FromSeconds(20);

    /// <summary>The conditions a well-behaved broker closes or refuses with; internal-error means an exception escaped.</summary>
    private static readonly HashSet<string> Conditions =
    [
        "amqp:decode-error", "amqp:connection:framing-error", "amqp:invalid-field", "amqp:not-allowed", "amqp:not-implemented",
        "amqp:illegal-state", "amqp:unauthorized-access", "amqp:not-found", "amqp:resource-limit-exceeded", "amqp:frame-size-too-small",
        "amqp:precondition-failed", "amqp:session:unattached-handle", "amqp:session:handle-in-use", "amqp:session:window-violation",
        "amqp:session:errant-link", "amqp:link:detach-forced", "amqp:link:message-size-exceeded", "amqp:link:transfer-limit-exceeded",
        "amqp:link:stolen", "amqp:link:redirect", "amqp:connection:forced", "amqp:connection:redirect", "amqp:resource-deleted",
        "com.microsoft:argument-error", "com.microsoft:message-lock-lost", "com.microsoft:session-lock-lost",
        "com.microsoft:session-cannot-be-locked", "com.microsoft:entity-disabled", "com.microsoft:argument-out-of-range",
    ];

    private static readonly AmqpConnectionOptions ClientOptions = new()
    {
        Sasl = SaslProfile.MsSbCbs,
        HostName = "127.0.0.1",
        OperationTimeout = HangBound,
    };

    private readonly Client _healthy;
    private readonly Client _requester;
    private int _marker;

    private HostileBroker(ServiceBusEmulator emulator, Client healthy, Client requester)
    {
        Emulator = emulator;
        _healthy = healthy;
        _requester = requester;
    }

    public ServiceBusEmulator Emulator { get; }

    public int Port => Emulator.AmqpEndPoint.Port;

    public static ServiceBusEmulatorOptions Options => new()
    {
        HttpPort = null,
        Queues = [new QueueOptions { Name = Queue, LockDuration = TimeSpan.FromSeconds(30) }, new QueueOptions { Name = "sessions", RequiresSession = true }],
        Topics = [new TopicOptions { Name = Topic, Subscriptions = [new SubscriptionOptions { Name = "all" }] }],
    };

    public static async Task<HostileBroker> StartAsync()
    {
        var emulator = await ServiceBusEmulator.StartAsync(Options);
        var port = emulator.AmqpEndPoint.Port;
        return new HostileBroker(emulator, await Client.ConnectAsync(port), await Client.ConnectAsync(port));
    }

    /// <summary>A valid put-token body for <paramref name="path"/>, signed with the emulator's key.</summary>
    public string Token(string path, string? key = null, TimeSpan? validFor = null) =>
        SharedAccessSignature.Create($"sb://127.0.0.1:{Port}/{path}", ServiceBusEmulatorOptions.DefaultKeyName, key ?? ServiceBusEmulatorOptions.DevelopmentKey, validFor ?? TimeSpan.FromHours(1)).ToString();

    /// <summary>
    /// Sends <paramref name="request"/> to <paramref name="node"/> from the requesting client: the status and description
    /// of the answer, or the condition the request was refused with (its delivery rejected, its link detached).
    /// </summary>
    public (int? Status, string? Description, string? Refusal) Request(string node, AmqpMessage request)
    {
        var task = Task.Run(async () =>
        {
            if (_requester.IsClosed)
            {
                throw new InvalidOperationException($"The emulator closed the requesting connection: {_requester.Connection.Error}");
            }

            return await _requester.RequestAsync(node, request);
        });
        if (!task.Wait(HangBound * 2))
        {
            throw new TimeoutException($"No answer from {node} within {HangBound.TotalSeconds * 2} s (a hang).");
        }

        return task.Result;
    }

    /// <summary>Sends a marker through the healthy client and receives it back: the emulator still works for others.</summary>
    public void AssertHealthy()
    {
        var check = Task.Run(async () =>
        {
            var marker = $"healthy-{Interlocked.Increment(ref _marker)}";
            await _healthy.SendReceiveAsync(marker);

            // A new connection is accepted and served too (what it sends, the healthy receiver takes off the queue).
            await using var fresh = await Client.ConnectAsync(Port);
            await fresh.SendAsync(marker + "-fresh");
        });
        if (!check.Wait(HangBound * 3))
        {
            throw new TimeoutException("The healthy client was not served (a hang).");
        }
    }

    /// <summary>
    /// One raw exchange: connects, writes <paramref name="writes"/>, ends its side and reads until the emulator closes.
    /// Throws when the emulator hangs, answers with a malformed frame or closes with an error outside the protocol's.
    /// </summary>
    public static async Task<Answer> ExchangeAsync(int port, IReadOnlyList<byte[]> writes)
    {
        using var client = new TcpClient();
        using var timeout = new CancellationTokenSource(HangBound);
        await client.ConnectAsync("127.0.0.1", port, timeout.Token);
        var stream = client.GetStream();
        try
        {
            foreach (var write in writes)
            {
                await stream.WriteAsync(write, timeout.Token);
            }

            client.Client.Shutdown(SocketShutdown.Send);
        }
        catch (IOException)
        {
            // The emulator closed the connection before reading everything: what it said is still to be read.
        }

        var received = new List<byte>();
        var buffer = new byte[8192];
        try
        {
            int n;
            while ((n = await stream.ReadAsync(buffer, timeout.Token)) > 0)
            {
                received.AddRange(buffer.AsSpan(0, n));
            }
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"The emulator neither answered nor closed within {HangBound.TotalSeconds} s (a hang).");
        }
        catch (IOException)
        {
            // Reset after its close frame: keep what arrived.
        }

        return Answer.Parse([.. received]);
    }

    public async ValueTask DisposeAsync()
    {
        await _healthy.DisposeAsync();
        await _requester.DisposeAsync();
        await Emulator.DisposeAsync();
    }

    /// <summary>Throws unless <paramref name="condition"/> is one of the protocol's own errors.</summary>
    public static void CheckCondition(string? condition, string context)
    {
        if (condition is not null && !Conditions.Contains(condition))
        {
            throw new InvalidOperationException($"{context}: the emulator answered with '{condition}', not one of the protocol's own errors.");
        }
    }

    /// <summary>What the emulator sent on a raw connection: its protocol headers and the performatives of its frames.</summary>
    internal sealed record Answer(IReadOnlyList<Performative> Performatives, IReadOnlyList<string> Errors)
    {
        public static Answer Parse(byte[] bytes)
        {
            var performatives = new List<Performative>();
            var errors = new List<string>();
            var at = 0;
            while (at < bytes.Length)
            {
                if (bytes.Length - at >= 8 && bytes.AsSpan(at, 4).SequenceEqual("AMQP"u8))
                {
                    if (bytes[at + 4] is not (0 or 3) || bytes[at + 5] != 1 || bytes[at + 6] != 0 || bytes[at + 7] != 0)
                    {
                        throw new InvalidOperationException($"The emulator answered with the protocol header {Convert.ToHexString(bytes.AsSpan(at, 8))}.");
                    }

                    at += 8;
                    continue;
                }

                if (bytes.Length - at < 8)
                {
                    throw new InvalidOperationException($"The emulator sent {bytes.Length - at} bytes that are no frame: {Convert.ToHexString(bytes.AsSpan(at))}.");
                }

                var size = BinaryPrimitives.ReadUInt32BigEndian(bytes.AsSpan(at));
                if (size < 8 || size > bytes.Length - at)
                {
                    throw new InvalidOperationException($"The emulator sent a frame of {size} bytes with {bytes.Length - at} left.");
                }

                var frame = bytes.AsSpan(at, (int)size);
                var performative = frame[5] == 1
                    ? AmqpConnection.DecodeSaslFrame(frame[4..])
                    : AmqpConnection.DecodeFrame(frame, ushort.MaxValue).Performative;
                if (performative is not null)
                {
                    performatives.Add(performative);
                    var error = performative switch
                    {
                        Close close => close.Error,
                        End end => end.Error,
                        Detach detach => detach.Error,
                        Disposition { State: Rejected rejected } => rejected.Error,
                        _ => null,
                    };
                    if (error is not null)
                    {
                        CheckCondition(error.Condition.Value, "a raw connection (" + error.Description + ")");
                        errors.Add(error.Condition.Value);
                    }
                }

                at += (int)size;
            }

            return new Answer(performatives, errors);
        }
    }

    /// <summary>A client of the emulator with a put-token for every entity, a sender and receiver on the queue, and request links.</summary>
    private sealed class Client : IAsyncDisposable
    {
        private readonly Dictionary<string, (SenderLink Sender, ReceiverLink Receiver, string ReplyTo)> _nodes = [];
        private SenderLink? _sender;
        private ReceiverLink? _receiver;

        private Client(AmqpConnection connection, AmqpSession session)
        {
            Connection = connection;
            Session = session;
        }

        public AmqpConnection Connection { get; }

        public AmqpSession Session { get; }

        public bool IsClosed => Connection.IsClosed;

        public static async Task<Client> ConnectAsync(int port)
        {
            var connection = await AmqpConnection.ConnectAsync("127.0.0.1", port, ClientOptions);
            var client = new Client(connection, await connection.BeginSessionAsync());
            foreach (var path in new[] { Queue, "sessions", Topic })
            {
                var token = SharedAccessSignature.Create($"sb://127.0.0.1:{port}/{path}", ServiceBusEmulatorOptions.DefaultKeyName, ServiceBusEmulatorOptions.DevelopmentKey, TimeSpan.FromHours(1));
                var (status, description, _) = await client.RequestAsync(ServiceBusAmqpNames.CbsNode, new AmqpMessage
                {
                    ApplicationProperties = new Dictionary<string, object?> { ["operation"] = "put-token", ["type"] = ServiceBusAmqpNames.SasTokenType, ["name"] = $"sb://127.0.0.1:{port}/{path}" },
                    Body = new ValueBody(token.ToString()),
                });
                if (status != 202)
                {
                    throw new InvalidOperationException($"put-token for {path}: {status} {description}");
                }
            }

            return client;
        }

        public async Task<(int? Status, string? Description, string? Refusal)> RequestAsync(string node, AmqpMessage request)
        {
            if (!_nodes.TryGetValue(node, out var links))
            {
                var id = Guid.NewGuid().ToString("N");
                var sender = await Session.AttachSenderAsync(new LinkOptions { Name = id + ":sender", Source = new Source { Address = id }, Target = new Target { Address = node } });
                var receiver = await Session.AttachReceiverAsync(new LinkOptions { Name = id + ":receiver", Source = new Source { Address = node }, Target = new Target { Address = id + "-reply" } });
                receiver.AddCredit(100);
                links = _nodes[node] = (sender, receiver, id + "-reply");
            }

            var messageId = Guid.NewGuid().ToString();
            request.EnsureProperties().MessageId = messageId;
            request.Properties!.ReplyTo = links.ReplyTo;
            DeliveryState? outcome;
            try
            {
                outcome = await links.Sender.SendAsync(request.ToArray(), Guid.NewGuid().ToByteArray());
            }
            catch (AmqpException e) when (!Connection.IsClosed)
            {
                // The link was refused or detached (a request over the size limit): the next request attaches anew.
                _nodes.Remove(node);
                return (null, e.Message, e.Error.Condition.Value);
            }

            if (outcome is Rejected rejected)
            {
                return (null, rejected.Error?.Description, rejected.Error?.Condition.Value ?? "rejected without an error");
            }

            if (links.Receiver.Credit < 50)
            {
                links.Receiver.AddCredit(100);
            }

            var response = await links.Receiver.ReceiveAsync(HangBound) ?? throw new TimeoutException($"No answer from {node} within {HangBound.TotalSeconds} s.");
            if (response.Message.Properties?.CorrelationId as string != messageId)
            {
                throw new InvalidOperationException($"The answer from {node} correlates with '{response.Message.Properties?.CorrelationId}', not '{messageId}'.");
            }

            var properties = response.Message.ApplicationProperties ?? [];
            var status = properties.GetValueOrDefault("statusCode") ?? properties.GetValueOrDefault("status-code");
            var description = properties.GetValueOrDefault("statusDescription") ?? properties.GetValueOrDefault("status-description");
            return (status is int code ? code : null, description as string, null);
        }

        public async Task SendAsync(string marker)
        {
            _sender ??= await Session.AttachSenderAsync(new LinkOptions { Name = "healthy-sender-" + Guid.NewGuid().ToString("N"), Source = new Source(), Target = new Target { Address = Queue } });
            var outcome = await _sender.SendAsync(new AmqpMessage { Properties = new MessageProperties { MessageId = marker }, Body = new ValueBody(marker) }.ToArray(), Guid.NewGuid().ToByteArray());
            if (outcome is not Accepted)
            {
                throw new InvalidOperationException($"The healthy client's message was answered {outcome}.");
            }
        }

        public async Task SendReceiveAsync(string marker)
        {
            await SendAsync(marker);
            if (_receiver is null)
            {
                _receiver = await Session.AttachReceiverAsync(new LinkOptions { Name = "healthy-receiver-" + Guid.NewGuid().ToString("N"), Source = new Source { Address = Queue }, Target = new Target() });
                _receiver.AddCredit(1000);
            }

            // Messages other cases left on the queue are taken off until the marker arrives.
            while (true)
            {
                var received = await _receiver.ReceiveAsync(HangBound) ?? throw new TimeoutException($"The healthy client's message {marker} did not come back within {HangBound.TotalSeconds} s.");
                _receiver.Settle(received, Accepted.Instance);
                if (received.Message.Properties?.MessageId as string == marker)
                {
                    return;
                }
            }
        }

        public async ValueTask DisposeAsync() => await Connection.DisposeAsync();
    }
}
