namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>The topic the topic tests share: five subscriptions with different rules and settings.</summary>
internal static class TopicScope
{
    public const string Topic = "deliveries";

    /// <summary>No rules: the default rule, every message.</summary>
    public const string All = "all";

    /// <summary>SQL filter on a user property: <c>priority = 'high'</c>.</summary>
    public const string Urgent = "urgent";

    /// <summary>SQL filter on the label, with an action setting <c>routed = 'drone'</c>.</summary>
    public const string Labelled = "labelled";

    /// <summary>Correlation filter: CorrelationId <c>c-1</c> and property <c>region = 'west'</c>.</summary>
    public const string Correlated = "correlated";

    /// <summary>Its own lock duration (2 s) and MaxDeliveryCount (2); filter <c>kind = 'strict'</c>.</summary>
    public const string Strict = "strict";

    public static ServiceBusEmulatorOptions Options(TimeProvider? time = null) => new()
    {
        HttpPort = null,
        TimeProvider = time ?? TimeProvider.System,
        Queues = [new QueueOptions { Name = EmulatorScope.Queue }],
        Topics =
        [
            new TopicOptions
            {
                Name = Topic,
                Subscriptions =
                [
                    new SubscriptionOptions { Name = All },
                    new SubscriptionOptions { Name = Urgent, Rules = [new RuleOptions { Name = "high", SqlExpression = "priority = 'high'" }] },
                    new SubscriptionOptions { Name = Labelled, Rules = [new RuleOptions { Name = "drone", SqlExpression = "sys.Label = 'drone'", ActionSqlExpression = "SET routed = 'drone'" }] },
                    new SubscriptionOptions
                    {
                        Name = Correlated,
                        Rules = [new RuleOptions { Name = "west", CorrelationFilter = new CorrelationFilterOptions { CorrelationId = "c-1", Properties = new Dictionary<string, object?> { ["region"] = "west" } } }],
                    },
                    new SubscriptionOptions
                    {
                        Name = Strict,
                        LockDuration = TimeSpan.FromSeconds(2),
                        MaxDeliveryCount = 2,
                        Rules = [new RuleOptions { Name = "strict", SqlExpression = "kind = 'strict'" }],
                    },
                ],
            },
        ],
    };
}
