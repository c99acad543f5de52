using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests;

/// <summary>
/// What the official SDK does on the wire, exercised with raw AMQP against the Service Bus emulator, so the emulator
/// is held to the SDK's expectations in frames and answers the SDK does not expose.
/// </summary>
public sealed class ServiceBusWireTests : IAsyncLifetime
{
    private const string Queue = "wire";
    private const string SessionQueue = "wire-sessions";

    // The emulator's clock, on a whole millisecond (AMQP timestamps carry milliseconds) and never moved, so
    // the times it answers with are exact however long a test takes.
    private readonly FakeTimeProvider _time = new(DateTimeOffset.FromUnixTimeMilliseconds(DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()));
    private ServiceBusEmulator _emulator = null!;
    private AmqpConnection _connection = null!;
    private AmqpSession _session = null!;

    public async Task InitializeAsync()
    {
        _emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
        {
            HttpPort = null,
            Queues =
            [
                new QueueOptions { Name = Queue, LockDuration = TimeSpan.FromSeconds(30) },
                new QueueOptions { Name = SessionQueue, LockDuration = TimeSpan.FromSeconds(30), RequiresSession = true },
            ],
            TimeProvider = _time,
        });
        _connection = await AmqpConnection.ConnectAsync("127.0.0.1", _emulator.AmqpEndPoint.Port, new AmqpConnectionOptions
        {
            Sasl = SaslProfile.MsSbCbs,
            HostName = "127.0.0.1",
            OperationTimeout = TimeSpan.FromSeconds(30),
        });
        _session = await _connection.BeginSessionAsync();
        var status = await PutTokenAsync(ServiceBusEmulatorOptions.DevelopmentKey);
        Assert.Equal(202, status);
    }

    public async Task DisposeAsync()
    {
        await _connection.CloseAsync();
        await _emulator.DisposeAsync();
    }

    [Fact]
    public async Task Cbs_answers_with_an_int_status_code_and_refuses_a_token_signed_with_another_key()
    {
        Assert.Equal(401, await PutTokenAsync("some-other-key"));
    }

    [Fact]
    public async Task A_management_request_is_limited_to_four_times_the_namespace_message_size()
    {
        // The request link had no limit: a request split over many frames could grow without bound in the broker.
        var (sender, _, _) = await ManagementAsync();
        var request = new AmqpMessage
        {
            ApplicationProperties = new Dictionary<string, object?> { ["operation"] = ServiceBusAmqpNames.PeekMessageOperation },
            Body = new ValueBody(new byte[1100 * 1024]),
        };

        var error = await Assert.ThrowsAsync<AmqpException>(() => sender.SendAsync(request.ToArray(), [1]));

        Assert.Equal(4UL * 256 * 1024, sender.RemoteMaxMessageSize);
        Assert.Equal(ErrorCondition.MessageSizeExceeded, error.Condition);
    }

    [Fact]
    public async Task Sender_attach_is_answered_with_a_max_message_size_and_credit()
    {
        var sender = await AttachSenderAsync();

        Assert.Equal(256UL * 1024, sender.RemoteMaxMessageSize);
        Assert.True(await TestSupport.Eventually.TrueAsync(() => sender.Credit > 0, TimeSpan.FromSeconds(30)));
    }

    [Fact]
    public async Task Delivery_has_a_guid_lock_token_tag_a_header_delivery_count_and_typed_annotations()
    {
        await SendAsync("typed");
        var receiver = await AttachReceiverAsync();
        receiver.AddCredit(1);

        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));

        Assert.NotNull(delivery);
        Assert.Equal(16, delivery.Tag.Length);
        Assert.False(delivery.RemoteSettled);
        var message = delivery.Message;
        Assert.Equal(0u, message.Header!.DeliveryCount);
        Assert.IsType<long>(message.MessageAnnotations![ServiceBusAmqpNames.SequenceNumber]);
        Assert.IsType<DateTime>(message.MessageAnnotations[ServiceBusAmqpNames.EnqueuedTime]);
        Assert.IsType<DateTime>(message.MessageAnnotations[ServiceBusAmqpNames.LockedUntil]);
    }

    [Fact]
    public async Task Unsettled_complete_is_answered_with_a_settled_accepted()
    {
        await SendAsync("complete me");
        var receiver = await AttachReceiverAsync();
        receiver.AddCredit(1);
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));

        var state = await receiver.DisposeAsync(delivery!, Accepted.Instance).WaitAsync(TimeSpan.FromSeconds(30));

        Assert.IsType<Accepted>(state);
        Assert.True(delivery!.RemoteSettled);
    }

    [Fact]
    public async Task Dead_letter_is_answered_with_rejected_without_an_error()
    {
        await SendAsync("poison");
        var receiver = await AttachReceiverAsync();
        receiver.AddCredit(1);
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));
        var deadLetter = new Rejected
        {
            Error = new Error
            {
                Condition = ServiceBusAmqpNames.DeadLetterError,
                Info = new Dictionary<object, object?> { ["DeadLetterReason"] = "bad", ["DeadLetterErrorDescription"] = "really bad" },
            },
        };

        var state = await receiver.DisposeAsync(delivery!, deadLetter).WaitAsync(TimeSpan.FromSeconds(30));

        var rejected = Assert.IsType<Rejected>(state);
        Assert.Null(rejected.Error);
        Assert.Equal(1, _emulator.GetMetrics()[Queue].DeadLetterMessages);
    }

    [Fact]
    public async Task Drain_is_echoed_with_the_delivery_count_advanced_and_no_credit_left()
    {
        var receiver = await AttachReceiverAsync();
        receiver.AddCredit(10);

        await receiver.DrainAsync().WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(0u, receiver.Credit);
    }

    [Fact]
    public async Task Renew_lock_takes_a_uuid_array_and_answers_with_a_timestamp_array()
    {
        await SendAsync("renew me");
        var receiver = await AttachReceiverAsync();
        receiver.AddCredit(1);
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));
        var management = await ManagementAsync();

        var response = await RequestAsync(management, ServiceBusAmqpNames.RenewLockOperation, new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.LockTokensKey] = new[] { new Guid(delivery!.Tag) },
        }, receiver.Name);

        Assert.Equal(200, response.ApplicationProperties![ServiceBusAmqpNames.ManagementStatusCodeKey]);
        var body = (Dictionary<object, object?>)((ValueBody)response.Body!).Value!;
        var expirations = Assert.IsType<DateTime[]>(body[ServiceBusAmqpNames.ExpirationsKey]);
        Assert.Single(expirations);
        Assert.Equal(_time.GetUtcNow().AddSeconds(30).UtcDateTime, expirations[0]);
    }

    [Fact]
    public async Task Management_reports_a_lost_lock_with_status_410_and_a_symbol_error_condition()
    {
        var management = await ManagementAsync();

        var response = await RequestAsync(management, ServiceBusAmqpNames.RenewLockOperation, new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.LockTokensKey] = new[] { Guid.NewGuid() },
        }, null);

        Assert.Equal(410, response.ApplicationProperties![ServiceBusAmqpNames.ManagementStatusCodeKey]);
        Assert.Equal(ServiceBusAmqpNames.MessageLockLostError, response.ApplicationProperties[ServiceBusAmqpNames.ManagementErrorConditionKey]);
    }

    [Fact]
    public async Task Settling_a_delivery_whose_lock_was_used_up_is_answered_with_rejected_message_lock_lost()
    {
        // AMQPNetLite settles its own dispositions at once, so it never sees this answer; the SDKs wait for it.
        await SendAsync("settled twice");
        var receiver = await AttachReceiverAsync();
        receiver.AddCredit(1);
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));
        var completed = await RequestAsync(await ManagementAsync(), ServiceBusAmqpNames.UpdateDispositionOperation, new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.LockTokensKey] = new[] { new Guid(delivery!.Tag) },
            [ServiceBusAmqpNames.DispositionStatusKey] = ServiceBusAmqpNames.DispositionCompleted,
        }, receiver.Name);

        var state = await receiver.DisposeAsync(delivery, Accepted.Instance).WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(200, completed.ApplicationProperties![ServiceBusAmqpNames.ManagementStatusCodeKey]);
        Assert.Equal("com.microsoft:message-lock-lost", Assert.IsType<Rejected>(state).Error?.Condition.Value);
    }

    [Fact]
    public async Task In_a_session_the_same_settlement_is_answered_with_rejected_session_lock_lost()
    {
        Assert.Equal(202, await PutTokenAsync(ServiceBusEmulatorOptions.DevelopmentKey, SessionQueue));
        var sender = await _session.AttachSenderAsync(new LinkOptions { Name = "s-" + Guid.NewGuid().ToString("N"), Source = new Source { Address = "me" }, Target = new Target { Address = SessionQueue } });
        Assert.IsType<Accepted>(await sender.SendAsync(new AmqpMessage { Properties = new MessageProperties { GroupId = "g" }, Body = new ValueBody("in a session") }.ToArray(), [1]));
        var receiver = await _session.AttachReceiverAsync(new LinkOptions
        {
            Name = "r-" + Guid.NewGuid().ToString("N"),
            Source = new Source { Address = SessionQueue, Filter = new Dictionary<object, object?> { [new AmqpSymbol("com.microsoft:session-filter")] = "g" } },
            Target = new Target { Address = "me" },
            ReceiverSettleMode = ReceiverSettleMode.Second,
        });
        receiver.AddCredit(1);
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));
        var completed = await RequestAsync(await ManagementLinksAsync(SessionQueue + ServiceBusAmqpNames.ManagementNodeSuffix), ServiceBusAmqpNames.UpdateDispositionOperation, new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.LockTokensKey] = new[] { new Guid(delivery!.Tag) },
            [ServiceBusAmqpNames.DispositionStatusKey] = ServiceBusAmqpNames.DispositionCompleted,
            [ServiceBusAmqpNames.SessionIdKey] = "g",
        }, receiver.Name);

        var state = await receiver.DisposeAsync(delivery, Accepted.Instance).WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(200, completed.ApplicationProperties![ServiceBusAmqpNames.ManagementStatusCodeKey]);
        Assert.Equal("com.microsoft:session-lock-lost", Assert.IsType<Rejected>(state).Error?.Condition.Value);
    }

    [Fact]
    public async Task Batch_transfer_is_unpacked_into_separate_messages()
    {
        var sender = await AttachSenderAsync();
        var inner = Enumerable.Range(0, 3).Select(i => (ReadOnlyMemory<byte>)new AmqpMessage { Properties = new MessageProperties { MessageId = $"b{i}" }, Body = new DataBody(new byte[] { (byte)i }) }.ToArray()).ToList();
        var envelope = new AmqpMessage { Properties = new MessageProperties { MessageId = "b0" }, Body = new DataBody(inner) }.ToArray();

        var outcome = await sender.SendAsync(envelope, [1, 0, 0, 0], ServiceBusAmqpNames.BatchMessageFormat);

        Assert.IsType<Accepted>(outcome);
        Assert.Equal(3, _emulator.GetMetrics()[Queue].ActiveMessages);
    }

    [Fact]
    public async Task Attaching_to_an_unknown_entity_is_refused_with_not_found()
    {
        var error = await Assert.ThrowsAsync<AmqpException>(() => _session.AttachReceiverAsync(new LinkOptions
        {
            Name = "missing",
            Source = new Source { Address = "missing-queue" },
            Target = new Target { Address = "me" },
            ReceiverSettleMode = ReceiverSettleMode.Second,
        }));

        Assert.Equal(ErrorCondition.NotFound, error.Condition);
    }

    private async Task<int> PutTokenAsync(string key, string entity = Queue)
    {
        var cbs = await ManagementLinksAsync(ServiceBusAmqpNames.CbsNode);
        var audience = $"sb://127.0.0.1:{_emulator.AmqpEndPoint.Port}/{entity}";
        var token = SharedAccessSignature.Create(audience, ServiceBusEmulatorOptions.DefaultKeyName, key, TimeSpan.FromHours(1));
        var request = new AmqpMessage
        {
            ApplicationProperties = new Dictionary<string, object?>
            {
                ["operation"] = "put-token",
                ["type"] = ServiceBusAmqpNames.SasTokenType,
                ["name"] = audience,
            },
            Body = new ValueBody(token.ToString()),
        };
        var response = await RequestAsync(cbs, request);
        return Assert.IsType<int>(response.ApplicationProperties![ServiceBusAmqpNames.CbsStatusCodeKey]);
    }

    private Task<(SenderLink, ReceiverLink, string)> ManagementAsync() => ManagementLinksAsync(Queue + ServiceBusAmqpNames.ManagementNodeSuffix);

    private async Task<(SenderLink Sender, ReceiverLink Receiver, string ReplyTo)> ManagementLinksAsync(string node)
    {
        var id = Guid.NewGuid().ToString("N");
        var sender = await _session.AttachSenderAsync(new LinkOptions { Name = id + ":sender", Source = new Source { Address = id }, Target = new Target { Address = node } });
        var receiver = await _session.AttachReceiverAsync(new LinkOptions { Name = id + ":receiver", Source = new Source { Address = node }, Target = new Target { Address = id + "-reply" } });
        receiver.AddCredit(10);
        return (sender, receiver, id + "-reply");
    }

    private static Task<AmqpMessage> RequestAsync((SenderLink, ReceiverLink, string) links, string operation, Dictionary<object, object?> body, string? associatedLink) =>
        RequestAsync(links, new AmqpMessage
        {
            ApplicationProperties = new Dictionary<string, object?> { ["operation"] = operation, ["associated-link-name"] = associatedLink },
            Body = new ValueBody(body),
        });

    private static async Task<AmqpMessage> RequestAsync((SenderLink Sender, ReceiverLink Receiver, string ReplyTo) links, AmqpMessage request)
    {
        var id = Guid.NewGuid().ToString();
        request.EnsureProperties().MessageId = id;
        request.Properties!.ReplyTo = links.ReplyTo;
        await links.Sender.SendAsync(request.ToArray(), [1]);
        var response = await links.Receiver.ReceiveAsync(TimeSpan.FromSeconds(30));
        Assert.NotNull(response);
        Assert.Equal(id, response.Message.Properties!.CorrelationId);
        return response.Message;
    }

    private Task<SenderLink> AttachSenderAsync() => _session.AttachSenderAsync(new LinkOptions
    {
        Name = "sender-" + Guid.NewGuid().ToString("N"),
        Source = new Source { Address = "me" },
        Target = new Target { Address = "/" + Queue },
    });

    private Task<ReceiverLink> AttachReceiverAsync() => _session.AttachReceiverAsync(new LinkOptions
    {
        Name = "receiver-" + Guid.NewGuid().ToString("N"),
        Source = new Source { Address = Queue },
        Target = new Target { Address = "me" },
        ReceiverSettleMode = ReceiverSettleMode.Second,
    });

    private async Task SendAsync(string text)
    {
        var sender = await AttachSenderAsync();
        Assert.IsType<Accepted>(await sender.SendAsync(new AmqpMessage { Body = new ValueBody(text) }.ToArray(), [1]));
    }
}
