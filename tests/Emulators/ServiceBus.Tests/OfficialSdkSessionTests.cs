using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;
using Sdk = Azure.Messaging.ServiceBus;
using static DroneDelivery.Emulators.ServiceBus.Tests.SdkReceiving;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Message sessions through the official .NET SDK (<see cref="Sdk.ServiceBusSessionReceiver"/>,
/// <see cref="Sdk.ServiceBusSessionProcessor"/>), each test checking a behaviour the service documents. The emulator
/// runs on a fake clock the tests move; the SDK keeps the real one.
/// </summary>
public sealed class OfficialSdkSessionTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task AcceptSessionAsync_receives_that_session_only_in_order_with_its_lock_from_the_emulator_clock()
    {
        // Documented: a session receiver gets the messages of its session only, first in, first out.
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessagesAsync([Message("a-1", "A"), Message("b-1", "B"), Message("a-2", "A"), Message("a-3", "A")]);

        await using var receiver = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "A");
        var received = await ReceiveAsync(receiver, 3, complete: true);
        await using var other = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "B");
        var peekB = await other.PeekMessageAsync();

        Assert.Equal("A", receiver.SessionId);
        Assert.Equal(scope.Time.GetUtcNow() + SessionScope.LockDuration, receiver.SessionLockedUntil);
        Assert.Equal(["a-1", "a-2", "a-3"], received.Select(m => m.Body.ToString()));
        Assert.All(received, m => Assert.Equal("A", m.SessionId));
        Assert.All(received, m => Assert.Equal(receiver.SessionLockedUntil, m.LockedUntil));
        Assert.Equal("b-1", peekB!.Body.ToString());
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 3, Bound));
    }

    [Fact]
    public async Task AcceptNextSessionAsync_takes_the_free_session_with_the_oldest_message_and_names_it()
    {
        // Documented: the next available session is one with messages that no other receiver holds.
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessagesAsync([Message("first", "older"), Message("second", "newer")]);

        await using var first = await scope.Client.AcceptNextSessionAsync(SessionScope.Queue);
        await using var second = await scope.Client.AcceptNextSessionAsync(SessionScope.Queue);
        var fromFirst = await first.ReceiveMessageAsync(Bound);
        var fromSecond = await second.ReceiveMessageAsync(Bound);

        Assert.Equal("older", first.SessionId);
        Assert.Equal("newer", second.SessionId);
        Assert.Equal("first", fromFirst!.Body.ToString());
        Assert.Equal("second", fromSecond!.Body.ToString());
        Assert.Equal(2, scope.Emulator.GetMetrics()[SessionScope.Queue].LockedSessions);
    }

    [Fact]
    public async Task A_session_held_by_one_receiver_cannot_be_accepted_by_another_and_the_connection_keeps_working()
    {
        // Documented: a session is locked by one receiver at a time; another gets SessionCannotBeLocked.
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessageAsync(Message("only", "held"));
        await using var holder = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "held");

        var error = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => scope.Client.AcceptSessionAsync(SessionScope.Queue, "held"));
        var received = await holder.ReceiveMessageAsync(Bound);
        await holder.CompleteMessageAsync(received!);
        await holder.DisposeAsync();
        await using var next = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "held");

        Assert.Equal(Sdk.ServiceBusFailureReason.SessionCannotBeLocked, error.Reason);
        Assert.Equal("held", next.SessionId);
        Assert.Equal(1, scope.Emulator.ConnectionCount);
    }

    [Fact]
    public async Task Session_state_is_set_read_cleared_and_outlives_the_receiver_that_set_it()
    {
        // Documented: the state is stored with the session until it is set to null, whoever holds the session.
        await using var scope = await SessionScope.StartAsync();
        await using (var receiver = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "stateful"))
        {
            Assert.Null(await receiver.GetSessionStateAsync());
            await receiver.SetSessionStateAsync(new BinaryData("step 2 of 3"u8.ToArray()));
        }

        await using var again = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "stateful");
        var kept = await again.GetSessionStateAsync();
        await again.SetSessionStateAsync(null);
        var cleared = await again.GetSessionStateAsync();

        Assert.Equal("step 2 of 3", kept!.ToString());
        Assert.Null(cleared);
    }

    [Fact]
    public async Task RenewSessionLockAsync_moves_the_session_lock_and_the_locks_of_its_messages_on_the_emulator_clock()
    {
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessageAsync(Message("long job", "renewed"));
        await using var receiver = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "renewed");
        var message = await receiver.ReceiveMessageAsync(Bound);

        scope.Time.Advance(TimeSpan.FromSeconds(20));
        await receiver.RenewSessionLockAsync();
        scope.Time.Advance(TimeSpan.FromSeconds(20)); // past the first lock, within the renewed one
        await receiver.CompleteMessageAsync(message!);

        Assert.Equal(scope.Time.GetUtcNow() - TimeSpan.FromSeconds(20) + SessionScope.LockDuration, receiver.SessionLockedUntil);
        Assert.Equal(1, scope.Metrics.Counters.SessionLockRenewals);
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 1, Bound));
    }

    [Fact]
    public async Task An_expired_session_lock_ends_the_session_receiver_and_the_message_returns_to_the_session()
    {
        // As on the service, the receiver's link is detached with com.microsoft:session-lock-lost when the session lock
        // expires; the SDK then treats the session receiver as closed (a session link is never reopened), and the
        // session's messages go to the next receiver with their delivery count up. The condition itself is asserted
        // on the wire in WireConditionTests.
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessageAsync(Message("too slow", "lapsed"));
        await using var receiver = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "lapsed");
        var message = await receiver.ReceiveMessageAsync(Bound);

        scope.Time.Advance(SessionScope.LockDuration + TimeSpan.FromSeconds(1));
        Assert.True(await Eventually.TrueAsync(() => receiver.IsClosed, Bound));
        await Assert.ThrowsAsync<ObjectDisposedException>(() => receiver.CompleteMessageAsync(message!));
        await using var next = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "lapsed");
        var again = await next.ReceiveMessageAsync(Bound);
        await next.CompleteMessageAsync(again!);

        Assert.Equal(1, scope.Metrics.Counters.SessionLockExpirations);
        Assert.Equal(message!.SequenceNumber, again!.SequenceNumber);
        Assert.Equal(2, again.DeliveryCount);
    }

    [Fact]
    public async Task Abandoned_and_deferred_session_messages_keep_the_session_order_and_peek_stays_in_the_session()
    {
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessagesAsync([Message("1", "ordered"), Message("2", "ordered"), Message("other", "elsewhere"), Message("3", "ordered")]);
        await using var receiver = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "ordered");

        var first = await receiver.ReceiveMessageAsync(Bound);
        await receiver.AbandonMessageAsync(first!);
        var firstAgain = await receiver.ReceiveMessageAsync(Bound);
        await receiver.DeferMessageAsync(firstAgain!);
        var peeked = await receiver.PeekMessagesAsync(10, fromSequenceNumber: 1);
        var rest = await ReceiveAsync(receiver, 2, complete: true);
        var deferred = await receiver.ReceiveDeferredMessageAsync(firstAgain!.SequenceNumber);
        await receiver.CompleteMessageAsync(deferred);

        Assert.Equal("1", firstAgain.Body.ToString());
        Assert.Equal(2, firstAgain.DeliveryCount);
        Assert.Equal(["1", "2", "3"], peeked.Select(m => m.Body.ToString()));
        Assert.Equal(["2", "3"], rest.Select(m => m.Body.ToString()));
        Assert.Equal("1", deferred.Body.ToString());
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 1, Counters.Completed: 3 }, Bound));
    }

    [Fact]
    public async Task A_message_without_a_SessionId_is_refused_by_a_session_queue_as_the_service_refuses_it()
    {
        // The service answers InvalidOperationException: "The SessionId was not set on a message, and it cannot be sent to the entity..."
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);

        var single = await Assert.ThrowsAsync<InvalidOperationException>(() => sender.SendMessageAsync(new Sdk.ServiceBusMessage("no session")));
        var batch = await Assert.ThrowsAsync<InvalidOperationException>(() => sender.SendMessagesAsync([Message("has one", "s"), new Sdk.ServiceBusMessage("has none")]));
        var scheduled = await Assert.ThrowsAsync<InvalidOperationException>(() => sender.ScheduleMessageAsync(new Sdk.ServiceBusMessage("later"), DateTimeOffset.UtcNow.AddHours(1)));
        await sender.SendMessageAsync(Message("marker", "s"));

        Assert.Contains("SessionId was not set", single.Message, StringComparison.Ordinal);
        Assert.Contains("SessionId was not set", batch.Message, StringComparison.Ordinal);
        Assert.Contains("SessionId was not set", scheduled.Message, StringComparison.Ordinal);
        Assert.Equal(1, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task A_plain_receiver_on_a_session_queue_and_a_session_receiver_on_a_plain_queue_are_refused_and_the_connection_kept()
    {
        await using var scope = await SessionScope.StartAsync();
        await using var plain = scope.Client.CreateReceiver(SessionScope.Queue);
        await using var sender = scope.Client.CreateSender(SessionScope.PlainQueue);

        var receive = await Assert.ThrowsAsync<InvalidOperationException>(() => plain.ReceiveMessageAsync(Bound));
        var accept = await Assert.ThrowsAsync<InvalidOperationException>(async () => await scope.Client.AcceptSessionAsync(SessionScope.PlainQueue, "s-1"));
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("after"));

        Assert.Contains("requires sessions", receive.Message, StringComparison.Ordinal);
        Assert.Contains("does not require sessions", accept.Message, StringComparison.Ordinal);
        Assert.Equal(1, scope.Emulator.GetMetrics()[SessionScope.PlainQueue].ActiveMessages);
        Assert.Equal(1, scope.Emulator.ConnectionCount);
    }

    [Fact]
    public async Task AcceptNextSessionAsync_with_no_session_available_fails_with_ServiceTimeout_and_the_client_carries_on()
    {
        // Documented: AcceptNextSessionAsync throws ServiceBusException (ServiceTimeout) when no session is available
        // within the try timeout. Here the emulator keeps the real clock: its wait is the one the SDK asks for.
        await using var scope = await SessionScope.StartAsync(time: TimeProvider.System);
        await using var client = new Sdk.ServiceBusClient(scope.Emulator.ConnectionString, new Sdk.ServiceBusClientOptions
        {
            RetryOptions = new Sdk.ServiceBusRetryOptions { Mode = Sdk.ServiceBusRetryMode.Fixed, TryTimeout = TimeSpan.FromSeconds(5), MaxRetries = 0 },
        });

        var error = await Assert.ThrowsAsync<Sdk.ServiceBusException>(async () => await client.AcceptNextSessionAsync(SessionScope.Queue));
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessageAsync(Message("now there is one", "late"));
        await using var receiver = await client.AcceptNextSessionAsync(SessionScope.Queue);

        Assert.Equal(Sdk.ServiceBusFailureReason.ServiceTimeout, error.Reason);
        Assert.Equal("late", receiver.SessionId);
    }

    [Fact]
    public async Task Session_processor_with_MaxConcurrentSessions_handles_every_session_in_order_and_no_more_sessions_at_once()
    {
        await using var scope = await SessionScope.StartAsync(time: TimeProvider.System);
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        var sessions = new[] { "north", "south", "east", "west" };
        await sender.SendMessagesAsync(Enumerable.Range(0, 5).SelectMany(i => sessions.Select(s => Message($"{s}-{i}", s))));
        var seen = new System.Collections.Concurrent.ConcurrentDictionary<string, List<string>>();
        var open = 0;
        var mostOpen = 0;
        var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var total = 0;
        await using var processor = scope.Client.CreateSessionProcessor(SessionScope.Queue, new Sdk.ServiceBusSessionProcessorOptions
        {
            MaxConcurrentSessions = 2,
            SessionIdleTimeout = TimeSpan.FromSeconds(1),
            AutoCompleteMessages = true,
        });
        processor.SessionInitializingAsync += _ =>
        {
            var now = Interlocked.Increment(ref open);
            InterlockedMax(ref mostOpen, now);
            return Task.CompletedTask;
        };
        processor.SessionClosingAsync += _ =>
        {
            Interlocked.Decrement(ref open);
            return Task.CompletedTask;
        };
        processor.ProcessMessageAsync += args =>
        {
            Assert.Equal(args.SessionId, args.Message.SessionId);
            var list = seen.GetOrAdd(args.SessionId, _ => []);
            lock (list)
            {
                list.Add(args.Message.Body.ToString());
            }

            if (Interlocked.Increment(ref total) == 20)
            {
                done.TrySetResult();
            }

            return Task.CompletedTask;
        };
        processor.ProcessErrorAsync += args =>
        {
            if (args.Exception is not Sdk.ServiceBusException { Reason: Sdk.ServiceBusFailureReason.ServiceTimeout })
            {
                done.TrySetException(args.Exception);
            }

            return Task.CompletedTask;
        };

        await processor.StartProcessingAsync();
        await done.Task.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 0, Counters.Completed: 20 }, Bound), $"{scope.Metrics}");
        await processor.StopProcessingAsync();

        Assert.Equal(sessions.Order(), seen.Keys.Order());
        Assert.All(sessions, s => Assert.Equal(Enumerable.Range(0, 5).Select(i => $"{s}-{i}"), seen[s]));
        Assert.InRange(mostOpen, 1, 2);
    }

    [Fact]
    public async Task A_session_subscription_takes_session_copies_and_dead_letters_a_copy_without_a_SessionId()
    {
        // Documented: a message without a SessionId routed to a session-enabled subscription is dead-lettered
        // ("Session id is null.").
        await using var scope = await SessionScope.StartAsync();
        await using var sender = scope.Client.CreateSender(SessionScope.Topic);
        await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("no session"), Message("with session", "drone-7")]);

        await using var receiver = await scope.Client.AcceptNextSessionAsync(SessionScope.Topic, SessionScope.Subscription);
        var received = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(received!);
        await using var dlq = scope.Client.CreateReceiver(SessionScope.Topic, SessionScope.Subscription, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        var deadLettered = await dlq.ReceiveMessageAsync(Bound);

        Assert.Equal("drone-7", receiver.SessionId);
        Assert.Equal("with session", received!.Body.ToString());
        Assert.Equal("no session", deadLettered!.Body.ToString());
        Assert.Equal("Session id is null.", deadLettered.DeadLetterReason);
    }

    [Fact]
    public async Task Session_gauges_and_counters_appear_per_entity_in_json_and_prometheus()
    {
        await using var scope = await SessionScope.StartAsync(http: true);
        await using var sender = scope.Client.CreateSender(SessionScope.Queue);
        await sender.SendMessagesAsync([Message("a", "one"), Message("b", "two")]);
        await using var receiver = await scope.Client.AcceptSessionAsync(SessionScope.Queue, "one");
        await receiver.RenewSessionLockAsync();

        var json = scope.Metrics;
        var samples = await PrometheusScrape.SamplesAsync(scope.Emulator);

        Assert.Equal(2, json.ActiveSessions);
        Assert.Equal(1, json.LockedSessions);
        Assert.Equal(1, json.Counters.SessionLockRenewals);
        Assert.Equal(2, samples.Of(EmulatorMetricNames.ActiveSessions, SessionScope.Queue));
        Assert.Equal(1, samples.Of(EmulatorMetricNames.LockedSessions, SessionScope.Queue));
        Assert.Equal(1, samples.Of(EmulatorMetricNames.SessionLockRenewals, SessionScope.Queue));
        Assert.Equal(0, samples.Of(EmulatorMetricNames.LockedSessions, SessionScope.PlainQueue));
    }

    private static Sdk.ServiceBusMessage Message(string body, string sessionId) => new(body) { SessionId = sessionId };
}

