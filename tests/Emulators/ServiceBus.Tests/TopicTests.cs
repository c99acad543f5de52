using Azure.Messaging.ServiceBus;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>Topics and subscriptions through the official .NET SDK: fan-out, filters, actions, scheduling and processing on a subscription.</summary>
public sealed class TopicTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    private static async Task<(ServiceBusEmulator Emulator, ServiceBusClient Client)> StartAsync(TimeProvider? time = null)
    {
        var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options(time));
        return (emulator, new ServiceBusClient(emulator.ConnectionString, EmulatorScope.Fast()));
    }

    [Fact]
    public async Task A_message_sent_to_the_topic_is_copied_to_every_subscription_whose_rules_match()
    {
        var (emulator, client) = await StartAsync();
        await using var _ = emulator;
        await using var __ = client;
        await using var sender = client.CreateSender(TopicScope.Topic);
        var message = new ServiceBusMessage("fan out") { MessageId = "m-1", Subject = "drone", CorrelationId = "c-1" };
        message.ApplicationProperties["priority"] = "high";
        message.ApplicationProperties["region"] = "west";
        await sender.SendMessageAsync(message);

        var copies = new Dictionary<string, ServiceBusReceivedMessage>();
        foreach (var name in new[] { TopicScope.All, TopicScope.Urgent, TopicScope.Labelled, TopicScope.Correlated })
        {
            await using var receiver = client.CreateReceiver(TopicScope.Topic, name);
            var received = await receiver.ReceiveMessageAsync(Bound);
            Assert.NotNull(received);
            await receiver.CompleteMessageAsync(received);
            copies[name] = received;
        }

        Assert.All(copies.Values, m => Assert.Equal("m-1", m.MessageId));
        Assert.All(copies.Values, m => Assert.Equal("fan out", m.Body.ToString()));
        Assert.Equal("drone", copies[TopicScope.Labelled].ApplicationProperties["routed"]);
        Assert.False(copies[TopicScope.All].ApplicationProperties.ContainsKey("routed"));
        await using var strict = client.CreateReceiver(TopicScope.Topic, TopicScope.Strict);
        Assert.Null(await strict.PeekMessageAsync());

        var metrics = emulator.GetMetrics();
        Assert.Equal(1, metrics[TopicScope.Topic].Counters.IncomingMessages);
        Assert.Equal(1, metrics["deliveries/Subscriptions/all"].Counters.IncomingMessages);
        Assert.Equal(1, metrics["deliveries/Subscriptions/all"].Counters.Completed);
        Assert.Equal(0, metrics["deliveries/Subscriptions/strict"].Counters.IncomingMessages);
    }

    [Fact]
    public async Task A_sql_filter_on_a_user_property_leaves_other_messages_out()
    {
        var (emulator, client) = await StartAsync();
        await using var _ = emulator;
        await using var __ = client;
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.Urgent);
        var low = new ServiceBusMessage("low");
        low.ApplicationProperties["priority"] = "low";
        var marker = new ServiceBusMessage("marker");
        marker.ApplicationProperties["priority"] = "high";
        await sender.SendMessageAsync(low);
        await sender.SendMessageAsync(marker);

        var received = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(received!);
        await using var all = client.CreateReceiver(TopicScope.Topic, TopicScope.All);
        var everything = await all.PeekMessagesAsync(10);

        Assert.Equal("marker", received!.Body.ToString());
        Assert.Null(await receiver.PeekMessageAsync());
        Assert.Equal(["low", "marker"], everything.Select(m => m.Body.ToString()));
    }

    [Fact]
    public async Task A_correlation_filter_needs_every_field_and_property_to_match()
    {
        var (emulator, client) = await StartAsync();
        await using var _ = emulator;
        await using var __ = client;
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.Correlated);
        var east = new ServiceBusMessage("east") { CorrelationId = "c-1" };
        east.ApplicationProperties["region"] = "east";
        var otherId = new ServiceBusMessage("other id") { CorrelationId = "c-2" };
        otherId.ApplicationProperties["region"] = "west";
        var west = new ServiceBusMessage("west") { CorrelationId = "c-1" };
        west.ApplicationProperties["region"] = "west";
        await sender.SendMessagesAsync([east, otherId, west]);

        var received = await receiver.ReceiveMessageAsync(Bound);

        Assert.Equal("west", received!.Body.ToString());
    }

    [Fact]
    public async Task A_subscription_has_its_own_lock_duration_max_delivery_count_and_dead_letter_queue()
    {
        var (emulator, client) = await StartAsync();
        await using var _ = emulator;
        await using var __ = client;
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.Strict);
        await using var dlq = client.CreateReceiver(TopicScope.Topic, TopicScope.Strict, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        var message = new ServiceBusMessage("twice") { MessageId = "s-1" };
        message.ApplicationProperties["kind"] = "strict";
        await sender.SendMessageAsync(message);

        var first = await receiver.ReceiveMessageAsync(Bound);
        var lockSpan = first!.LockedUntil - DateTimeOffset.UtcNow;
        await receiver.AbandonMessageAsync(first);
        var second = await receiver.ReceiveMessageAsync(Bound);
        await receiver.AbandonMessageAsync(second!);
        var deadLettered = await dlq.ReceiveMessageAsync(Bound);
        await dlq.CompleteMessageAsync(deadLettered!);

        Assert.True(lockSpan <= TimeSpan.FromSeconds(2), $"lock of {lockSpan}");
        Assert.Equal("deliveries/Subscriptions/strict/$DeadLetterQueue", dlq.EntityPath);
        Assert.Equal("s-1", deadLettered!.MessageId);
        Assert.Equal("MaxDeliveryCountExceeded", deadLettered.DeadLetterReason);
        Assert.Equal("deliveries/Subscriptions/strict", deadLettered.DeadLetterSource);
        Assert.Equal(1, emulator.GetMetrics()["deliveries/Subscriptions/strict"].DeadLetteredByReason["MaxDeliveryCountExceeded"]);
    }

    [Fact]
    public async Task Unknown_subscription_send_to_a_subscription_and_receive_from_a_topic_are_refused_and_the_connection_keeps_working()
    {
        var (emulator, client) = await StartAsync();
        await using var _ = emulator;
        await using var __ = client;
        await using var missing = client.CreateReceiver(TopicScope.Topic, "nobody");
        await using var toSubscription = client.CreateSender("deliveries/Subscriptions/all");
        await using var fromTopic = client.CreateReceiver(TopicScope.Topic);

        var notFound = await Assert.ThrowsAsync<ServiceBusException>(() => missing.ReceiveMessageAsync(Bound));
        await Assert.ThrowsAnyAsync<Exception>(() => toSubscription.SendMessageAsync(new ServiceBusMessage("nope")));
        await Assert.ThrowsAnyAsync<Exception>(() => fromTopic.ReceiveMessageAsync(Bound));

        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver("DELIVERIES/subscriptions/ALL");
        await sender.SendMessageAsync(new ServiceBusMessage("still here"));
        var received = await receiver.ReceiveMessageAsync(Bound);
        Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, notFound.Reason);
        Assert.Equal("still here", received!.Body.ToString());
    }

    [Fact]
    public async Task A_processor_reads_a_subscription()
    {
        var (emulator, client) = await StartAsync();
        await using var _ = emulator;
        await using var __ = client;
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var processor = client.CreateProcessor(TopicScope.Topic, TopicScope.All, new ServiceBusProcessorOptions { AutoCompleteMessages = true });
        var got = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        processor.ProcessMessageAsync += args =>
        {
            got.TrySetResult(args.Message.Body.ToString());
            return Task.CompletedTask;
        };
        processor.ProcessErrorAsync += _ => Task.CompletedTask;
        await processor.StartProcessingAsync();
        await sender.SendMessageAsync(new ServiceBusMessage("processed"));

        var body = await got.Task.WaitAsync(Bound);
        await processor.StopProcessingAsync();

        Assert.Equal("processed", body);
        Assert.Equal("deliveries/Subscriptions/all", processor.EntityPath);
    }

    [Fact]
    public async Task A_message_scheduled_on_the_topic_reaches_the_subscriptions_at_its_time_and_a_cancelled_one_never_does()
    {
        // The broker's clock decides when a scheduled message is due: it moves only when the test moves it, so the
        // cancel always reaches a message still scheduled, however slow the machine.
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        var (emulator, client) = await StartAsync(time);
        await using var _ = emulator;
        await using var __ = client;
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.All);
        var at = time.GetUtcNow().AddMinutes(1);
        var cancelled = await sender.ScheduleMessageAsync(new ServiceBusMessage("cancelled"), at);
        await sender.ScheduleMessageAsync(new ServiceBusMessage("scheduled"), at);
        await sender.CancelScheduledMessageAsync(cancelled);
        time.Advance(TimeSpan.FromMinutes(1));

        var received = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(received!);

        Assert.Equal("scheduled", received!.Body.ToString());
        Assert.Null(await receiver.PeekMessageAsync());
        Assert.Equal(2, emulator.GetMetrics()[TopicScope.Topic].Counters.IncomingMessages);
        Assert.Equal(1, emulator.GetMetrics()["deliveries/Subscriptions/all"].Counters.IncomingMessages);
    }
}
