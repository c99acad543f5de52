using System.Text.Json.Serialization;

namespace DroneDelivery.Emulators.CosmosDb.Faults;

/// <summary>The faults the emulator can answer an item or query request with, each one the service itself returns.</summary>
[JsonConverter(typeof(JsonStringEnumConverter<CosmosFaultKind>))]
public enum CosmosFaultKind
{
    /// <summary>503 Service Unavailable: the service could not serve the request now (nothing done).</summary>
    ServiceUnavailable,

    /// <summary>408 Request Timeout: the service gave up on the request (nothing done).</summary>
    RequestTimeout,

    /// <summary>410 Gone with sub-status 1002 (PartitionKeyRangeGone): the partition split; the client refreshes its routing map.</summary>
    PartitionKeyRangeGone,

    /// <summary>449 Retry With: a concurrent update conflicted; the client retries (nothing done).</summary>
    RetryWith,

    /// <summary>The request is served, but its answer comes only after <see cref="CosmosFaultRule.DelayMilliseconds"/>: past the client's timeout, the work is done and the client does not know.</summary>
    Delay,
}

/// <summary>
/// One fault rule: each item or query request on a matching container draws from the emulator's seeded generator
/// and gets the fault with <see cref="Probability"/>, until <see cref="MaxCount"/> faults were injected.
/// </summary>
public sealed class CosmosFaultRule
{
    /// <summary>The <see cref="Container"/> that matches every container.</summary>
    public const string AnyContainer = "*";

    public CosmosFaultKind Kind { get; set; }

    /// <summary>The container, as <c>database/container</c>, or <c>*</c> for every container. Default <c>*</c>.</summary>
    public string Container { get; set; } = AnyContainer;

    /// <summary>Share of the matching requests that get the fault, 0 – 1.</summary>
    public double Probability { get; set; }

    /// <summary>Most faults this rule injects (≥ 1); null: no limit.</summary>
    public long? MaxCount { get; set; }

    /// <summary>For <see cref="CosmosFaultKind.Delay"/>: how long the answer is held, in milliseconds (1 – 600,000). Default 10,000.</summary>
    public int DelayMilliseconds { get; set; } = 10_000;

    internal bool Matches(string database, string container) =>
        Container == AnyContainer || string.Equals(Container, $"{database}/{container}", StringComparison.Ordinal);
}

/// <summary>
/// The faults injected (the config file's <c>Faults</c>, and the body of <c>PUT /_emulator/faults</c>): the rules
/// and the seed of the generator they draw from, so that the same sequence of requests gets the same faults.
/// </summary>
public sealed class CosmosFaultOptions
{
    /// <summary>Seed of the generator every rule draws from. Default 1.</summary>
    public int Seed { get; set; } = 1;

    public List<CosmosFaultRule> Rules { get; set; } = [];

    /// <summary>The first problem of these settings, naming it under <paramref name="where"/>; null when they are valid.</summary>
    public string? Problem(string where)
    {
        if (Rules is null)
        {
            return $"{where}.Rules must be an array.";
        }

        for (var i = 0; i < Rules.Count; i++)
        {
            var rule = Rules[i];
            var at = $"{where}.Rules[{i}]";
            var problem = rule is null ? $"{at} is null."
                : !Enum.IsDefined(rule.Kind) ? $"{at}.Kind must be one of {string.Join(", ", Enum.GetNames<CosmosFaultKind>())}."
                : string.IsNullOrEmpty(rule.Container) || (rule.Container != CosmosFaultRule.AnyContainer && rule.Container.Split('/') is not [{ Length: > 0 }, { Length: > 0 }])
                    ? $"{at}.Container must be 'database/container' or '*' (was '{rule.Container}')."
                : !double.IsFinite(rule.Probability) || rule.Probability is < 0 or > 1 ? $"{at}.Probability must be between 0 and 1 (was {rule.Probability})."
                : rule.MaxCount is < 1 ? $"{at}.MaxCount must be at least 1, or null for no limit (was {rule.MaxCount})."
                : rule.DelayMilliseconds is < 1 or > 600_000 ? $"{at}.DelayMilliseconds must be between 1 and 600000 (was {rule.DelayMilliseconds})."
                : null;
            if (problem is not null)
            {
                return problem;
            }
        }

        return null;
    }
}