/// <summary>
/// An in-process emulator with a session queue, a plain queue and a topic with a session subscription and a plain one,
/// and an official SDK client.
/// </summary>
internal sealed class SessionScope : IAsyncDisposable
{
    public const string Queue = "sessions";
    public const string PlainQueue = "plain";
    public const string Topic = "convoys";
    public const string Subscription = "by-drone";
    public const string PlainSubscription = "all";

    public static readonly TimeSpan LockDuration = TimeSpan.FromSeconds(30);

    private SessionScope(ServiceBusEmulator emulator, Sdk.ServiceBusClient client, TimeProvider time)
    {
        Emulator = emulator;
        Client = client;
        Clock = time;
    }

    public ServiceBusEmulator Emulator { get; }

    public Sdk.ServiceBusClient Client { get; }

    public TimeProvider Clock { get; }

    /// <summary>The emulator's fake clock (tests that need the real one start with <see cref="TimeProvider.System"/> and do not use this).</summary>
    public FakeTimeProvider Time => (FakeTimeProvider)Clock;

    public QueueMetricsSnapshot Metrics => Emulator.GetMetrics()[Queue];

    public static ServiceBusEmulatorOptions Options(TimeProvider time, bool http = false) => new()
    {
        HttpPort = http ? 0 : null,
        TimeProvider = time,
        Queues =
        [
            new QueueOptions { Name = Queue, RequiresSession = true, LockDuration = LockDuration, MaxDeliveryCount = 10 },
            new QueueOptions { Name = PlainQueue },
        ],
        Topics =
        [
            new TopicOptions
            {
                Name = Topic,
                Subscriptions =
                [
                    new SubscriptionOptions { Name = Subscription, RequiresSession = true, LockDuration = LockDuration },
                    new SubscriptionOptions { Name = PlainSubscription },
                ],
            },
        ],
    };

    /// <summary>
    /// Starts on a fake clock at a whole millisecond (AMQP timestamps carry milliseconds), unless given another;
    /// with <paramref name="http"/>, also the HTTP endpoint (metrics).
    /// </summary>
    public static async Task<SessionScope> StartAsync(TimeProvider? time = null, bool http = false)
    {
        time ??= new FakeTimeProvider(DateTimeOffset.FromUnixTimeMilliseconds(DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()));
        var emulator = await ServiceBusEmulator.StartAsync(Options(time, http));
        return new SessionScope(emulator, new Sdk.ServiceBusClient(emulator.ConnectionString, new Sdk.ServiceBusClientOptions
        {
            RetryOptions = new Sdk.ServiceBusRetryOptions { Mode = Sdk.ServiceBusRetryMode.Fixed, TryTimeout = TimeSpan.FromSeconds(30), MaxRetries = 1, Delay = TimeSpan.FromMilliseconds(100) },
        }), time);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Emulator.DisposeAsync();
    }
}
