namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>
/// The Prometheus metric names <c>/metrics</c> exports, in one place so that dashboards and their
/// tests can refer to them. Labels: <c>database</c>, <c>container</c>, and where noted
/// <c>partition</c> (the physical partition key range id), <c>operation</c>, <c>status_code</c>.
/// </summary>
public static class CosmosEmulatorMetricNames
{
    /// <summary>Counter: RU consumed (sum of request charges). Labels: database, container, partition.</summary>
    public const string RequestChargeTotal = "cosmos_emulator_request_charge_total";

    /// <summary>Gauge: provisioned RU/s of one physical partition. Labels: database, container, partition.</summary>
    public const string ProvisionedThroughput = "cosmos_emulator_provisioned_throughput";

    /// <summary>
    /// Gauge: RU a physical partition can spend now (its token bucket), at most BurstSeconds of its
    /// share and negative while it repays admitted requests. Labels: database, container, partition.
    /// </summary>
    public const string AvailableRequestUnits = "cosmos_emulator_available_request_units";

    /// <summary>Gauge: RU consumed during the last complete second. Labels: database, container, partition.</summary>
    public const string ConsumedThroughput = "cosmos_emulator_consumed_throughput";

    /// <summary>Counter: requests answered 429 (RU budget exceeded). Labels: database, container, partition.</summary>
    public const string ThrottledRequestsTotal = "cosmos_emulator_throttled_requests_total";

    /// <summary>Counter: requests served by a physical partition. Labels: database, container, partition.</summary>
    public const string PartitionRequestsTotal = "cosmos_emulator_partition_requests_total";

    /// <summary>Gauge: documents stored. Labels: database, container, partition.</summary>
    public const string Documents = "cosmos_emulator_documents";

    /// <summary>Counter: requests by operation and HTTP status. Labels: database, container, operation, status_code.</summary>
    public const string RequestsTotal = "cosmos_emulator_requests_total";

    /// <summary>Histogram: request charge per request. Labels: database, container, operation.</summary>
    public const string RequestCharge = "cosmos_emulator_request_charge";
}

/// <summary>The operation names used in metrics and request timings.</summary>
public static class CosmosEmulatorOperations
{
    public const string ReadAccount = "ReadAccount";
    public const string CreateDatabase = "CreateDatabase";
    public const string ReadDatabase = "ReadDatabase";
    public const string DeleteDatabase = "DeleteDatabase";
    public const string ListDatabases = "ListDatabases";
    public const string CreateContainer = "CreateContainer";
    public const string ReadContainer = "ReadContainer";
    public const string ReplaceContainer = "ReplaceContainer";
    public const string DeleteContainer = "DeleteContainer";
    public const string ListContainers = "ListContainers";
    public const string ReadPartitionKeyRanges = "ReadPartitionKeyRanges";
    public const string ReadOffer = "ReadOffer";
    public const string ReplaceOffer = "ReplaceOffer";
    public const string ListOffers = "ListOffers";
    public const string CreateItem = "CreateItem";
    public const string UpsertItem = "UpsertItem";
    public const string ReadItem = "ReadItem";
    public const string ReplaceItem = "ReplaceItem";
    public const string DeleteItem = "DeleteItem";
    public const string PatchItem = "PatchItem";
    public const string Batch = "Batch";
    public const string Bulk = "Bulk";
    public const string Query = "Query";
    public const string QueryPlan = "QueryPlan";
    public const string ReadFeed = "ReadFeed";
    public const string Unknown = "Unknown";
}
