namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>
/// The emulator's model metrics at one moment; <c>GET /_emulator/metrics</c> serves exactly this
/// object as camelCase JSON. Counters are cumulative since start, so a reader can difference two
/// snapshots; <see cref="PartitionMetricsSnapshot.Seconds"/> adds a per-second series. Requests by
/// operation and status, and the distribution of their charges, are on <c>/metrics</c>
/// (<see cref="CosmosEmulatorMetricNames.RequestsTotal"/>, <see cref="CosmosEmulatorMetricNames.RequestCharge"/>).
/// </summary>
public sealed record EmulatorMetricsSnapshot(
    DateTimeOffset Timestamp,
    double UptimeSeconds,
    IReadOnlyList<ContainerMetricsSnapshot> Containers)
{
    public ContainerMetricsSnapshot? Container(string database, string container) =>
        Containers.FirstOrDefault(c => c.Database == database && c.Container == container);
}

/// <summary>One container: its throughput model and what it served.</summary>
public sealed record ContainerMetricsSnapshot(
    string Database,
    string Container,
    double ProvisionedThroughput,
    bool SharedThroughput,
    int PhysicalPartitionCount,
    double RequestCharge,
    long ThrottledRequests,
    IReadOnlyList<PartitionMetricsSnapshot> Partitions);

/// <summary>One physical partition (partition key range).</summary>
public sealed record PartitionMetricsSnapshot(
    string Id,
    string MinInclusive,
    string MaxExclusive,
    double ProvisionedThroughput,
    double RequestCharge,
    long ThrottledRequests,
    long Requests,
    long Documents,
    double ConsumedLastSecond,
    IReadOnlyList<SecondSample> Seconds,
    double AvailableRequestUnits);

/// <summary>What a partition did during one wall-clock second (only seconds with requests are listed).</summary>
public sealed record SecondSample(long UnixSeconds, double RequestCharge, long ThrottledRequests, long Requests, double ProvisionedThroughput);

/// <summary>One request the emulator served, with its modelled and actual timing.</summary>
/// <param name="Sequence">Increasing number of the request since start (1-based).</param>
/// <param name="StartedAt">Wall-clock time the request arrived.</param>
/// <param name="StartMilliseconds">Arrival on the emulator's monotonic clock, in ms since start (use for overlap and spans).</param>
/// <param name="DurationMilliseconds">Time from arrival until the response was written.</param>
/// <param name="ModelledLatencyMilliseconds">The delay the latency model added.</param>
/// <param name="PartitionKeyRangeId">The physical partition that served it, if exactly one did.</param>
/// <param name="CorrelatedActivityId">The SDK's id shared by all requests of one query (x-ms-cosmos-correlated-activityid).</param>
/// <param name="PartitionsRead">How many physical partitions served it (a gateway-served cross-partition query page may visit several).</param>
/// <param name="RequestedPartitionKeyRangeId">The partition key range the request named (x-ms-documentdb-partitionkeyrangeid), if any.</param>
public sealed record EmulatorRequest(
    long Sequence,
    DateTimeOffset StartedAt,
    double StartMilliseconds,
    double DurationMilliseconds,
    double ModelledLatencyMilliseconds,
    string Method,
    string Path,
    string Operation,
    string? Database,
    string? Container,
    string? PartitionKeyRangeId,
    int StatusCode,
    int SubStatusCode,
    double RequestCharge,
    int DocumentCount,
    string? ActivityId,
    string? CorrelatedActivityId,
    int PartitionsRead = 0,
    string? RequestedPartitionKeyRangeId = null)
{
    public double EndMilliseconds => StartMilliseconds + DurationMilliseconds;
}
