using System.Diagnostics;
using System.Diagnostics.Metrics;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>
/// The Cosmos DB telemetry of Package and DroneScheduler. Each HTTP call the SDK makes is a client span
/// (<c>db.system.name=cosmosdb</c>, so serial and parallel per-partition queries are visible in a trace)
/// and is counted by logical operation, kind of call and status code (429s included). Each logical
/// operation (e.g. <c>GetDroneUtilization</c>) records its total RU charge and its number of data calls
/// (every partition of a fan-out and every throttled retry).
/// </summary>
public static class CosmosTelemetry
{
    /// <summary>ActivitySource and Meter name.</summary>
    public const string SourceName = "DroneDelivery.Cosmos";

    /// <summary>
    /// Counter of HTTP calls to Cosmos DB; tags <c>operation</c> (logical operation, or <c>none</c>),
    /// <c>db.collection.name</c> (the container, or <c>none</c> for an account or database call), <c>db.operation.name</c> (kind of call, e.g. <c>query</c>, <c>query_plan</c>, <c>read_item</c>) and
    /// <c>http.response.status_code</c> (429 = throttled).
    /// </summary>
    public const string Calls = "dronedelivery.cosmos.calls";

    /// <summary>Histogram of HTTP call durations to Cosmos DB in seconds; tags <c>db.collection.name</c>, <c>db.operation.name</c> and <c>http.response.status_code</c>.</summary>
    public const string CallDuration = "dronedelivery.cosmos.call.duration";

    /// <summary>Histogram of the RU charged for one logical operation; tag <c>operation</c>.</summary>
    public const string OperationRequestCharge = "dronedelivery.cosmos.operation.request_charge";

    /// <summary>
    /// Histogram of the data calls (item operations and query pages, each partition and each 429 retry
    /// counted; query-plan and metadata calls not) one logical operation made; tag <c>operation</c>.
    /// Gateway mode only: in Direct mode data calls bypass HTTP and this is 0.
    /// </summary>
    public const string OperationCalls = "dronedelivery.cosmos.operation.calls";

    /// <summary>Span attribute: RU charged (per call span, and the total on the operation span).</summary>
    public const string RequestChargeAttribute = "db.cosmosdb.request_charge";

    /// <summary>Operation-span attribute: the number of data calls the operation made.</summary>
    public const string CallCountAttribute = "db.cosmosdb.call_count";

    /// <summary>Call-span attribute: the partition key range (physical partition) that served the call.</summary>
    public const string PartitionKeyRangeAttribute = "db.cosmosdb.partition_key_range_id";

    public const string SubStatusCodeAttribute = "db.cosmosdb.sub_status_code";

    private static readonly ComponentTelemetry Telemetry = new(SourceName);

    internal static readonly Counter<long> CallCounter = Telemetry.Counter(Calls, "{call}", "HTTP calls to Cosmos DB by operation, kind and status code.");

    internal static readonly Histogram<double> CallDurations = Telemetry.Duration(CallDuration, "Duration of HTTP calls to Cosmos DB.");

    internal static readonly Histogram<double> OperationCharges = Telemetry.Histogram<double>(
        OperationRequestCharge, "{RU}", "Request units charged for one logical operation.");

    internal static readonly Histogram<long> OperationCallCounts = Telemetry.Histogram<long>(
        OperationCalls, "{call}", "Cosmos DB data calls made by one logical operation.");

    internal static ActivitySource Source => Telemetry.Source;
}
