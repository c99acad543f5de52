using System.Text.Json;
using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus;

/// <summary>One topic, with the properties of the official emulator's Config.json and its subscriptions.</summary>
public sealed record TopicOptions
{
    public required string Name { get; init; }

    /// <summary>Time to live of messages that set none (a message's own TTL, or a subscription's, wins when shorter). Default 14 days.</summary>
    public TimeSpan DefaultMessageTimeToLive { get; init; } = TimeSpan.FromDays(14);

    /// <summary>Drop a message whose MessageId was sent to the topic within <see cref="DuplicateDetectionHistoryTimeWindow"/>.</summary>
    public bool RequiresDuplicateDetection { get; init; }

    public TimeSpan DuplicateDetectionHistoryTimeWindow { get; init; } = TimeSpan.FromMinutes(10);

    public IReadOnlyList<SubscriptionOptions> Subscriptions { get; init; } = [];

    /// <summary>The topic as a queue that holds only scheduled messages (the rest is copied to the subscriptions at once).</summary>
    internal QueueOptions AsQueue() => new()
    {
        Name = Name,
        Kind = "Topic",
        DefaultMessageTimeToLive = DefaultMessageTimeToLive,
        RequiresDuplicateDetection = RequiresDuplicateDetection,
        DuplicateDetectionHistoryTimeWindow = DuplicateDetectionHistoryTimeWindow,
    };

    public void Validate()
    {
        AsQueue().Validate();
        var names = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var subscription in Subscriptions)
        {
            subscription.Validate(Name);
            if (!names.Add(subscription.Name))
            {
                throw new EmulatorConfigurationException($"Topic '{Name}': subscription '{subscription.Name}' is defined twice.");
            }
        }
    }

    internal static TopicOptions FromConfig(JsonElement topic, string where)
    {
        var name = ServiceBusEmulatorOptions.OptionalString(topic, "Name", where) ?? throw new EmulatorConfigurationException($"{where}: missing 'Name'.");
        var options = new TopicOptions { Name = name };
        where = $"{where} ('{name}')";
        if (topic.TryGetProperty("Properties", out var p) && p.ValueKind == JsonValueKind.Object)
        {
            var at = where + ".Properties";
            options = options with
            {
                DefaultMessageTimeToLive = ServiceBusEmulatorOptions.OptionalDuration(p, "DefaultMessageTimeToLive", at) ?? options.DefaultMessageTimeToLive,
                RequiresDuplicateDetection = ServiceBusEmulatorOptions.OptionalBool(p, "RequiresDuplicateDetection", at) ?? false,
                DuplicateDetectionHistoryTimeWindow = ServiceBusEmulatorOptions.OptionalDuration(p, "DuplicateDetectionHistoryTimeWindow", at) ?? options.DuplicateDetectionHistoryTimeWindow,
            };
        }

        var subscriptions = new List<SubscriptionOptions>();
        if (topic.TryGetProperty("Subscriptions", out var array) && array.ValueKind != JsonValueKind.Null)
        {
            if (array.ValueKind != JsonValueKind.Array)
            {
                throw new EmulatorConfigurationException($"{where}.Subscriptions must be an array.");
            }

            var index = 0;
            foreach (var s in array.EnumerateArray())
            {
                subscriptions.Add(SubscriptionOptions.FromConfig(s, $"{where}.Subscriptions[{index++}]"));
            }
        }

        return options with { Subscriptions = subscriptions };
    }
}

/// <summary>One subscription of a topic: it behaves as a queue fed by the topic through its rules.</summary>
public sealed record SubscriptionOptions
{
    /// <summary>The rule a subscription without rules gets: every message.</summary>
    public const string DefaultRuleName = "$Default";

    public required string Name { get; init; }

    public TimeSpan LockDuration { get; init; } = TimeSpan.FromMinutes(1);

    public int MaxDeliveryCount { get; init; } = 10;

    public TimeSpan DefaultMessageTimeToLive { get; init; } = TimeSpan.FromDays(14);

    public bool DeadLetteringOnMessageExpiration { get; init; }

    /// <summary>
    /// Copies are grouped by SessionId and received through session receivers only; a copy without a SessionId is
    /// dead-lettered (reason "Session id is null."), as the service does.
    /// </summary>
    public bool RequiresSession { get; init; }

    /// <summary>The rules; none means the default rule <c>$Default</c> (true filter).</summary>
    public IReadOnlyList<RuleOptions> Rules { get; init; } = [];

    /// <summary>The entity path of a subscription: <c>&lt;topic&gt;/Subscriptions/&lt;subscription&gt;</c>.</summary>
    public static string PathOf(string topic, string subscription) => $"{topic}/Subscriptions/{subscription}";

    internal QueueOptions AsQueue(string topic) => new()
    {
        Name = PathOf(topic, Name),
        Kind = "Subscription",
        LockDuration = LockDuration,
        MaxDeliveryCount = MaxDeliveryCount,
        DefaultMessageTimeToLive = DefaultMessageTimeToLive,
        DeadLetteringOnMessageExpiration = DeadLetteringOnMessageExpiration,
        RequiresSession = RequiresSession,
    };

