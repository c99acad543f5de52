using DroneDelivery.Emulators.ServiceBus.Metrics;
using Admin = Azure.Messaging.ServiceBus.Administration;
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
    public async Task Sdk_unknown_subscription_send_to_a_subscription_and_receive_from_a_topic_are_refused_and_the_connection_keeps_working()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options());
        await using var client = Client(emulator);
        await using var missing = client.CreateReceiver(TopicScope.Topic, "nobody");
        await using var toSubscription = client.CreateSender("deliveries/Subscriptions/all");
        await using var fromTopic = client.CreateReceiver(TopicScope.Topic);

        var notFound = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => missing.ReceiveMessageAsync(Bound));
        await Assert.ThrowsAnyAsync<Exception>(() => toSubscription.SendMessageAsync(new Sdk.ServiceBusMessage("nope")));
        await Assert.ThrowsAnyAsync<Exception>(() => fromTopic.ReceiveMessageAsync(Bound));

        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.All);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("still here"));
        var received = await receiver.ReceiveMessageAsync(Bound);
        await receiver.CompleteMessageAsync(received!);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityNotFound, notFound.Reason);
        Assert.Equal("still here", received!.Body.ToString());
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task Sdk_rule_manager_lists_the_default_rule_then_adds_and_removes_rules_that_take_effect()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options());
        await using var client = Client(emulator);
        await using var rules = client.CreateRuleManager(TopicScope.Topic, TopicScope.All);
        var initial = await ToListAsync(rules.GetRulesAsync());

        await rules.DeleteRuleAsync(SubscriptionOptions.DefaultRuleName);
        await rules.CreateRuleAsync(new Admin.CreateRuleOptions("heavy", new Admin.SqlRuleFilter("weight > 10")) { Action = new Admin.SqlRuleAction("SET tagged = 'heavy'") });
        await rules.CreateRuleAsync("west", new Admin.CorrelationRuleFilter { CorrelationId = "c-9", ApplicationProperties = { ["region"] = "west" } });
        var duplicate = await Assert.ThrowsAsync<Sdk.ServiceBusException>(() => rules.CreateRuleAsync("west", new Admin.TrueRuleFilter()));
        var bad = await Assert.ThrowsAnyAsync<Exception>(() => rules.CreateRuleAsync("bad", new Admin.SqlRuleFilter("weight >")));
        var missing = await Assert.ThrowsAnyAsync<Exception>(() => rules.DeleteRuleAsync("nothing"));
        var current = await ToListAsync(rules.GetRulesAsync());

        await using var sender = client.CreateSender(TopicScope.Topic);
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.All);
        var light = new Sdk.ServiceBusMessage("light");
        light.ApplicationProperties["weight"] = 1;
        var heavy = new Sdk.ServiceBusMessage("heavy");
        heavy.ApplicationProperties["weight"] = 20;
        var west = new Sdk.ServiceBusMessage("west") { CorrelationId = "c-9" };
        west.ApplicationProperties["region"] = "west";
        await sender.SendMessagesAsync([light, heavy, west]);
        var first = await receiver.ReceiveMessageAsync(Bound);
        var second = await receiver.ReceiveMessageAsync(Bound);

        var rule = Assert.Single(initial);
        Assert.Equal("$Default", rule.Name);
        Assert.IsType<Admin.TrueRuleFilter>(rule.Filter);
        Assert.Equal(["heavy", "west"], current.Select(r => r.Name));
        Assert.Equal("weight > 10", Assert.IsType<Admin.SqlRuleFilter>(current[0].Filter).SqlExpression);
        Assert.Equal("SET tagged = 'heavy'", Assert.IsType<Admin.SqlRuleAction>(current[0].Action).SqlExpression);
        var correlation = Assert.IsType<Admin.CorrelationRuleFilter>(current[1].Filter);
        Assert.Equal("c-9", correlation.CorrelationId);
        Assert.Equal("west", correlation.ApplicationProperties["region"]);
        Assert.Equal(Sdk.ServiceBusFailureReason.MessagingEntityAlreadyExists, duplicate.Reason);
        Assert.NotNull(bad);
        Assert.NotNull(missing);
        Assert.Equal("heavy", first!.Body.ToString());
        Assert.Equal("heavy", first.ApplicationProperties["tagged"]);
        Assert.Equal("west", second!.Body.ToString());
    }

    [Fact]
    public async Task Prometheus_metrics_carry_a_series_per_topic_and_subscription_as_for_queues()
    {
        await using var emulator = await ServiceBusEmulator.StartAsync(TopicScope.Options() with { HttpPort = 0 });
        await using var client = Client(emulator);
        await using var sender = client.CreateSender(TopicScope.Topic);
        var message = new Sdk.ServiceBusMessage("fan out") { Subject = "drone" };
        message.ApplicationProperties["priority"] = "high";
        await sender.SendMessageAsync(message);
        await sender.ScheduleMessageAsync(new Sdk.ServiceBusMessage("later"), DateTimeOffset.UtcNow.AddHours(1));
        await using var receiver = client.CreateReceiver(TopicScope.Topic, TopicScope.All);
        await receiver.CompleteMessageAsync((await receiver.ReceiveMessageAsync(Bound))!);

        using var http = new HttpClient { BaseAddress = emulator.HttpEndpoint };
        var text = await http.GetStringAsync(EmulatorMetricNames.PrometheusPath);

        string Line(string name, string entity, long value) => $"{name}{{queue=\"{entity}\"}} {value}\n";
        var all = $"{TopicScope.Topic}/Subscriptions/{TopicScope.All}";
        var urgent = $"{TopicScope.Topic}/Subscriptions/{TopicScope.Urgent}";
        var strict = $"{TopicScope.Topic}/Subscriptions/{TopicScope.Strict}";
        Assert.Contains(Line(EmulatorMetricNames.IncomingMessages, TopicScope.Topic, 2), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.ScheduledMessages, TopicScope.Topic, 1), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.ActiveMessages, TopicScope.Topic, 0), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.IncomingMessages, all, 1), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.OutgoingDeliveries, all, 1), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.CompletedMessages, all, 1), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.ActiveMessages, all, 0), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.IncomingMessages, urgent, 1), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.ActiveMessages, urgent, 1), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.IncomingMessages, strict, 0), text, StringComparison.Ordinal);
        Assert.Contains(Line(EmulatorMetricNames.DeadLetterMessages, strict, 0), text, StringComparison.Ordinal);
    }

    private static async Task<List<T>> ToListAsync<T>(IAsyncEnumerable<T> items)
    {
        var list = new List<T>();
        await foreach (var item in items)
        {
            list.Add(item);
        }

        return list;
    }
}
