namespace DroneDelivery.Emulators.CosmosDb.Protocol;

/// <summary>The HTTP headers of the Cosmos DB gateway protocol the emulator reads or writes.</summary>
internal static class CosmosHeaders
{
    public const string Authorization = "authorization";
    public const string XDate = "x-ms-date";
    public const string Date = "date";
    public const string PartitionKey = "x-ms-documentdb-partitionkey";
    public const string PartitionKeyRangeId = "x-ms-documentdb-partitionkeyrangeid";
    public const string IsQuery = "x-ms-documentdb-isquery";
    public const string IsQueryPlanRequest = "x-ms-cosmos-is-query-plan-request";
    public const string OptimisticDirectExecute = "x-ms-cosmos-query-optimisticdirectexecute";
    public const string RequiresDistribution = "x-ms-cosmos-query-requiresdistribution";
    public const string EnableCrossPartitionQuery = "x-ms-documentdb-query-enablecrosspartition";
    public const string IsUpsert = "x-ms-documentdb-is-upsert";
    public const string IsBatchRequest = "x-ms-cosmos-is-batch-request";
    public const string IsBatchAtomic = "x-ms-cosmos-batch-atomic";
    public const string MaxItemCount = "x-ms-max-item-count";
    public const string Continuation = "x-ms-continuation";
    public const string OfferThroughput = "x-ms-offer-throughput";
    public const string AutopilotSettings = "x-ms-cosmos-offer-autopilot-settings";
    public const string ActivityId = "x-ms-activity-id";
    public const string CorrelatedActivityId = "x-ms-cosmos-correlated-activityid";
    public const string RequestCharge = "x-ms-request-charge";
    public const string RetryAfterMilliseconds = "x-ms-retry-after-ms";
    public const string SubStatus = "x-ms-substatus";
    public const string ItemCount = "x-ms-item-count";
    public const string ReadFeedKeyType = "x-ms-read-key-type";
    public const string StartEpk = "x-ms-start-epk";
    public const string EndEpk = "x-ms-end-epk";
    public const string IndexingDirective = "x-ms-indexing-directive";
    public const string IfMatch = "If-Match";
    public const string IfNoneMatch = "If-None-Match";
    public const string Prefer = "Prefer";
    public const string AltContentPath = "x-ms-alt-content-path";
    public const string ETag = "etag";
    public const string GatewayVersion = "x-ms-gatewayversion";
    public const string ServiceVersion = "x-ms-serviceversion";
    public const string SchemaVersion = "x-ms-schemaversion";
    public const string ResourceQuota = "x-ms-resource-quota";
    public const string ResourceUsage = "x-ms-resource-usage";
    public const string MaxMediaStorageUsage = "x-ms-max-media-storage-usage-mb";
    public const string MediaStorageUsage = "x-ms-media-storage-usage-mb";
}

/// <summary>Sub-status codes the SDK acts on.</summary>
internal static class SubStatusCodes
{
    public const int PartitionKeyMismatch = 1001;

    /// <summary>A cross-partition query the gateway cannot serve itself; the body carries the query plan.</summary>
    public const int CrossPartitionQueryNotServable = 1004;
    public const int RequestRateTooLarge = 3200;
}