    /// <summary>The rules in force: the configured ones, or <c>$Default</c>.</summary>
    internal IReadOnlyList<RuleOptions> EffectiveRules => Rules.Count > 0 ? Rules : [new RuleOptions { Name = DefaultRuleName }];

    public void Validate(string topic)
    {
        if (string.IsNullOrWhiteSpace(Name) || Name.Contains('/', StringComparison.Ordinal))
        {
            throw new EmulatorConfigurationException($"Topic '{topic}': subscription name '{Name}' is invalid: use letters, digits, '.', '-' and '_'.");
        }

        AsQueue(topic).Validate();
        var names = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var rule in Rules)
        {
            rule.Validate($"Subscription '{PathOf(topic, Name)}'");
            if (!names.Add(rule.Name))
            {
                throw new EmulatorConfigurationException($"Subscription '{PathOf(topic, Name)}': rule '{rule.Name}' is defined twice.");
            }
        }
    }

    internal static SubscriptionOptions FromConfig(JsonElement subscription, string where)
    {
        var name = ServiceBusEmulatorOptions.OptionalString(subscription, "Name", where) ?? throw new EmulatorConfigurationException($"{where}: missing 'Name'.");
        var options = new SubscriptionOptions { Name = name };
        where = $"{where} ('{name}')";
        if (subscription.TryGetProperty("Properties", out var p) && p.ValueKind == JsonValueKind.Object)
        {
            var at = where + ".Properties";
            foreach (var forward in new[] { "ForwardTo", "ForwardDeadLetteredMessagesTo" })
            {
                if (!string.IsNullOrEmpty(ServiceBusEmulatorOptions.OptionalString(p, forward, at)))
                {
                    throw new EmulatorConfigurationException($"{at}.{forward}: auto-forwarding is not supported by this emulator.");
                }
            }

            var maxDelivery = ServiceBusEmulatorOptions.OptionalLong(p, "MaxDeliveryCount", at);
            options = options with
            {
                LockDuration = ServiceBusEmulatorOptions.OptionalDuration(p, "LockDuration", at) ?? options.LockDuration,
                MaxDeliveryCount = maxDelivery is { } m ? (int)Math.Clamp(m, int.MinValue, int.MaxValue) : options.MaxDeliveryCount,
                DefaultMessageTimeToLive = ServiceBusEmulatorOptions.OptionalDuration(p, "DefaultMessageTimeToLive", at) ?? options.DefaultMessageTimeToLive,
                DeadLetteringOnMessageExpiration = ServiceBusEmulatorOptions.OptionalBool(p, "DeadLetteringOnMessageExpiration", at) ?? false,
                RequiresSession = ServiceBusEmulatorOptions.OptionalBool(p, "RequiresSession", at) ?? false,
            };
        }

        var rules = new List<RuleOptions>();
        if (subscription.TryGetProperty("Rules", out var array) && array.ValueKind != JsonValueKind.Null)
        {
            if (array.ValueKind != JsonValueKind.Array)
            {
                throw new EmulatorConfigurationException($"{where}.Rules must be an array.");
            }

            var index = 0;
            foreach (var r in array.EnumerateArray())
            {
                rules.Add(RuleOptions.FromConfig(r, $"{where}.Rules[{index++}]"));
            }
        }

        return options with { Rules = rules };
    }
}

/// <summary>A subscription rule: a SQL or correlation filter and an optional SQL action.</summary>
public sealed record RuleOptions
{
    public required string Name { get; init; }

    /// <summary>The SQL filter (used when <see cref="CorrelationFilter"/> is null); null or empty means every message.</summary>
    public string? SqlExpression { get; init; }

    public CorrelationFilterOptions? CorrelationFilter { get; init; }

    /// <summary>SQL action applied to the subscription's copy: <c>SET name = value</c>, <c>REMOVE name</c>.</summary>
    public string? ActionSqlExpression { get; init; }

    public void Validate(string owner)
    {
        if (string.IsNullOrWhiteSpace(Name))
        {
            throw new EmulatorConfigurationException($"{owner}: a rule has no name.");
        }

        try
        {
            _ = CreateFilter();
        }
        catch (SqlRuleException e)
        {
            throw new EmulatorConfigurationException($"{owner}, rule '{Name}': SQL filter \"{SqlExpression}\" is not supported at position {e.Position}: {e.Message}.");
        }

        try
        {
            _ = CreateAction();
        }
        catch (SqlRuleException e)
        {
            throw new EmulatorConfigurationException($"{owner}, rule '{Name}': SQL action \"{ActionSqlExpression}\" is not supported at position {e.Position}: {e.Message}.");
        }
    }

    internal IRuleFilter CreateFilter() => CorrelationFilter is { } correlation
        ? new Broker.CorrelationFilter(correlation)
        : string.IsNullOrWhiteSpace(SqlExpression) ? TrueFilter.Instance : new SqlFilter(SqlExpression);

