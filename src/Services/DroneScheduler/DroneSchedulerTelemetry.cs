using DroneDelivery.ServiceClients.Cosmos;

namespace DroneDelivery.DroneScheduler;

/// <summary>
/// DroneScheduler's telemetry: the Cosmos DB metrics of <see cref="CosmosTelemetry"/> (RU charge and
/// data calls per logical operation; every Cosmos HTTP call counted by status code and traced), with
/// these operation names. The operation span of GetDroneUtilization also carries the query options it
/// ran with.
/// </summary>
public static class DroneSchedulerTelemetry
{
    /// <summary>Span attributes of GetDroneUtilization: the effective query options.</summary>
    public const string MaxConcurrencyAttribute = "db.cosmosdb.max_concurrency";
    public const string QueryPartitionKeyAttribute = "db.cosmosdb.query_partition_key";
    public const string DocumentCountAttribute = "db.cosmosdb.document_count";

    /// <summary>Values of the <c>operation</c> tag.</summary>
    public static class Operations
    {
        public const string AssignDrone = "AssignDrone";
        public const string ReleaseDrone = "ReleaseDrone";
        public const string GetDroneAssignment = "GetDroneAssignment";

        /// <summary>The case study's query: <c>SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month</c>.</summary>
        public const string GetDroneUtilization = "GetDroneUtilization";
    }
}
