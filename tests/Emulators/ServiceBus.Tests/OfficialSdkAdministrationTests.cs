using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The administration API through the official .NET SDK's <see cref="ServiceBusAdministrationClient"/>: create, get,
/// update, delete and list queues, topics, subscriptions and rules, the namespace's properties, and the failures the SDK
/// makes of the service's answers for a missing or existing entity.
/// </summary>
public sealed class OfficialSdkAdministrationTests
{
    [Fact]
    public async Task Queue_is_created_read_updated_listed_and_deleted()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;

        var created = (await admin.CreateQueueAsync(new CreateQueueOptions("made-at-run-time")
        {
            LockDuration = TimeSpan.FromSeconds(20),
            MaxDeliveryCount = 4,
            DefaultMessageTimeToLive = TimeSpan.FromHours(2),
            DeadLetteringOnMessageExpiration = true,
            RequiresDuplicateDetection = true,
            DuplicateDetectionHistoryTimeWindow = TimeSpan.FromMinutes(3),
            UserMetadata = "made by a test",
            MaxSizeInMegabytes = 2048,
        })).Value;
        var read = (await admin.GetQueueAsync("made-at-run-time")).Value;
        read.MaxDeliveryCount = 7;
        read.LockDuration = TimeSpan.FromSeconds(45);
        var updated = (await admin.UpdateQueueAsync(read)).Value;
        var reread = (await admin.GetQueueAsync("made-at-run-time")).Value;
        var listed = await admin.GetQueuesAsync().Select(queue => queue.Name).ToListAsync();

        var existed = (await admin.QueueExistsAsync("made-at-run-time")).Value;
        await admin.DeleteQueueAsync("made-at-run-time");
        var exists = (await admin.QueueExistsAsync("made-at-run-time")).Value;