    internal IRuleAction? CreateAction() => string.IsNullOrWhiteSpace(ActionSqlExpression) ? null : new SqlAction(ActionSqlExpression);

    internal static RuleOptions FromConfig(JsonElement rule, string where)
    {
        var name = ServiceBusEmulatorOptions.OptionalString(rule, "Name", where) ?? throw new EmulatorConfigurationException($"{where}: missing 'Name'.");
        where = $"{where} ('{name}')";
        if (!rule.TryGetProperty("Properties", out var p) || p.ValueKind != JsonValueKind.Object)
        {
            return new RuleOptions { Name = name };
        }

        var at = where + ".Properties";
        var type = ServiceBusEmulatorOptions.OptionalString(p, "FilterType", at) ?? "Sql";
        string? action = null;
        if (p.TryGetProperty("Action", out var a) && a.ValueKind == JsonValueKind.Object)
        {
            action = ServiceBusEmulatorOptions.OptionalString(a, "SqlExpression", at + ".Action");
        }

        if (string.Equals(type, "Sql", StringComparison.OrdinalIgnoreCase))
        {
            string? sql = null;
            if (p.TryGetProperty("SqlFilter", out var f) && f.ValueKind == JsonValueKind.Object)
            {
                sql = ServiceBusEmulatorOptions.OptionalString(f, "SqlExpression", at + ".SqlFilter");
            }

            return new RuleOptions { Name = name, SqlExpression = sql, ActionSqlExpression = action };
        }

        if (!string.Equals(type, "Correlation", StringComparison.OrdinalIgnoreCase))
        {
            throw new EmulatorConfigurationException($"{at}.FilterType must be \"Sql\" or \"Correlation\" (got \"{type}\").");
        }

        if (!p.TryGetProperty("CorrelationFilter", out var c) || c.ValueKind != JsonValueKind.Object)
        {
            throw new EmulatorConfigurationException($"{at}.CorrelationFilter: an object is required when FilterType is \"Correlation\".");
        }

        var cw = at + ".CorrelationFilter";
        var properties = new Dictionary<string, object?>(StringComparer.Ordinal);
        if (c.TryGetProperty("Properties", out var props) && props.ValueKind == JsonValueKind.Object)
        {
            foreach (var property in props.EnumerateObject())
            {
                properties[property.Name] = property.Value.ValueKind switch
                {
                    JsonValueKind.String => property.Value.GetString(),
                    JsonValueKind.True => true,
                    JsonValueKind.False => false,
                    JsonValueKind.Number when property.Value.TryGetInt64(out var l) => l,
                    JsonValueKind.Number => property.Value.GetDouble(),
                    _ => throw new EmulatorConfigurationException($"{cw}.Properties.{property.Name} must be a string, number or boolean."),
                };
            }
        }

        return new RuleOptions
        {
            Name = name,
            ActionSqlExpression = action,
            CorrelationFilter = CorrelationFilterOptions.FromFields(field => ServiceBusEmulatorOptions.OptionalString(c, field, cw), properties),
        };
    }
}

/// <summary>A correlation filter: every field set must equal the message's.</summary>
public sealed record CorrelationFilterOptions
{
    public string? ContentType { get; init; }

    public string? CorrelationId { get; init; }

    /// <summary>The message's subject (Label).</summary>
    public string? Label { get; init; }

    public string? MessageId { get; init; }

    public string? ReplyTo { get; init; }

    public string? ReplyToSessionId { get; init; }

    public string? SessionId { get; init; }

    public string? To { get; init; }

    public IReadOnlyDictionary<string, object?> Properties { get; init; } = new Dictionary<string, object?>();

    /// <summary>The system-property fields' names (Config.json's and the administration API's), in the order of <see cref="FieldValues"/>.</summary>
    internal static readonly string[] FieldNames = ["CorrelationId", "MessageId", "To", "ReplyTo", "Label", "SessionId", "ReplyToSessionId", "ContentType"];

    /// <summary>The system-property fields' values, in the order of <see cref="FieldNames"/> (and of the AMQP rule description's list).</summary>
    internal string?[] FieldValues => [CorrelationId, MessageId, To, ReplyTo, Label, SessionId, ReplyToSessionId, ContentType];

    /// <summary>A filter from a reader of fields by their <see cref="FieldNames"/>: Config.json, the administration API, the rule manager.</summary>
    internal static CorrelationFilterOptions FromFields(Func<string, string?> field, IReadOnlyDictionary<string, object?> properties) => new()
    {
        CorrelationId = field("CorrelationId"),
        MessageId = field("MessageId"),
        To = field("To"),
        ReplyTo = field("ReplyTo"),
        Label = field("Label"),
        SessionId = field("SessionId"),
        ReplyToSessionId = field("ReplyToSessionId"),
        ContentType = field("ContentType"),
        Properties = properties,
    };
}
