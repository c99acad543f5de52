using Sdk = Azure.Messaging.ServiceBus;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>Topics and subscriptions through the official .NET SDK.</summary>
public sealed class OfficialSdkTopicTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    private static Sdk.ServiceBusClient Client(ServiceBusEmulator emulator) => new(emulator.ConnectionString, new Sdk.ServiceBusClientOptions
    {
        RetryOptions = new Sdk.ServiceBusRetryOptions { Mode = Sdk.ServiceBusRetryMode.Fixed, TryTimeout = Bound, MaxRetries = 1, Delay = TimeSpan.FromMilliseconds(100) },
    });

    [Fact]
    public async Task Sdk_fan_out_reaches_three_subscriptions_and_the_action_sets_a_property()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options());
        await using var client = Client(emulator);
        await using var sender = client.CreateSender(TopicScope.Topic);
        var message = new Sdk.ServiceBusMessage("fan out") { Subject = "drone" };
        message.ApplicationProperties["priority"] = "high";
        await sender.SendMessageAsync(message);

        var copies = new Dictionary<string, Sdk.ServiceBusReceivedMessage>();
        foreach (var name in new[] { TopicScope.All, TopicScope.Urgent, TopicScope.Labelled })
        {
            await using var receiver = client.CreateReceiver(TopicScope.Topic, name);
            var received = await receiver.ReceiveMessageAsync(Bound);
            Assert.NotNull(received);
            await receiver.CompleteMessageAsync(received);
            copies[name] = received;
        }

        await using var correlated = client.CreateReceiver(TopicScope.Topic, TopicScope.Correlated);
        Assert.All(copies.Values, m => Assert.Equal("fan out", m.Body.ToString()));
        Assert.Equal("drone", copies[TopicScope.Labelled].ApplicationProperties["routed"]);
        Assert.False(copies[TopicScope.Urgent].ApplicationProperties.ContainsKey("routed"));
        Assert.Null(await correlated.PeekMessageAsync());
    }

    [Fact]
    public async Task Sdk_sql_filter_on_the_label_and_correlation_filter_leave_other_messages_out()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options());
        await using var client = Client(emulator);
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var labelled = client.CreateReceiver(TopicScope.Topic, TopicScope.Labelled);
        await using var correlated = client.CreateReceiver(TopicScope.Topic, TopicScope.Correlated);
        var first = new Sdk.ServiceBusMessage("truck") { Subject = "truck", CorrelationId = "c-1" };
        first.ApplicationProperties["region"] = "east";
        var marker = new Sdk.ServiceBusMessage("marker") { Subject = "drone", CorrelationId = "c-1" };
        marker.ApplicationProperties["region"] = "west";
        await sender.SendMessagesAsync([first, marker]);

        var byLabel = await labelled.ReceiveMessageAsync(Bound);
        var byCorrelation = await correlated.ReceiveMessageAsync(Bound);

        Assert.Equal("marker", byLabel!.Body.ToString());
        Assert.Equal("marker", byCorrelation!.Body.ToString());
    }

    [Fact]
    public async Task Sdk_subscription_dead_letter_queue_receives_what_was_dead_lettered_after_MaxDeliveryCount()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options());
        await using var client = Client(emulator);
        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.Strict);
        await using var dlq = client.CreateReceiver(TopicScope.Topic, TopicScope.Strict, new Sdk.ServiceBusReceiverOptions { SubQueue = Sdk.SubQueue.DeadLetter });
        var message = new Sdk.ServiceBusMessage("poison") { MessageId = "p-1" };
        message.ApplicationProperties["kind"] = "strict";
        await sender.SendMessageAsync(message);

        var first = await receiver.ReceiveMessageAsync(Bound);
        var lockSpan = first!.LockedUntil - DateTimeOffset.UtcNow;
        await receiver.AbandonMessageAsync(first);
        var second = await receiver.ReceiveMessageAsync(Bound);
        await receiver.AbandonMessageAsync(second!);
        var deadLettered = await dlq.ReceiveMessageAsync(Bound);

        Assert.True(lockSpan <= TimeSpan.FromSeconds(2), $"lock of {lockSpan}");
        Assert.Equal(2, second!.DeliveryCount);
        Assert.Equal("p-1", deadLettered!.MessageId);
        Assert.Equal("MaxDeliveryCountExceeded", deadLettered.DeadLetterReason);
        Assert.Equal("deliveries/Subscriptions/strict", deadLettered.DeadLetterSource);
    }

    [Fact]
    public async Task Sdk_unknown_subscription_and_send_to_a_subscription_are_refused_and_the_connection_keeps_working()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options());
        await using var client = Client(emulator);
        await using var missing = client.CreateReceiver(TopicScope.Topic, "nobody");
        await using var toSubscription = client.CreateSender("deliveries/Subscriptions/all");

        var notFound = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => missing.ReceiveMessageAsync(Bound));
        await Assert.ThrowsAnyAsync<Exception>(() => toSubscription.SendMessageAsync(new Sdk.ServiceBusMessage("nope")));

        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.All);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("still here"));
        var received = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(received!);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityNotFound, notFound.Reason);
        Assert.Equal("still here", received!.Body.ToString());
        Assert.Null(await receiver.PeekMessageAsync());
    }
}
