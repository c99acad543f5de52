using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests;

public sealed class EngineLoopbackTests
{
    private static AmqpConnectionOptions Client(SaslProfile? sasl = null, uint maxFrame = 64 * 1024) =>
        new() { Sasl = sasl ?? SaslProfile.Anonymous, MaxFrameSize = maxFrame, OperationTimeout = TimeSpan.FromSeconds(30) };

    /// <summary>Bounds a wait for something that must happen, so a bug fails the test instead of hanging it.</summary>
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

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
        var first = await receiver.ReceiveAsync(Bound);
        var second = await receiver.ReceiveAsync(Bound);

        // Frames are handled in order on both sides: the broker sends what the flow allows before it
        // answers a later attach, so once that answer is here a third transfer would be too.
        await session.AttachReceiverAsync(new LinkOptions { Name = "marker", Source = new Source { Address = "queue" }, Target = new Target() });

        Assert.Equal("m0", ((ValueBody)first!.Message.Body!).Value);
        Assert.Equal("m1", ((ValueBody)second!.Message.Body!).Value);
        Assert.False(receiver.TryReceive(out _));
        Assert.Equal(0u, receiver.Credit);
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
        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));

        var state = await receiver.DisposeAsync(delivery!, Accepted.Instance).WaitAsync(TimeSpan.FromSeconds(30));

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

        await receiver.DrainAsync().WaitAsync(TimeSpan.FromSeconds(30));

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

        var delivery = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));

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
        // Both sides close after 1.5 s without a frame and ask the peer for one every 0.75 s. On a shared
        // fake clock the test moves time 6 s in 0.5 s steps (four idle time-outs) and after each step waits
        // until each side has the other's heartbeat, so nothing but heartbeats keeps the connection open,
        // however slow the machine.
        var time = new FakeTimeProvider();
        var idle = TimeSpan.FromMilliseconds(1500);
        await using var broker = new LoopbackBroker(connection: new AmqpConnectionOptions { IdleTimeout = idle, TimeProvider = time });
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client() with { IdleTimeout = idle, TimeProvider = time });
        Assert.True(await Eventually.TrueAsync(() => broker.Connections.Count == 1, Bound));
        var served = broker.Connections.Single();
        Assert.Equal(750u, connection.RemoteOpen!.IdleTimeOut);

        for (var step = 1; step <= 12; step++)
        {
            time.Advance(TimeSpan.FromMilliseconds(500));
            var expected = step;
            Assert.True(await Eventually.TrueAsync(() => connection.HeartbeatsReceived >= expected && served.HeartbeatsReceived >= expected, Bound),
                $"step {step}: client has {connection.HeartbeatsReceived} heartbeats, broker {served.HeartbeatsReceived}; errors {connection.Error?.Description} / {served.Error?.Description}");
        }

        Assert.Null(connection.Error);
        Assert.Null(served.Error);
        Assert.False(connection.IsClosed);
        Assert.Single(broker.Connections);
    }

    [Fact]
    public async Task Without_heartbeats_from_the_peer_the_idle_timeout_closes_the_connection()
    {
        // The broker has no idle time-out of its own, and its clock never moves, so it never sends the client the
        // heartbeats the client's open asks for: on a shared clock they would reach the client in real time, as
        // late as a busy machine makes them, and reset its idle check. The client closes once its own clock passes
        // 1.5 s without a frame, and not before.
        var time = new FakeTimeProvider();
        await using var broker = new LoopbackBroker(connection: new AmqpConnectionOptions { IdleTimeout = TimeSpan.Zero, TimeProvider = new FakeTimeProvider() });
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, Client() with { IdleTimeout = TimeSpan.FromMilliseconds(1500), TimeProvider = time });

        // Timer callbacks run inside Advance, so each check has run when it returns.
        time.Advance(TimeSpan.FromMilliseconds(1400));
        Assert.Null(connection.Error);
        time.Advance(TimeSpan.FromMilliseconds(1000));

        await connection.Completion.WaitAsync(Bound);
        Assert.Equal(ErrorCondition.ResourceLimitExceeded, connection.Error!.Condition);
        Assert.Equal(0, connection.HeartbeatsReceived);
    }
}

public sealed class SessionWindowTests
{
    [Fact]
    public async Task Transfers_beyond_a_small_session_window_wait_for_the_peers_flow_and_all_arrive()
    {
        await using var broker = new LoopbackBroker(connection: new AmqpConnectionOptions { SessionWindow = 4 });
        await using var connection = await AmqpConnection.ConnectAsync("127.0.0.1", broker.Port, new AmqpConnectionOptions { Sasl = SaslProfile.Anonymous, OperationTimeout = TimeSpan.FromSeconds(30) });
        var session = await connection.BeginSessionAsync();
        var sender = await session.AttachSenderAsync(new LinkOptions { Name = "w", Source = new Framing.Source(), Target = new Framing.Target { Address = "queue" } });

        var sends = Enumerable.Range(0, 50).Select(i => sender.SendAsync(new Messaging.AmqpMessage { Body = new Messaging.ValueBody(i) }.ToArray(), BitConverter.GetBytes(i))).ToList();
        await Task.WhenAll(sends).WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(50, broker.Stored.Count);
        Assert.Equal(Enumerable.Range(0, 50), broker.Stored.Select(d => (int)((Messaging.ValueBody)d.Message.Body!).Value!));
    }
}
