using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Entities made through <see cref="ServiceBusAdministrationClient"/> at run time, then used through
/// <see cref="ServiceBusClient"/> as an application would: their runtime properties count what they hold, their rules
/// route, and their settings (lock duration, MaxDeliveryCount, sessions) act as a configured entity's do. Locks run on
/// the emulator's fake clock; the SDKs run in real time and the tests wait for what they receive.
/// </summary>
public sealed class AdministrationBehaviourTests
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    [Fact]
    public async Task Queue_runtime_properties_count_its_active_dead_lettered_and_scheduled_messages()
    {
        await using var scope = await AdministrationScope.StartAsync();
        await scope.Admin.CreateQueueAsync("counted");
        await using var sender = scope.Client.CreateSender("counted");
        await using var receiver = scope.Client.CreateReceiver("counted");
        await sender.SendMessagesAsync(Enumerable.Range(0, 6).Select(i => new ServiceBusMessage($"m{i}")));
        await sender.ScheduleMessagesAsync([new ServiceBusMessage("later"), new ServiceBusMessage("later still")], DateTimeOffset.UtcNow.AddHours(1));
        var received = await SdkReceiving.ReceiveAsync(receiver, 4);
        await receiver.DeadLetterMessageAsync(received[0], "test", "counted as dead-lettered");
        await receiver.DeferMessageAsync(received[1]);
        await receiver.CompleteMessageAsync(received[2]);
        // received[3] stays locked: a locked message is still active.

        var runtime = (await scope.Admin.GetQueueRuntimePropertiesAsync("counted")).Value;
        var listed = await scope.Admin.GetQueuesRuntimePropertiesAsync().ToListAsync();

        var metrics = scope.Emulator.GetMetrics()["counted"];

        // 6 sent: one dead-lettered, one completed; three available, one locked and one deferred remain in the queue.
        Assert.Equal((4L, 1L, 2L, 7L), (runtime.ActiveMessageCount, runtime.DeadLetterMessageCount, runtime.ScheduledMessageCount, runtime.TotalMessageCount));
        Assert.Equal(metrics.ActiveMessages + metrics.DeferredMessages, runtime.ActiveMessageCount);
        Assert.Equal(metrics.DeadLetterMessages, runtime.DeadLetterMessageCount);
        Assert.Equal(metrics.ScheduledMessages, runtime.ScheduledMessageCount);
        Assert.Equal((0L, 0L), (runtime.TransferMessageCount, runtime.TransferDeadLetterMessageCount));
        Assert.True(runtime.CreatedAt > DateTimeOffset.UtcNow.AddMinutes(-5), $"CreatedAt {runtime.CreatedAt:O}");
        Assert.Equal(runtime.CreatedAt, runtime.UpdatedAt);
        var fromList = Assert.Single(listed, p => p.Name == "counted");
        Assert.Equal((4L, 1L, 2L), (fromList.ActiveMessageCount, fromList.DeadLetterMessageCount, fromList.ScheduledMessageCount));
        Assert.Equal(0, Assert.Single(listed, p => p.Name == EmulatorScope.Queue).TotalMessageCount);
    }

    [Fact]
    public async Task Topic_and_subscription_runtime_properties_count_what_they_hold()
    {
        await using var scope = await AdministrationScope.StartAsync();
        await scope.Admin.CreateTopicAsync("fan");
        await scope.Admin.CreateSubscriptionAsync("fan", "one");
        await scope.Admin.CreateSubscriptionAsync("fan", "two");
        await using var sender = scope.Client.CreateSender("fan");
        await using var two = scope.Client.CreateReceiver("fan", "two");
        await sender.SendMessagesAsync([new ServiceBusMessage("a"), new ServiceBusMessage("b"), new ServiceBusMessage("c")]);
        await sender.ScheduleMessageAsync(new ServiceBusMessage("later"), DateTimeOffset.UtcNow.AddHours(1));
        var first = await two.ReceiveMessageAsync(Wait);
        await two.DeadLetterMessageAsync(first!);

        var topic = (await scope.Admin.GetTopicRuntimePropertiesAsync("fan")).Value;
        var one = (await scope.Admin.GetSubscriptionRuntimePropertiesAsync("fan", "one")).Value;
        var twoRuntime = (await scope.Admin.GetSubscriptionRuntimePropertiesAsync("fan", "two")).Value;
        var listed = await scope.Admin.GetSubscriptionsRuntimePropertiesAsync("fan").ToListAsync();
        var topics = await scope.Admin.GetTopicsRuntimePropertiesAsync().ToListAsync();

        Assert.Equal((2, 1L), (topic.SubscriptionCount, topic.ScheduledMessageCount));
        Assert.Equal((3L, 0L, 3L), (one.ActiveMessageCount, one.DeadLetterMessageCount, one.TotalMessageCount));
        Assert.Equal((2L, 1L, 3L), (twoRuntime.ActiveMessageCount, twoRuntime.DeadLetterMessageCount, twoRuntime.TotalMessageCount));
        Assert.Equal(["one", "two"], listed.Select(s => s.SubscriptionName));
        Assert.Equal([3L, 2L], listed.Select(s => s.ActiveMessageCount));
        Assert.Equal([(AdministrationScope.ConfiguredTopic, 1, 0L), ("fan", 2, 1L)], topics.Select(t => (t.Name, t.SubscriptionCount, t.ScheduledMessageCount)));
    }

    [Fact]
    public async Task A_subscription_with_a_sql_rule_created_at_run_time_gets_only_the_messages_it_selects()
    {
        await using var scope = await AdministrationScope.StartAsync();
        await scope.Admin.CreateTopicAsync("parcels");
        await scope.Admin.CreateSubscriptionAsync(
            new CreateSubscriptionOptions("parcels", "heavy"),
            new CreateRuleOptions("heavy", new SqlRuleFilter("weight > 10 AND sys.Label = 'drone'")) { Action = new SqlRuleAction("SET routed = 'heavy'") });
        await scope.Admin.CreateSubscriptionAsync("parcels", "everything");
        await using var sender = scope.Client.CreateSender("parcels");
        await using var heavy = scope.Client.CreateReceiver("parcels", "heavy");
        await using var everything = scope.Client.CreateReceiver("parcels", "everything");

        await sender.SendMessagesAsync([Parcel("light drone", 5, "drone"), Parcel("heavy drone", 20, "drone"), Parcel("heavy truck", 30, "truck")]);
        var selected = await heavy.ReceiveMessageAsync(Wait);
        await heavy.CompleteMessageAsync(selected!);
        var nothingElse = await heavy.PeekMessageAsync();
        var all = await SdkReceiving.ReceiveAsync(everything, 3);

        // The rules change at run time: trucks instead of heavy drones.
        await scope.Admin.CreateRuleAsync("parcels", "heavy", new CreateRuleOptions("trucks", new SqlRuleFilter("sys.Label = 'truck'")));
        await scope.Admin.DeleteRuleAsync("parcels", "heavy", "heavy");
        await sender.SendMessagesAsync([Parcel("second heavy drone", 25, "drone"), Parcel("second truck", 40, "truck")]);
        var afterChange = await heavy.ReceiveMessageAsync(Wait);
        await heavy.CompleteMessageAsync(afterChange!);
        var stillNothingElse = await heavy.PeekMessageAsync();

        Assert.Equal("heavy drone", selected!.Body.ToString());
        Assert.Equal("heavy", selected.ApplicationProperties["routed"]);
        Assert.Null(nothingElse);
        Assert.Equal(["light drone", "heavy drone", "heavy truck"], all.Select(m => m.Body.ToString()));
        Assert.All(all, m => Assert.False(m.ApplicationProperties.ContainsKey("routed")));
        Assert.Equal("second truck", afterChange!.Body.ToString());
        Assert.False(afterChange.ApplicationProperties.ContainsKey("routed"));
        Assert.Null(stillNothingElse);
    }

    [Fact]
    public async Task A_queue_created_at_run_time_takes_its_lock_duration_and_dead_letters_at_its_max_delivery_count()
    {
        var time = new FakeTimeProvider(DateTimeOffset.FromUnixTimeSeconds(DateTimeOffset.UtcNow.ToUnixTimeSeconds()));
        await using var scope = await AdministrationScope.StartAsync(time);
        await scope.Admin.CreateQueueAsync(new CreateQueueOptions("short-lived") { LockDuration = TimeSpan.FromSeconds(10), MaxDeliveryCount = 2 });
        await using var sender = scope.Client.CreateSender("short-lived");
        await using var receiver = scope.Client.CreateReceiver("short-lived");
        await using var deadLetters = scope.Client.CreateReceiver("short-lived", new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        await sender.SendMessageAsync(new ServiceBusMessage("fragile"));

        var first = await receiver.ReceiveMessageAsync(Wait);
        time.Advance(TimeSpan.FromSeconds(11));
        var second = await receiver.ReceiveMessageAsync(Wait);
        time.Advance(TimeSpan.FromSeconds(11));
        var deadLettered = await deadLetters.ReceiveMessageAsync(Wait);

        Assert.Equal(time.GetUtcNow().AddSeconds(-22).AddSeconds(10), first!.LockedUntil);
        Assert.Equal((1, 2), (first.DeliveryCount, second!.DeliveryCount));
        Assert.Equal("fragile", deadLettered!.Body.ToString());
        Assert.Equal("MaxDeliveryCountExceeded", deadLettered.DeadLetterReason);
    }

    [Fact]
    public async Task An_update_changes_the_lock_duration_and_max_delivery_count_of_an_entity_in_use()
    {
        var time = new FakeTimeProvider(DateTimeOffset.FromUnixTimeSeconds(DateTimeOffset.UtcNow.ToUnixTimeSeconds()));
        await using var scope = await AdministrationScope.StartAsync(time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var deadLetters = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        await sender.SendMessageAsync(new ServiceBusMessage("configured"));
        var before = await receiver.ReceiveMessageAsync(Wait);
        await receiver.AbandonMessageAsync(before!);

        var queue = (await scope.Admin.GetQueueAsync(EmulatorScope.Queue)).Value;
        queue.LockDuration = TimeSpan.FromSeconds(20);
        queue.MaxDeliveryCount = 2;
        await scope.Admin.UpdateQueueAsync(queue);
        var after = await receiver.ReceiveMessageAsync(Wait);
        await receiver.AbandonMessageAsync(after!);
        var deadLettered = await deadLetters.ReceiveMessageAsync(Wait);

        Assert.Equal(time.GetUtcNow().AddMinutes(1), before!.LockedUntil);
        Assert.Equal(time.GetUtcNow().AddSeconds(20), after!.LockedUntil);
        Assert.Equal("configured", deadLettered!.Body.ToString());
        Assert.Equal("MaxDeliveryCountExceeded", deadLettered.DeadLetterReason);
    }

    [Fact]
    public async Task Session_queue_and_session_subscription_created_at_run_time_hand_out_sessions()
    {
        await using var scope = await AdministrationScope.StartAsync();
        await scope.Admin.CreateQueueAsync(new CreateQueueOptions("in-sessions") { RequiresSession = true });
        await scope.Admin.CreateTopicAsync("grouped");
        await scope.Admin.CreateSubscriptionAsync(new CreateSubscriptionOptions("grouped", "by-drone") { RequiresSession = true });
        await using var queueSender = scope.Client.CreateSender("in-sessions");
        await using var topicSender = scope.Client.CreateSender("grouped");
        await queueSender.SendMessageAsync(new ServiceBusMessage("queued") { SessionId = "drone-1" });
        await topicSender.SendMessageAsync(new ServiceBusMessage("published") { SessionId = "drone-2" });

        await using var queueSession = await scope.Client.AcceptNextSessionAsync("in-sessions");
        var queued = await queueSession.ReceiveMessageAsync(Wait);
        await using var subscriptionSession = await scope.Client.AcceptNextSessionAsync("grouped", "by-drone");
        var published = await subscriptionSession.ReceiveMessageAsync(Wait);
        await using var plain = scope.Client.CreateReceiver("in-sessions");
        var refused = await Assert.ThrowsAsync<InvalidOperationException>(() => plain.ReceiveMessageAsync(Wait));
        var withoutSession = await Assert.ThrowsAsync<InvalidOperationException>(() => queueSender.SendMessageAsync(new ServiceBusMessage("no session")));

        Assert.Equal(("drone-1", "queued"), (queueSession.SessionId, queued!.Body.ToString()));
        Assert.Equal(("drone-2", "published"), (subscriptionSession.SessionId, published!.Body.ToString()));
        Assert.Contains("requires sessions", refused.Message, StringComparison.Ordinal);
        Assert.Contains("SessionId was not set", withoutSession.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Deleting_an_entity_in_use_detaches_its_links_and_a_new_one_of_that_name_starts_empty()
    {
        await using var scope = await AdministrationScope.StartAsync();
        await scope.Admin.CreateQueueAsync("doomed");
        await using var sender = scope.Client.CreateSender("doomed");
        await using var receiver = scope.Client.CreateReceiver("doomed");
        await sender.SendMessageAsync(new ServiceBusMessage("lost with the queue"));
        var received = await receiver.ReceiveMessageAsync(Wait);

        await scope.Admin.DeleteQueueAsync("doomed");
        var send = await Assert.ThrowsAsync<ServiceBusException>(() => sender.SendMessageAsync(new ServiceBusMessage("too late")));
        var receive = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.ReceiveMessageAsync(Wait));
        await scope.Admin.CreateQueueAsync("doomed");
        await using var newReceiver = scope.Client.CreateReceiver("doomed");
        var leftOver = await newReceiver.PeekMessageAsync();

        Assert.Equal("lost with the queue", received!.Body.ToString());
        Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, send.Reason);
        Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, receive.Reason);
        Assert.Null(leftOver);
        Assert.DoesNotContain(scope.Emulator.GetMetrics().Queues, q => q.Queue == "doomed" && q.Counters.IncomingMessages > 0);
    }

    private static ServiceBusMessage Parcel(string body, int weight, string label)
    {
        var message = new ServiceBusMessage(body) { Subject = label };
        message.ApplicationProperties["weight"] = weight;
        return message;
    }
}