        Assert.Equal("made-at-run-time", created.Name);
        Assert.Equal(TimeSpan.FromSeconds(20), created.LockDuration);
        Assert.Equal(4, created.MaxDeliveryCount);
        Assert.Equal(TimeSpan.FromHours(2), read.DefaultMessageTimeToLive);
        Assert.True(read.DeadLetteringOnMessageExpiration);
        Assert.True(read.RequiresDuplicateDetection);
        Assert.Equal(TimeSpan.FromMinutes(3), read.DuplicateDetectionHistoryTimeWindow);
        Assert.Equal("made by a test", read.UserMetadata);
        Assert.Equal(2048, read.MaxSizeInMegabytes);
        Assert.False(read.RequiresSession);
        Assert.Equal(EntityStatus.Active, read.Status);
        Assert.Equal(7, updated.MaxDeliveryCount);
        Assert.Equal((7, TimeSpan.FromSeconds(45)), (reread.MaxDeliveryCount, reread.LockDuration));
        Assert.Equal([EmulatorScope.Queue, "made-at-run-time"], listed);
        Assert.True(existed);
        Assert.False(exists);
    }

    [Fact]
    public async Task Missing_and_existing_entities_fail_as_the_sdk_reports_the_service()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;
        await admin.CreateTopicAsync("t");
        await admin.CreateSubscriptionAsync("t", "s");
        var deleted = (await admin.CreateQueueAsync("deleted")).Value;
        await admin.DeleteQueueAsync("deleted");

        var getQueue = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetQueueAsync("nowhere"));
        var getTopic = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetTopicAsync("nowhere"));
        var getSubscription = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetSubscriptionAsync("t", "nowhere"));
        var getRule = await Assert.ThrowsAsync<ServiceBusException>(() => admin.GetRuleAsync("t", "s", "nowhere"));
        var deleteQueue = await Assert.ThrowsAsync<ServiceBusException>(() => admin.DeleteQueueAsync("nowhere"));
        var deleteSubscription = await Assert.ThrowsAsync<ServiceBusException>(() => admin.DeleteSubscriptionAsync("t", "nowhere"));
        var deleteRule = await Assert.ThrowsAsync<ServiceBusException>(() => admin.DeleteRuleAsync("t", "s", "nowhere"));
        var updateQueue = await Assert.ThrowsAsync<ServiceBusException>(() => admin.UpdateQueueAsync(deleted));
        var createQueue = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateQueueAsync(EmulatorScope.Queue));
        var createQueueNamedLikeTopic = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateQueueAsync("t"));
        var createTopic = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateTopicAsync("t"));
        var createSubscription = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateSubscriptionAsync("t", "s"));
        var createRule = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateRuleAsync("t", "s", new CreateRuleOptions(RuleProperties.DefaultRuleName)));
        var subscriptionOfMissingTopic = await Assert.ThrowsAsync<ServiceBusException>(() => admin.CreateSubscriptionAsync("nowhere", "s"));

        Assert.All([getQueue, getTopic, getSubscription, getRule, deleteQueue, deleteSubscription, deleteRule, updateQueue, subscriptionOfMissingTopic],
            e => Assert.Equal(ServiceBusFailureReason.MessagingEntityNotFound, e.Reason));
        Assert.All([createQueue, createQueueNamedLikeTopic, createTopic, createSubscription, createRule],
            e => Assert.Equal(ServiceBusFailureReason.MessagingEntityAlreadyExists, e.Reason));
        Assert.Contains("SubCode=40900", createQueue.Message, StringComparison.Ordinal);
        Assert.Contains("The messaging entity 'sbemulatorns:Topic:t|s' already exists", createSubscription.Message, StringComparison.Ordinal);
        Assert.False((await admin.TopicExistsAsync("nowhere")).Value);
        Assert.False((await admin.SubscriptionExistsAsync("t", "nowhere")).Value);
        Assert.False((await admin.RuleExistsAsync("t", "s", "nowhere")).Value);
    }

    [Fact]
    public async Task Topic_subscription_and_rules_are_created_read_updated_listed_and_deleted()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;

        var topic = (await admin.CreateTopicAsync(new CreateTopicOptions("shipments") { DefaultMessageTimeToLive = TimeSpan.FromDays(1), RequiresDuplicateDetection = true })).Value;
        var subscription = (await admin.CreateSubscriptionAsync(
            new CreateSubscriptionOptions("shipments", "urgent") { LockDuration = TimeSpan.FromSeconds(30), MaxDeliveryCount = 3, UserMetadata = "urgent ones" },
            new CreateRuleOptions("high", new SqlRuleFilter("priority = 'high'")) { Action = new SqlRuleAction("SET routed = 'urgent'") })).Value;
        var correlation = new CorrelationRuleFilter { CorrelationId = "c-1", Subject = "drone", ContentType = "application/json" };
        correlation.ApplicationProperties["region"] = "west";
        correlation.ApplicationProperties["weight"] = 12;
        correlation.ApplicationProperties["fragile"] = true;
        var added = (await admin.CreateRuleAsync("shipments", "urgent", new CreateRuleOptions("west", correlation))).Value;
        var rule = (await admin.GetRuleAsync("shipments", "urgent", "high")).Value;
        rule.Filter = new SqlRuleFilter("priority = 'higher'");
        var updatedRule = (await admin.UpdateRuleAsync("shipments", "urgent", rule)).Value;
        var rules = await admin.GetRulesAsync("shipments", "urgent").ToListAsync();

        var readSubscription = (await admin.GetSubscriptionAsync("shipments", "urgent")).Value;
        readSubscription.MaxDeliveryCount = 5;
        var updatedSubscription = (await admin.UpdateSubscriptionAsync(readSubscription)).Value;
        var readTopic = (await admin.GetTopicAsync("shipments")).Value;
        readTopic.DefaultMessageTimeToLive = TimeSpan.FromHours(6);
        var updatedTopic = (await admin.UpdateTopicAsync(readTopic)).Value;
        var topics = await admin.GetTopicsAsync().Select(t => t.Name).ToListAsync();

        var subscriptions = await admin.GetSubscriptionsAsync("shipments").Select(s => s.SubscriptionName).ToListAsync();

        await admin.DeleteRuleAsync("shipments", "urgent", "west");
        var ruleExists = (await admin.RuleExistsAsync("shipments", "urgent", "west")).Value;
        await admin.DeleteSubscriptionAsync("shipments", "urgent");
        var subscriptionExists = (await admin.SubscriptionExistsAsync("shipments", "urgent")).Value;
        await admin.DeleteTopicAsync("shipments");
        var topicExists = (await admin.TopicExistsAsync("shipments")).Value;

        Assert.Equal(TimeSpan.FromDays(1), topic.DefaultMessageTimeToLive);
        Assert.True(topic.RequiresDuplicateDetection);
        Assert.Equal(("shipments", "urgent", 3, "urgent ones"), (subscription.TopicName, subscription.SubscriptionName, subscription.MaxDeliveryCount, subscription.UserMetadata));
        Assert.Equal(new SqlRuleFilter("priority = 'higher'"), updatedRule.Filter);
        Assert.Equal(new SqlRuleAction("SET routed = 'urgent'"), updatedRule.Action);
        var west = Assert.IsType<CorrelationRuleFilter>(added.Filter);
        Assert.Equal(("c-1", "drone", "application/json"), (west.CorrelationId, west.Subject, west.ContentType));
        Assert.Equal("west", west.ApplicationProperties["region"]);
        Assert.Equal(12, west.ApplicationProperties["weight"]);
        Assert.Equal(true, west.ApplicationProperties["fragile"]);
        Assert.Equal(["high", "west"], rules.Select(r => r.Name));
        Assert.Equal(5, updatedSubscription.MaxDeliveryCount);
        Assert.Equal(TimeSpan.FromSeconds(30), updatedSubscription.LockDuration);
        Assert.Equal(TimeSpan.FromHours(6), updatedTopic.DefaultMessageTimeToLive);
        Assert.Equal([AdministrationScope.ConfiguredTopic, "shipments"], topics);
        Assert.Equal(["urgent"], subscriptions);
        Assert.False(ruleExists);
        Assert.False(subscriptionExists);
        Assert.False(topicExists);
    }

    [Fact]
    public async Task A_subscription_created_without_a_rule_gets_the_default_rule_and_the_configured_entities_are_listed()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;

        await admin.CreateSubscriptionAsync(AdministrationScope.ConfiguredTopic, "added");
        var rules = await admin.GetRulesAsync(AdministrationScope.ConfiguredTopic, "added").ToListAsync();

        var configured = (await admin.GetSubscriptionAsync(AdministrationScope.ConfiguredTopic, "all")).Value;
        var queue = (await admin.GetQueueAsync(EmulatorScope.Queue)).Value;
        var ns = (await admin.GetNamespacePropertiesAsync()).Value;

        var only = Assert.Single(rules);
        Assert.Equal(RuleProperties.DefaultRuleName, only.Name);
        Assert.Equal(new TrueRuleFilter(), only.Filter);
        Assert.Null(only.Action);
        Assert.Equal(("all", TimeSpan.FromMinutes(1), 10), (configured.SubscriptionName, configured.LockDuration, configured.MaxDeliveryCount));
        Assert.Equal((TimeSpan.FromMinutes(1), 10, TimeSpan.FromDays(14)), (queue.LockDuration, queue.MaxDeliveryCount, queue.DefaultMessageTimeToLive));
        Assert.Equal(("sbemulatorns", MessagingSku.Standard), (ns.Name, ns.MessagingSku));
    }

    [Fact]
    public async Task Deleting_a_queue_leaves_a_queue_whose_name_starts_with_its_own_as_it_was()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;
        await admin.CreateQueueAsync(new CreateQueueOptions("depot") { UserMetadata = "parent" });
        var nested = (await admin.CreateQueueAsync(new CreateQueueOptions("depot/returns") { UserMetadata = "nested" })).Value;
        var createdAt = (await admin.GetQueueRuntimePropertiesAsync("depot/returns")).Value.CreatedAt;

        await admin.DeleteQueueAsync("depot");
        var after = (await admin.GetQueueAsync("depot/returns")).Value;

        Assert.Equal("nested", nested.UserMetadata);
        Assert.Equal("nested", after.UserMetadata);
        Assert.Equal(createdAt, (await admin.GetQueueRuntimePropertiesAsync("depot/returns")).Value.CreatedAt);
    }

    [Fact]
    public async Task Lists_are_paged_as_the_sdk_pages_them()
    {
        await using var scope = await AdministrationScope.StartAsync();
        var admin = scope.Admin;
        var names = Enumerable.Range(0, 120).Select(i => $"q{i:D3}").ToList();
        foreach (var name in names)
        {
            await admin.CreateQueueAsync(name);
        }

        var pages = new List<int>();
        var listed = new List<string>();
        await foreach (var page in admin.GetQueuesAsync().AsPages())
        {
            pages.Add(page.Values.Count);
            listed.AddRange(page.Values.Select(q => q.Name));
        }

        Assert.Equal([100, 21], pages);
        Assert.Equal([EmulatorScope.Queue, .. names], listed);
    }
}
