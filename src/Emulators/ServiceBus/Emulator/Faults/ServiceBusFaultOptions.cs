using System.Globalization;
using System.Text.Json;

namespace DroneDelivery.Emulators.ServiceBus.Faults;

/// <summary>The faults the emulator can inject into the operations its clients perform.</summary>
public enum ServiceBusFaultKind
{
    /// <summary>The connection carrying the operation is dropped: its socket is reset, no close frame is sent.</summary>
    ConnectionDrop,

    /// <summary>The connection carrying the operation is closed with <c>amqp:connection:forced</c>, as the service does when it moves a connection.</summary>
    ConnectionForced,

    /// <summary>A send is refused with <c>com.microsoft:server-busy</c> (nothing is stored): the namespace is throttling.</summary>
    ServerBusySend,

    /// <summary>A receiver asking for messages is detached with <c>com.microsoft:server-busy</c>.</summary>
    ServerBusyReceive,

    /// <summary>A settlement (complete, abandon, dead-letter, defer) takes effect but its answer never comes.</summary>
    SettlementLostApplied,

    /// <summary>A settlement neither takes effect nor is answered: the lock stays as it was.</summary>
    SettlementLostUnapplied,

    /// <summary>The whole namespace stops answering for a while; connections stay open (a run-time action, counted here).</summary>
    NamespacePause,
}

/// <summary>
/// One fault rule: each operation of the rule's kind on a matching entity draws from the emulator's seeded
/// generator and gets the fault with <see cref="Probability"/>, until <see cref="MaxCount"/> faults were injected.
/// </summary>
public sealed record ServiceBusFaultRule
{
    public required ServiceBusFaultKind Kind { get; init; }

    /// <summary>The entity path the rule applies to (a queue, topic or <c>topic/Subscriptions/name</c>), or <c>*</c> for every entity. Default <c>*</c>.</summary>
    public string Entity { get; init; } = AnyEntity;

    /// <summary>Share of the matching operations that get the fault, 0 – 1.</summary>
    public required double Probability { get; init; }

    /// <summary>Most faults this rule injects (1 – 1,000,000,000); null: no limit.</summary>
    public long? MaxCount { get; init; }

    /// <summary>The <see cref="Entity"/> that matches every entity.</summary>
    public const string AnyEntity = "*";

    internal bool Matches(ServiceBusFaultKind kind, string entity) =>
        Kind == kind && (Entity == AnyEntity || string.Equals(Entity, entity, StringComparison.OrdinalIgnoreCase));
}

/// <summary>
/// The faults injected (the <c>Faults</c> section of Config.json's <c>Emulator</c> object, and the body of
/// <c>PUT /_emulator/faults</c>): the rules and the seed of the generator they draw from, so that the same
/// sequence of operations gets the same faults.
/// </summary>
public sealed record ServiceBusFaultOptions
{
    /// <summary>Seed of the generator every rule draws from. Default 1.</summary>
    public int Seed { get; init; } = 1;

    public IReadOnlyList<ServiceBusFaultRule> Rules { get; init; } = [];

    /// <summary>No faults.</summary>
    public static ServiceBusFaultOptions None { get; } = new();

    /// <summary>
    /// Reads the JSON form (<c>{"seed": 7, "rules": [{"kind": "ServerBusySend", "entity": "orders", "probability": 0.1}]}</c>;
    /// names case-insensitive, unknown names refused). Throws <see cref="EmulatorConfigurationException"/> naming the
    /// first bad field by its path under <paramref name="where"/>.
    /// </summary>
    public static ServiceBusFaultOptions FromJson(JsonElement json, string where)
    {
        Expect(json.ValueKind == JsonValueKind.Object, $"{where} must be a JSON object.");
        var options = new ServiceBusFaultOptions();
        foreach (var property in Settings(json, where))
        {
            var path = $"{where}.{property.Name}";
            switch (property.Name.ToLowerInvariant())
            {
                case "seed":
                    Expect(property.Value.ValueKind == JsonValueKind.Number && property.Value.TryGetInt32(out var seed), $"{path} must be a 32-bit integer.");
                    options = options with { Seed = property.Value.GetInt32() };
                    break;
                case "rules":
                    Expect(property.Value.ValueKind == JsonValueKind.Array, $"{path} must be an array.");
                    options = options with { Rules = [.. property.Value.EnumerateArray().Select((rule, i) => Rule(rule, $"{path}[{i}]"))] };
                    break;
                default:
                    throw new EmulatorConfigurationException($"{path} is not a fault setting (known: seed, rules).");
            }
        }

        return options;
    }

