using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;
using Sdk = Azure.Messaging.ServiceBus;
using static DroneDelivery.Emulators.ServiceBus.Tests.SdkReceiving;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The emulator driven by Azure.Messaging.ServiceBus, the official .NET client it stands in for, exactly as an
/// application would use it: a connection string with <c>UseDevelopmentEmulator=true</c> and nothing else.
/// </summary>
public sealed class OfficialSdkTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Connection_string_with_UseDevelopmentEmulator_keeps_the_emulator_port()
    {
        await using var scope = await EmulatorScope.StartAsync();

        var properties = Sdk.ServiceBusConnectionStringProperties.Parse(scope.Emulator.ConnectionString);
        var azure = Sdk.ServiceBusConnectionStringProperties.Parse("Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=orders");

        Assert.Contains("UseDevelopmentEmulator=true", scope.Emulator.ConnectionString, StringComparison.Ordinal);
        Assert.Equal(scope.Emulator.AmqpEndPoint.Port, properties.Endpoint.Port);
        Assert.Equal(properties.Endpoint.Host, scope.Client.FullyQualifiedNamespace);
        Assert.Equal("orders", azure.EntityPath);
        Assert.Equal("contoso.servicebus.windows.net", azure.FullyQualifiedNamespace);
    }

    [Fact]
    public async Task Single_message_round_trips_its_properties_and_body()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var when = new DateTimeOffset(2026, 11, 25, 13, 0, 0, TimeSpan.FromHours(1));
        var id = Guid.NewGuid();
        var body = new byte[] { 0, 1, 2, 254, 255 };
        var message = new Sdk.ServiceBusMessage(body)
        {
            MessageId = "m-1",
            CorrelationId = "c-1",
            Subject = "delivery-created",
            ContentType = "application/octet-stream",
            TimeToLive = TimeSpan.FromMinutes(5),
            ReplyTo = "replies",
            To = "drones",
            ApplicationProperties =
            {
                ["text"] = "hello",
                ["int"] = 42,
                ["long"] = 1L << 40,
                ["double"] = 2.5,
                ["bool"] = true,
                ["guid"] = id,
                ["when"] = when,
                ["utc"] = when.UtcDateTime,
                ["span"] = TimeSpan.FromSeconds(90),
                ["uri"] = new Uri("https://example.org/drones"),
                ["decimal"] = 12.34m,
                ["char"] = 'x',
                ["bytes"] = new byte[] { 9, 8, 7 },
            },
        };

        await sender.SendMessageAsync(message);
        var received = await receiver.ReceiveMessageAsync(Bound);
        Assert.NotNull(received);
        await receiver.CompleteMessageAsync(received);

        Assert.Equal(body, received.Body.ToArray());
        Assert.Equal("m-1", received.MessageId);
        Assert.Equal("c-1", received.CorrelationId);
        Assert.Null(received.SessionId);
        Assert.Equal("delivery-created", received.Subject);
        Assert.Equal("application/octet-stream", received.ContentType);
        Assert.Equal(TimeSpan.FromMinutes(5), received.TimeToLive);
        Assert.Equal("replies", received.ReplyTo);
        Assert.Equal("drones", received.To);
        Assert.Equal(1, received.DeliveryCount);
        Assert.Equal(Sdk.ServiceBusMessageState.Active, received.State);
        Assert.True(received.SequenceNumber > 0);
        Assert.True(received.EnqueuedTime > DateTimeOffset.UnixEpoch);
        Assert.Equal(received.EnqueuedTime + TimeSpan.FromMinutes(5), received.ExpiresAt);
        Assert.True(received.LockedUntil > received.EnqueuedTime);
        Assert.NotEqual(Guid.Empty.ToString(), received.LockToken);
        var properties = received.ApplicationProperties;
        Assert.Equal("hello", properties["text"]);
        Assert.Equal(42, properties["int"]);
        Assert.Equal(1L << 40, properties["long"]);
        Assert.Equal(2.5, properties["double"]);
        Assert.Equal(true, properties["bool"]);
        Assert.Equal(id, properties["guid"]);
        Assert.Equal(when, properties["when"]);
        Assert.Equal(when.UtcDateTime, properties["utc"]);
        Assert.Equal(TimeSpan.FromSeconds(90), properties["span"]);
        Assert.Equal(new Uri("https://example.org/drones"), properties["uri"]);
        Assert.Equal(12.34m, properties["decimal"]);
        Assert.Equal('x', properties["char"]);
        Assert.Equal(new byte[] { 9, 8, 7 }, properties["bytes"]);
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 0, Counters.Completed: 1 }, Bound), $"{scope.Metrics}");
    }

    [Fact]
    public async Task Batch_from_CreateMessageBatchAsync_arrives_in_order()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);

        using var batch = await sender.CreateMessageBatchAsync();
        for (var i = 0; i < 10; i++)
        {
            Assert.True(batch.TryAddMessage(new Sdk.ServiceBusMessage($"drone-{i}") { MessageId = $"b-{i}" }));
        }

        Assert.True(batch.MaxSizeInBytes <= scope.Emulator.Options.MaxMessageSizeBytes);
        await sender.SendMessagesAsync(batch);
        var received = await ReceiveAsync(receiver, 10);

        Assert.Equal(Enumerable.Range(0, 10).Select(i => $"drone-{i}"), received.Select(m => m.Body.ToString()));
        Assert.Equal(Enumerable.Range(0, 10).Select(i => $"b-{i}"), received.Select(m => m.MessageId));
        Assert.Equal(10, scope.Metrics.Counters.IncomingMessages);
    }

    [Fact]
    public async Task Too_large_a_message_is_refused_with_MessageSizeExceeded()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);

        var error = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => sender.SendMessageAsync(new Sdk.ServiceBusMessage(new byte[300 * 1024])));

        Assert.Equal(Sdk.ServiceBusFailureReason.MessageSizeExceeded, error.Reason);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("small"));
        Assert.Equal(1, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Abandon_defer_and_dead_letter_each_do_what_the_service_does()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("retry") { MessageId = "a" }, new Sdk.ServiceBusMessage("later") { MessageId = "d" }, new Sdk.ServiceBusMessage("poison") { MessageId = "p" }]);

        var retry = await receiver.ReceiveMessageAsync(Bound);
        await receiver.AbandonMessageAsync(retry!, new Dictionary<string, object> { ["lastError"] = "timeout" });
        var retried = await receiver.ReceiveMessageAsync(Bound);
        Assert.Equal("a", retried!.MessageId);
        Assert.Equal(2, retried.DeliveryCount);
        Assert.Equal("timeout", retried.ApplicationProperties["lastError"]);
        await receiver.CompleteMessageAsync(retried);

        var later = await receiver.ReceiveMessageAsync(Bound);
        Assert.Equal("d", later!.MessageId);
        await receiver.DeferMessageAsync(later);

        var poison = await receiver.ReceiveMessageAsync(Bound);
        Assert.Equal("p", poison!.MessageId);
        await receiver.DeadLetterMessageAsync(poison, "InvalidPayload", "deliveryId is missing");

        var deferred = await receiver.ReceiveDeferredMessageAsync(later.SequenceNumber);
        Assert.Equal("d", deferred.MessageId);
        Assert.Equal(Sdk.ServiceBusMessageState.Deferred, deferred.State);
        await receiver.CompleteMessageAsync(deferred);

        var deadLettered = await dlq.ReceiveMessageAsync(Bound);
        Assert.Equal("p", deadLettered!.MessageId);
        Assert.Equal("InvalidPayload", deadLettered.DeadLetterReason);
        Assert.Equal("deliveryId is missing", deadLettered.DeadLetterErrorDescription);
        Assert.Equal(EmulatorScope.Queue, deadLettered.DeadLetterSource);
        await dlq.CompleteMessageAsync(deadLettered);

        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 0, DeadLetterMessages: 0, DeferredMessages: 0 }, Bound), $"{scope.Metrics}");
        Assert.Equal(1, scope.Metrics.Counters.Abandoned);
        Assert.Equal(1, scope.Metrics.Counters.Deferred);
        Assert.Equal(1, scope.Metrics.DeadLetteredByReason["InvalidPayload"]);
    }

    [Fact]
    public async Task Peek_as_a_first_operation_sees_the_messages_without_locking_them()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using (var sender = scope.Client.CreateSender(EmulatorScope.Queue))
        {
            await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("one"), new Sdk.ServiceBusMessage("two")]);
        }

        // A client that has done nothing else yet.
        await using var peeker = EmulatorScope.CreateClient(scope.Emulator.ConnectionString);
        await using var receiver = peeker.CreateReceiver(EmulatorScope.Queue);
        var first = await receiver.PeekMessageAsync();
        var all = await receiver.PeekMessagesAsync(10, fromSequenceNumber: first!.SequenceNumber);

        Assert.Equal("one", first.Body.ToString());
        Assert.Equal(["one", "two"], all.Select(m => m.Body.ToString()));
        Assert.Equal(0, scope.Metrics.LockedMessages);
        Assert.Equal(0, scope.Metrics.Counters.OutgoingDeliveries);
    }

    [Fact]
    public async Task RenewMessageLockAsync_extends_the_lock_from_the_emulator_clock()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("hold me"));

        var message = await receiver.ReceiveMessageAsync(Bound);
        var before = message!.LockedUntil;
        time.Advance(TimeSpan.FromSeconds(20));
        await receiver.RenewMessageLockAsync(message);

        Assert.Equal(before + TimeSpan.FromSeconds(20), message.LockedUntil);
        time.Advance(TimeSpan.FromSeconds(20));
        await receiver.CompleteMessageAsync(message);
        Assert.Equal(1, scope.Metrics.Counters.LockRenewals);
        Assert.Equal(0, scope.Metrics.Counters.LockLostSettlements);
    }

    [Fact]
    public async Task Receiver_with_PrefetchCount_gets_every_message_once()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { PrefetchCount = 10 });
        await sender.SendMessagesAsync(Enumerable.Range(0, 30).Select(i => new Sdk.ServiceBusMessage($"{i}")));

        var received = await ReceiveAsync(receiver, 30, complete: true);

        Assert.Equal(Enumerable.Range(0, 30).Select(i => $"{i}"), received.Select(m => m.Body.ToString()));
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 0, Counters.Completed: 30 }, Bound), $"{scope.Metrics}");
        Assert.Equal(30, scope.Metrics.Counters.OutgoingDeliveries);
    }

    [Fact]
    public async Task Processor_with_MaxConcurrentCalls_completes_every_message_automatically()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessagesAsync(Enumerable.Range(0, 40).Select(i => new Sdk.ServiceBusMessage($"{i}")));
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new Sdk.ServiceBusProcessorOptions { MaxConcurrentCalls = 4, AutoCompleteMessages = true, PrefetchCount = 8 });
        var seen = new System.Collections.Concurrent.ConcurrentDictionary<string, int>();
        var concurrent = 0;
        var maxConcurrent = 0;
        var errors = new System.Collections.Concurrent.ConcurrentQueue<Exception>();
        processor.ProcessMessageAsync += async args =>
        {
            var now = Interlocked.Increment(ref concurrent);
            InterlockedMax(ref maxConcurrent, now);
            await Task.Yield();
            seen.AddOrUpdate(args.Message.Body.ToString(), 1, (_, n) => n + 1);
            Interlocked.Decrement(ref concurrent);
        };
        processor.ProcessErrorAsync += args =>
        {
            errors.Enqueue(args.Exception);
            return Task.CompletedTask;
        };

        await processor.StartProcessingAsync();
        var done = await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 40, Bound);
        await processor.StopProcessingAsync();

        Assert.True(done, $"{scope.Metrics}; errors: {string.Join("; ", errors)}");
        Assert.Empty(errors);
        Assert.Equal(40, seen.Count);
        Assert.All(seen.Values, n => Assert.Equal(1, n));
        Assert.InRange(maxConcurrent, 1, 4);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
        Assert.Equal(0, scope.Metrics.Counters.LockLostSettlements);
    }

    [Fact]
    public async Task Processor_renews_the_lock_of_a_message_its_handler_holds()
    {
        // The SDK schedules renewals on the real clock, so the emulator keeps the real clock here; the handler
        // returns only once the emulator has seen two renewals, whatever the machine's speed.
        // A 20 s lock: the SDK renews with half the remaining time to spare, 10 s of slack for a busy machine.
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(20) });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("slow work"));
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new Sdk.ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = 1,
            AutoCompleteMessages = true,
            MaxAutoLockRenewalDuration = TimeSpan.FromMinutes(5),
        });
        var renewed = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        var errors = new System.Collections.Concurrent.ConcurrentQueue<Exception>();
        var handled = 0;
        processor.ProcessMessageAsync += async _ =>
        {
            Interlocked.Increment(ref handled);
            renewed.TrySetResult(await Eventually.TrueAsync(() => scope.Metrics.Counters.LockRenewals >= 2, Bound * 3));
        };
        processor.ProcessErrorAsync += args =>
        {
            errors.Enqueue(args.Exception);
            return Task.CompletedTask;
        };

        await processor.StartProcessingAsync();
        Assert.True(await renewed.Task.WaitAsync(Bound * 4), "the processor never renewed the lock twice");
        var completed = await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 1, Bound);
        await processor.StopProcessingAsync();

        Assert.True(completed, $"{scope.Metrics}; errors: {string.Join("; ", errors)}");
        Assert.Empty(errors);
        Assert.Equal(1, handled);
        Assert.Equal(0, scope.Metrics.Counters.LockExpirations);
        Assert.Equal(0, scope.Metrics.Counters.LockLostSettlements);
        Assert.Equal(1, scope.Metrics.Counters.OutgoingDeliveries);
    }

    [Fact]
    public async Task Processor_without_lock_renewal_reports_MessageLockLost_when_its_handler_outlives_the_lock()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("slow"));
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new Sdk.ServiceBusProcessorOptions
        {
            AutoCompleteMessages = true,
            MaxAutoLockRenewalDuration = TimeSpan.Zero,
        });
        var lost = new TaskCompletionSource<Sdk.ServiceBusErrorSource>(TaskCreationOptions.RunContinuationsAsynchronously);
        var attempts = 0;
        processor.ProcessMessageAsync += args =>
        {
            if (Interlocked.Increment(ref attempts) == 1)
            {
                time.Advance(TimeSpan.FromSeconds(31)); // the handler "takes" longer than the 30 s lock
            }

            return Task.CompletedTask;
        };
        processor.ProcessErrorAsync += args =>
        {
            if (args.Exception is Sdk.ServiceBusException { Reason: Sdk.ServiceBusFailureReason.MessageLockLost })
            {
                lost.TrySetResult(args.ErrorSource);
            }

            return Task.CompletedTask;
        };

        await processor.StartProcessingAsync();
        var source = await lost.Task.WaitAsync(Bound);
        var redelivered = await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 1, Bound);
        await processor.StopProcessingAsync();

        Assert.Equal(Sdk.ServiceBusErrorSource.Complete, source);
        Assert.True(redelivered, $"{scope.Metrics}");
        Assert.Equal(2, attempts);
        Assert.Equal(1, scope.Metrics.Counters.LockLostSettlements);
    }

    [Fact]
    public async Task Scheduled_message_can_be_cancelled_and_is_enqueued_when_its_time_comes()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var at = DateTimeOffset.UtcNow.AddMinutes(10);

        var cancelled = await sender.ScheduleMessageAsync(new Sdk.ServiceBusMessage("never") { MessageId = "s-1" }, at);
        var kept = await sender.ScheduleMessageAsync(new Sdk.ServiceBusMessage("later") { MessageId = "s-2" }, at);
        var peeked = await receiver.PeekMessagesAsync(10);
        await sender.CancelScheduledMessageAsync(cancelled);
        var again = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => sender.CancelScheduledMessageAsync(cancelled));
        Assert.Equal(Sdk.ServiceBusFailureReason.MessageNotFound, again.Reason);
        Assert.Equal(1, scope.Metrics.ScheduledMessages);

        time.Advance(TimeSpan.FromMinutes(11));
        var received = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(received!);

        Assert.True(kept > cancelled);
        Assert.Equal(["s-1", "s-2"], peeked.Select(m => m.MessageId));
        Assert.All(peeked, m => Assert.Equal(Sdk.ServiceBusMessageState.Scheduled, m.State));
        Assert.Equal("s-2", received!.MessageId);
        Assert.Equal(at.ToUnixTimeMilliseconds(), received.ScheduledEnqueueTime.ToUnixTimeMilliseconds());
        Assert.Equal(0, scope.Metrics.ScheduledMessages);
    }

    [Fact]
    public async Task Abandoning_MaxDeliveryCount_times_dead_letters_with_MaxDeliveryCountExceeded()
    {
        await using var scope = await EmulatorScope.StartAsync(q => q with { MaxDeliveryCount = 3 });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("never works") { MessageId = "x" });

        for (var attempt = 1; attempt <= 3; attempt++)
        {
            var message = await receiver.ReceiveMessageAsync(Bound);
            Assert.Equal(attempt, message!.DeliveryCount);
            await receiver.AbandonMessageAsync(message);
        }

        var deadLettered = await dlq.ReceiveMessageAsync(Bound);
        await dlq.CompleteMessageAsync(deadLettered!);

        Assert.Equal("x", deadLettered!.MessageId);
        Assert.Equal("MaxDeliveryCountExceeded", deadLettered.DeadLetterReason);
        Assert.Equal("Message could not be consumed after 3 delivery attempts.", deadLettered.DeadLetterErrorDescription);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Completing_after_the_lock_expired_fails_with_MessageLockLost()
    {
        // Only the emulator's clock moves: the SDK keeps the real one.
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("too slow"));

        var message = await receiver.ReceiveMessageAsync(Bound);
        time.Advance(TimeSpan.FromSeconds(31));
        var error = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => receiver.CompleteMessageAsync(message!));
        var renewal = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => receiver.RenewMessageLockAsync(message!));
        var again = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(again!);

        Assert.Equal(Sdk.ServiceBusFailureReason.MessageLockLost, error.Reason);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessageLockLost, renewal.Reason);
        Assert.Equal(message!.SequenceNumber, again!.SequenceNumber);
        Assert.Equal(2, again.DeliveryCount);
        Assert.Equal(1, scope.Metrics.Counters.Completed);
    }

    [Fact]
    public async Task Unknown_queue_fails_with_MessagingEntityNotFound_and_the_connection_keeps_working()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var missing = scope.Client.CreateSender("no-such-queue");
        await using var missingReceiver = scope.Client.CreateReceiver("no-such-queue");
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("before"));

        var send = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => missing.SendMessageAsync(new Sdk.ServiceBusMessage("lost")));
        var receive = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => missingReceiver.ReceiveMessageAsync(Bound));
        var peek = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => missingReceiver.PeekMessageAsync());
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("after"));
        var received = await ReceiveAsync(receiver, 2, complete: true);

        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityNotFound, send.Reason);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityNotFound, receive.Reason);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityNotFound, peek.Reason);
        Assert.Equal(["before", "after"], received.Select(m => m.Body.ToString()));
        Assert.Equal(1, scope.Emulator.ConnectionCount);
    }

    [Fact]
    public async Task Wrong_key_fails_with_UnauthorizedAccessException()
    {
        await using var scope = await EmulatorScope.StartAsync();
        var wrong = scope.Emulator.ConnectionString.Replace(ServiceBusEmulatorOptions.DevelopmentKey, "not-the-key", StringComparison.Ordinal);
        await using var client = EmulatorScope.CreateClient(wrong);
        await using var sender = client.CreateSender(EmulatorScope.Queue);

        await Assert.ThrowsAsync<UnauthorizedAccessException>(() => sender.SendMessageAsync(new Sdk.ServiceBusMessage("denied")));
        Assert.Equal(0, scope.Metrics.Counters.IncomingMessages);
    }

    [Fact]
    public async Task ReceiveAndDelete_receiver_takes_messages_without_locks()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { ReceiveMode = Sdk.ServiceBusReceiveMode.ReceiveAndDelete });
        await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("one"), new Sdk.ServiceBusMessage("two")]);

        var received = await ReceiveAsync(receiver, 2);

        Assert.Equal(["one", "two"], received.Select(m => m.Body.ToString()));
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 0, LockedMessages: 0 }, Bound), $"{scope.Metrics}");
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task Receive_that_finds_nothing_returns_empty_and_the_next_message_is_delivered_once()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);

        var none = await receiver.ReceiveMessagesAsync(5, TimeSpan.FromMilliseconds(300));
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("late"));
        var late = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(late!);

        // The SDK releases a message that arrives while no receive call waits (the credit of the empty call was still
        // open); a release is not a delivery attempt, so the message comes back with its count unchanged.
        Assert.Empty(none);
        Assert.Equal("late", late!.Body.ToString());
        Assert.Equal(1, late.DeliveryCount);
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 0, LockedMessages: 0, Counters.Completed: 1 }, Bound), $"{scope.Metrics}");
    }

    [Fact]
    public async Task Message_sent_with_ScheduledEnqueueTime_waits_for_the_emulator_clock()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("later") { ScheduledEnqueueTime = DateTimeOffset.UtcNow.AddMinutes(5) });
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("now"));

        var first = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(first!);
        Assert.Equal(1, scope.Metrics.ScheduledMessages);
        time.Advance(TimeSpan.FromMinutes(6));
        var second = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(second!);

        Assert.Equal("now", first!.Body.ToString());
        Assert.Equal("later", second!.Body.ToString());
        Assert.True(second.SequenceNumber > first.SequenceNumber);
    }

    [Fact]
    public async Task Processor_abandons_what_its_handler_throws_on_and_dead_letters_on_request()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("flaky") { MessageId = "f" }, new Sdk.ServiceBusMessage("poison") { MessageId = "p" }]);
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new Sdk.ServiceBusProcessorOptions { MaxConcurrentCalls = 2, AutoCompleteMessages = true });
        var deliveries = new System.Collections.Concurrent.ConcurrentQueue<(string Id, int Count)>();
        processor.ProcessMessageAsync += async args =>
        {
            deliveries.Enqueue((args.Message.MessageId, args.Message.DeliveryCount));
            if (args.Message.MessageId == "p")
            {
                await args.DeadLetterMessageAsync(args.Message, "Unreadable", "no payload");
            }
            else if (args.Message.DeliveryCount == 1)
            {
                throw new InvalidOperationException("first attempt fails");
            }
        };
        var handlerErrors = 0;
        processor.ProcessErrorAsync += args =>
        {
            if (args.ErrorSource == Sdk.ServiceBusErrorSource.ProcessMessageCallback)
            {
                Interlocked.Increment(ref handlerErrors);
            }

            return Task.CompletedTask;
        };

        await processor.StartProcessingAsync();
        var done = await Eventually.TrueAsync(() => scope.Metrics is { Counters.Completed: 1, DeadLetterMessages: 1 }, Bound);
        await processor.StopProcessingAsync();
        var deadLettered = await dlq.ReceiveMessageAsync(Bound);

        Assert.True(done, $"{scope.Metrics}");
        Assert.Equal(1, handlerErrors);
        Assert.Contains(("f", 2), deliveries);
        Assert.Equal(1, scope.Metrics.Counters.Abandoned);
        Assert.Equal("Unreadable", deadLettered!.DeadLetterReason);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Peek_shows_deferred_messages_and_the_dead_letter_queue_can_be_peeked()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("defer") { MessageId = "d" }, new Sdk.ServiceBusMessage("dead") { MessageId = "x" }]);
        var deferMe = await receiver.ReceiveMessageAsync(Bound);
        await receiver.DeferMessageAsync(deferMe!);
        var killMe = await receiver.ReceiveMessageAsync(Bound);
        await receiver.DeadLetterMessageAsync(killMe!, "Bad", "bad message");

        var peeked = await receiver.PeekMessageAsync(deferMe!.SequenceNumber);
        var peekedDead = await dlq.PeekMessageAsync();
        var missing = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => receiver.ReceiveDeferredMessageAsync(killMe!.SequenceNumber + 100));
        var deferred = await receiver.ReceiveDeferredMessagesAsync([deferMe.SequenceNumber]);
        await receiver.RenewMessageLockAsync(deferred[0]);
        await receiver.CompleteMessageAsync(deferred[0]);

        Assert.Equal("d", peeked!.MessageId);
        Assert.Equal(Sdk.ServiceBusMessageState.Deferred, peeked.State);
        Assert.Equal("x", peekedDead!.MessageId);
        Assert.Equal("Bad", peekedDead.DeadLetterReason);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessageNotFound, missing.Reason);
        Assert.Equal(0, scope.Metrics.DeferredMessages);
    }

    [Fact]
    public async Task Wrong_key_fails_receivers_and_peeks_with_UnauthorizedAccessException_too()
    {
        await using var scope = await EmulatorScope.StartAsync();
        var wrong = scope.Emulator.ConnectionString.Replace(ServiceBusEmulatorOptions.DevelopmentKey, "not-the-key", StringComparison.Ordinal);
        await using var client = EmulatorScope.CreateClient(wrong);
        await using var receiver = client.CreateReceiver(EmulatorScope.Queue);

        await Assert.ThrowsAsync<UnauthorizedAccessException>(() => receiver.ReceiveMessageAsync(Bound));
        await Assert.ThrowsAsync<UnauthorizedAccessException>(() => receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task Session_receiver_on_a_queue_without_sessions_is_refused_and_the_connection_keeps_working()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);

        var error = await Assert.ThrowsAnyAsync<Exception>(async () => await scope.Client.AcceptSessionAsync(EmulatorScope.Queue, "s-1"));
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("after"));

        // amqp:not-allowed, which the SDK surfaces as InvalidOperationException, as the service's refusal.
        Assert.IsType<InvalidOperationException>(error);
        Assert.Contains("does not require sessions", error.Message, StringComparison.Ordinal);
        Assert.Equal(1, scope.Metrics.ActiveMessages);
        Assert.Equal(1, scope.Emulator.ConnectionCount);
    }

    [Fact]
    public async Task Processor_on_an_unknown_queue_reports_MessagingEntityNotFound()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var processor = scope.Client.CreateProcessor("no-such-queue");
        var reported = new TaskCompletionSource<Sdk.ServiceBusException>(TaskCreationOptions.RunContinuationsAsynchronously);
        processor.ProcessMessageAsync += _ => Task.CompletedTask;
        processor.ProcessErrorAsync += args =>
        {
            if (args.Exception is Sdk.ServiceBusException e)
            {
                reported.TrySetResult(e);
            }

            return Task.CompletedTask;
        };

        await processor.StartProcessingAsync();
        var error = await reported.Task.WaitAsync(Bound);
        await processor.StopProcessingAsync();

        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityNotFound, error.Reason);
        Assert.Equal(1, scope.Emulator.ConnectionCount);
    }

    [Fact]
    public async Task Several_scheduled_messages_are_cancelled_together_and_peeks_continue_where_they_left_off()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var at = DateTimeOffset.UtcNow.AddHours(1);

        var sequences = await sender.ScheduleMessagesAsync(Enumerable.Range(0, 4).Select(i => new Sdk.ServiceBusMessage($"{i}")), at);
        var first = await receiver.PeekMessagesAsync(2);
        var rest = await receiver.PeekMessagesAsync(10);
        await sender.CancelScheduledMessagesAsync(sequences);

        Assert.Equal(4, sequences.Count);
        Assert.Equal(["0", "1"], first.Select(m => m.Body.ToString()));
        Assert.Equal(["2", "3"], rest.Select(m => m.Body.ToString()));
        Assert.Equal(0, scope.Metrics.ScheduledMessages);
        Assert.Null(await receiver.PeekMessageAsync(sequences[0]));
    }

    [Fact]
    public async Task Batch_filled_to_its_size_limit_is_accepted()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { ReceiveMode = Sdk.ServiceBusReceiveMode.ReceiveAndDelete });

        using var batch = await sender.CreateMessageBatchAsync();
        var count = 0;
        while (batch.TryAddMessage(new Sdk.ServiceBusMessage(new byte[1000]) { MessageId = $"{count}" }))
        {
            count++;
        }

        await sender.SendMessagesAsync(batch);
        var received = await ReceiveAsync(receiver, count);

        Assert.InRange(count, 200, 262);
        Assert.Equal(count, received.Count);
        Assert.Equal(count, scope.Metrics.Counters.IncomingMessages);
    }

    [Fact]
    public async Task Value_and_sequence_bodies_and_custom_annotations_round_trip()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var value = new Sdk.ServiceBusMessage(new Azure.Core.Amqp.AmqpAnnotatedMessage(Azure.Core.Amqp.AmqpMessageBody.FromValue(new Dictionary<string, object> { ["drone"] = "d-7", ["battery"] = 81 })));
        value.GetRawAmqpMessage().MessageAnnotations["x-opt-drone-hint"] = "north";
        var sequence = new Sdk.ServiceBusMessage(new Azure.Core.Amqp.AmqpAnnotatedMessage(Azure.Core.Amqp.AmqpMessageBody.FromSequence([new List<object> { 1, "two" }])));
        await sender.SendMessagesAsync([value, sequence]);

        var received = await ReceiveAsync(receiver, 2, complete: true);
        var first = received[0].GetRawAmqpMessage();
        var second = received[1].GetRawAmqpMessage();

        Assert.True(first.Body.TryGetValue(out var map));
        var entries = Assert.IsAssignableFrom<System.Collections.IDictionary>(map);
        Assert.Equal("d-7", entries["drone"]);
        Assert.Equal(81, entries["battery"]);
        Assert.Equal("north", first.MessageAnnotations["x-opt-drone-hint"]);
        Assert.True(second.Body.TryGetSequence(out var sections));
        Assert.Equal([1, "two"], sections!.Single());
    }

    [Fact]
    public async Task Dead_letter_and_defer_apply_the_properties_to_modify()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        await sender.SendMessagesAsync([new Sdk.ServiceBusMessage("dead") { MessageId = "x" }, new Sdk.ServiceBusMessage("later") { MessageId = "d" }]);

        var dead = await receiver.ReceiveMessageAsync(Bound);
        await receiver.DeadLetterMessageAsync(dead!, new Dictionary<string, object> { ["stage"] = "validation", ["attempt"] = 3 }, "Invalid", "bad field");
        var later = await receiver.ReceiveMessageAsync(Bound);
        await receiver.DeferMessageAsync(later!, new Dictionary<string, object> { ["parkedBy"] = "dispatcher" });
        var deadLettered = await dlq.ReceiveMessageAsync(Bound);
        var deferred = await receiver.ReceiveDeferredMessageAsync(later!.SequenceNumber);

        Assert.Equal("validation", deadLettered!.ApplicationProperties["stage"]);
        Assert.Equal(3, deadLettered.ApplicationProperties["attempt"]);
        Assert.Equal("Invalid", deadLettered.DeadLetterReason);
        Assert.Equal("bad field", deadLettered.DeadLetterErrorDescription);
        Assert.Equal("dispatcher", deferred.ApplicationProperties["parkedBy"]);
    }

    [Fact]
    public async Task Duplicate_MessageId_is_dropped_when_the_queue_requires_duplicate_detection()
    {
        await using var scope = await EmulatorScope.StartAsync(q => q with { RequiresDuplicateDetection = true });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);

        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("first") { MessageId = "same" });
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("second") { MessageId = "same" });
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("other") { MessageId = "other" });
        var received = await ReceiveAsync(receiver, 2, complete: true);

        Assert.Equal(["first", "other"], received.Select(m => m.Body.ToString()));
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }
}
