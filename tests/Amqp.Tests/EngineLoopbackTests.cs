using DroneDelivery.Amqp.Codec;
using DroneDelivery.Amqp.Framing;
using DroneDelivery.Amqp.Messaging;

namespace DroneDelivery.Amqp.Tests;

public sealed class EngineLoopbackTests
{
    private static AmqpConnectionOptions Client(SaslProfile? sasl = null, uint maxFrame = 64 * 1024) =>
        new() { Sasl = sasl ?? SaslProfile.Anonymous, MaxFrameSize = maxFrame, OperationTimeout = TimeSpan.FromSeconds(10) };

    private static byte[] Encode(string text, uint? deliveryCount = null)
    {
        var message = new AmqpMessage
        {
            Header = deliveryCount is null ? null : new MessageHeader { DeliveryCount = deliveryCount },
            Properties = new MessageProperties { MessageId = text },
            Body = new ValueBody(text),
        };
        return message.ToArray();
    }

    [Fact]
    public async Task Sent_message_is_stored_and_the_send_completes_with_accepted()
    {
        await using var broker = new LoopbackBroker();
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "s1", Source = new Source { Address = "me" }, Target = new Target { Address = "queue" } });

        var outcome = await sender.SendAsync(Encode("hello"), [1, 2, 3, 4]);

        Assert.IsType<Accepted>(outcome);
        Assert.True(broker.Stored.TryDequeue(out var stored));
        Assert.Equal("hello", ((ValueBody)stored.Message.Body!).Value);
        Assert.Equal(new byte[] { 1, 2, 3, 4 }, stored.Tag);
        Assert.Equal(1024UL * 1024, sender.RemoteMaxMessageSize);
    }

    [Fact]
    public async Task Message_larger_than_a_frame_is_split_into_transfers_and_reassembled()
    {
        await using var broker = new LoopbackBroker();
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client(maxFrame: 512));
        var session = await connection.BeginSessionAsync();
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "big", Target = new Target { Address = "queue" }, Source = new Source() });
        var body = new byte[200_000];
        Random.Shared.NextBytes(body);
        var payload = new AmqpMessage { Body = new DataBody(body) }.ToArray();

        await sender.SendAsync(payload, [9]);

        Assert.True(broker.Stored.TryDequeue(out var stored));
        Assert.Equal(body, ((DataBody)stored.Message.Body!).Combined().ToArray());
    }

    [Fact]
    public async Task Attach_to_an_unknown_node_fails_with_the_brokers_error()
    {
        await using var broker = new LoopbackBroker();
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();

        var error = await Assert.ThrowsAsync<AmqpException>(() =>
            session.AttachReceiverAsync(new LinkOptions { Name = "r", Source = new Source { Address = "nowhere" }, Target = new Target() }));

        Assert.Equal(ErrorCondition.NotFound, error.Condition);
    }

    [Fact]
    public async Task Receiver_gets_messages_only_within_its_credit()
    {
        await using var broker = new LoopbackBroker();
        for (var i = 0; i < 5; i++)
        {
            broker.ToDeliver.Enqueue(Encode("m" + i));
        }

        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();
        var receiver = await session.AttachReceiverAsync(new LinkOptions { Name = "r", Source = new Source { Address = "queue" }, Target = new Target(), ReceiverSettleMode = ReceiverSettleMode.Second });

        receiver.AddCredit(2);
        var first = await receiver.ReceiveAsync(TimeSpan.FromSeconds(5));
        var second = await receiver.ReceiveAsync(TimeSpan.FromSeconds(5));
        var third = await receiver.ReceiveAsync(TimeSpan.FromMilliseconds(300));

        Assert.Equal("m0", ((ValueBody)first!.Message.Body!).Value);
        Assert.Equal("m1", ((ValueBody)second!.Message.Body!).Value);
        Assert.Null(third);
        Assert.Equal(3, broker.ToDeliver.Count);
    }

    [Fact]
    public async Task Unsettled_disposition_completes_with_the_state_the_sender_answers()
    {
        await using var broker = new LoopbackBroker();
        broker.ToDeliver.Enqueue(Encode("x"));
        broker.ReplyState = _ => new Rejected { Error = new Error { Condition = "com.microsoft:message-lock-lost", Description = "lock expired" } };
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();
        var receiver = await session.AttachReceiverAsync(new LinkOptions { Name = "r", Source = new Source { Address = "queue" }, Target = new Target(), ReceiverSettleMode = ReceiverSettleMode.Second });
        receiver.AddCredit(1);
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(5));

        var state = await receiver.DisposeAsync(delivery!, Accepted.Instance).WaitAsync(TimeSpan.FromSeconds(5));

        var rejected = Assert.IsType<Rejected>(state);
        Assert.Equal("com.microsoft:message-lock-lost", rejected.Error!.Condition.Value);
        Assert.True(broker.Outcomes.TryDequeue(out var outcome));
        Assert.IsType<Accepted>(outcome.State);
    }

    [Fact]
    public async Task Drain_completes_when_the_sender_echoes_a_flow_with_credit_used_up()
    {
        await using var broker = new LoopbackBroker();
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();
        var receiver = await session.AttachReceiverAsync(new LinkOptions { Name = "r", Source = new Source { Address = "queue" }, Target = new Target() });
        receiver.AddCredit(50);

        await receiver.DrainAsync().WaitAsync(TimeSpan.FromSeconds(5));

        Assert.Equal(0u, receiver.Credit);
        Assert.Contains("drain", broker.Events);
    }

    [Fact]
    public async Task Drain_does_not_complete_until_the_sender_answers()
    {
        await using var broker = new LoopbackBroker { AnswerDrains = false };
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();
        var receiver = await session.AttachReceiverAsync(new LinkOptions { Name = "r", Source = new Source { Address = "queue" }, Target = new Target() });
        receiver.AddCredit(5);

        var drain = receiver.DrainAsync();

        // Frames are handled in order on both sides: once a later attach is answered, the broker has
        // seen the drain, and an answer to it would already have taken the link's credit to zero.
        await session.AttachReceiverAsync(new LinkOptions { Name = "marker", Source = new Source { Address = "queue" }, Target = new Target() });
        Assert.Equal(5u, receiver.Credit);
        Assert.False(drain.IsCompleted);
    }

    [Fact]
    public async Task Pre_settled_receiver_gets_settled_deliveries()
    {
        await using var broker = new LoopbackBroker();
        broker.ToDeliver.Enqueue(Encode("rad"));
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client());
        var session = await connection.BeginSessionAsync();
        var receiver = await session.AttachReceiverAsync(new LinkOptions { Name = "r", Source = new Source { Address = "queue" }, Target = new Target(), SenderSettleMode = SenderSettleMode.Settled });
        receiver.AddCredit(1);

        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(5));

        Assert.True(delivery!.RemoteSettled);
    }

    [Fact]
    public async Task Plain_sasl_with_a_wrong_password_is_refused()
    {
        await using var broker = new LoopbackBroker([SaslMechanism.Plain((user, password) => user == "u" && password == "p")]);

        await Assert.ThrowsAsync<AmqpException>(() => AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client(SaslProfile.Plain("u", "wrong"))));
        await using var ok = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client(SaslProfile.Plain("u", "p")));
        Assert.False(ok.IsClosed);
    }

    [Fact]
    public async Task Heartbeats_keep_an_idle_connection_open_past_the_idle_timeout()
    {
        // Both sides close after 1.5 s of silence; the 5 s wait spans three of those windows, so only
        // heartbeats keep the connection alive.
        await using var broker = new LoopbackBroker(connection: new AmqpConnectionOptions { IdleTimeout = TimeSpan.FromMilliseconds(1500) });
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client() with { IdleTimeout = TimeSpan.FromMilliseconds(1500) });

        await Task.Delay(5000);

        Assert.False(connection.IsClosed);
        Assert.Single(broker.Connections);
    }
}

public sealed class SessionWindowTests
{
    [Fact]
    public async Task Transfers_beyond_a_small_session_window_wait_for_the_peers_flow_and_all_arrive()
    {
        await using var broker = new LoopbackBroker(connection: new AmqpConnectionOptions { SessionWindow = 4 });
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, new AmqpConnectionOptions { Sasl = SaslProfile.Anonymous, OperationTimeout = TimeSpan.FromSeconds(10) });
        var session = await connection.BeginSessionAsync();
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "w", Source = new Framing.Source(), Target = new Framing.Target { Address = "queue" } });

        var sends = Enumerable.Range(0, 50).Select(i => sender.SendAsync(new Messaging.AmqpMessage { Body = new Messaging.ValueBody(i) }.ToArray(), BitConverter.GetBytes(i))).ToList();
        await Task.WhenAll(sends).WaitAsync(TimeSpan.FromSeconds(10));

        Assert.Equal(50, broker.Stored.Count);
        Assert.Equal(Enumerable.Range(0, 50), broker.Stored.Select(d => (int)((Messaging.ValueBody)d.Message.Body!).Value!));
    }
}