    private static ServiceBusFaultRule Rule(JsonElement json, string where)
    {
        Expect(json.ValueKind == JsonValueKind.Object, $"{where} must be a JSON object.");
        ServiceBusFaultKind? kind = null;
        double? probability = null;
        var entity = ServiceBusFaultRule.AnyEntity;
        long? maxCount = null;
        foreach (var property in Settings(json, where))
        {
            var path = $"{where}.{property.Name}";
            var value = property.Value;
            switch (property.Name.ToLowerInvariant())
            {
                case "kind":
                    Expect(value.ValueKind == JsonValueKind.String && Enum.TryParse<ServiceBusFaultKind>(value.GetString(), ignoreCase: true, out var parsed)
                        && Enum.IsDefined(parsed) && parsed != ServiceBusFaultKind.NamespacePause && !int.TryParse(value.GetString(), out _),
                        $"{path} must be one of {string.Join(", ", RuleKinds)} (got {value.GetRawText()}).");
                    kind = Enum.Parse<ServiceBusFaultKind>(value.GetString()!, ignoreCase: true);
                    break;
                case "entity":
                    Expect(value.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(value.GetString()), $"{path} must be an entity path or \"*\".");
                    entity = value.GetString()!.Trim('/');
                    break;
                case "probability":
                    Expect(value.ValueKind == JsonValueKind.Number && value.GetDouble() is >= 0 and <= 1,
                        $"{path} must be a number between 0 and 1 (got {value.GetRawText()}).");
                    probability = value.GetDouble();
                    break;
                case "maxcount":
                    if (value.ValueKind != JsonValueKind.Null)
                    {
                        Expect(value.ValueKind == JsonValueKind.Number && value.TryGetInt64(out var max) && max is >= 1 and <= 1_000_000_000,
                            $"{path} must be a whole number between 1 and 1000000000, or null (got {value.GetRawText()}).");
                        maxCount = value.GetInt64();
                    }

                    break;
                default:
                    throw new EmulatorConfigurationException($"{path} is not a fault rule setting (known: kind, entity, probability, maxCount).");
            }
        }

        Expect(kind is not null, $"{where}.kind is required ({string.Join(", ", RuleKinds)}).");
        Expect(probability is not null, $"{where}.probability is required (0 – 1).");
        return new ServiceBusFaultRule { Kind = kind!.Value, Entity = entity, Probability = probability!.Value, MaxCount = maxCount };
    }

    /// <summary>The kinds a rule may have (a namespace pause is an action, not a rule).</summary>
    public static IEnumerable<string> RuleKinds =>
        Enum.GetNames<ServiceBusFaultKind>().Where(k => k != nameof(ServiceBusFaultKind.NamespacePause));

    /// <summary>The rules' entities must exist: throws naming the first rule whose entity the namespace lacks.</summary>
    internal void ValidateEntities(Func<string, bool> exists, string where)
    {
        for (var i = 0; i < Rules.Count; i++)
        {
            var entity = Rules[i].Entity;
            Expect(entity == ServiceBusFaultRule.AnyEntity || exists(entity), $"{where}.rules[{i}].entity: the namespace has no entity '{entity}'.");
        }
    }

    /// <summary>The text form of a probability, for logs.</summary>
    internal static string Describe(ServiceBusFaultRule rule) =>
        string.Create(CultureInfo.InvariantCulture, $"{rule.Kind} on {rule.Entity} p={rule.Probability}{(rule.MaxCount is { } max ? $" max {max}" : string.Empty)}");

    /// <summary>
    /// The properties of a settings object. Names are read regardless of case, so <c>seed</c> and
    /// <c>Seed</c> are one setting: given twice it is refused, naming it, rather than the last one winning.
    /// </summary>
    internal static IEnumerable<JsonProperty> Settings(JsonElement json, string where)
    {
        var seen = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var property in json.EnumerateObject())
        {
            Expect(seen.Add(property.Name), $"{where}.{property.Name} is given twice.");
            yield return property;
        }
    }

    private static void Expect(bool condition, string message)
    {
        if (!condition)
        {
            throw new EmulatorConfigurationException(message);
        }
    }
}
