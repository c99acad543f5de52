namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>The aggregate functions and the names the SDK's query plan uses for them.</summary>
internal static class Aggregates
{
    public static bool IsAggregate(string name) => PlanName(name) is not null;

    /// <summary>The <c>AggregateOperator</c> name in a query plan, or null if not an aggregate.</summary>
    public static string? PlanName(string name) => name.ToUpperInvariant() switch
    {
        "COUNT" => "Count",
        "SUM" => "Sum",
        "MIN" => "Min",
        "MAX" => "Max",
        "AVG" => "Average",
        _ => null,
    };
}
