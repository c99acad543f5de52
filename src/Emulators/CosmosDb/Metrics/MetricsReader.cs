using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>
/// Reads the model into the snapshot <c>/_emulator/metrics</c> serves: each partition's state and its
/// per-second series, which Prometheus cannot hold. Requests by operation and their charges are
/// instruments (<see cref="EmulatorInstruments"/>), read on <c>/metrics</c>.
/// </summary>
internal sealed class MetricsReader(AccountStore store, DateTimeOffset startedAt, TimeProvider time)
{
    public EmulatorMetricsSnapshot Snapshot(int seconds)
    {
        var containers = store.Containers.Select(container =>
        {
            var partitions = container.Partitions.Select(p =>
            {
                var (charge, throttled, requests) = p.Metrics.Totals();
                return new PartitionMetricsSnapshot(
                    p.Id,
                    p.Range.MinInclusive,
                    p.Range.MaxExclusive,
                    container.Pool.PerPartition,
                    Math.Round(charge, 4),
                    throttled,
                    requests,
                    p.Count,
                    Math.Round(p.Metrics.ConsumedLastSecond(), 4),
                    p.Metrics.Seconds(seconds),
                    Math.Round(container.Pool.Available(p.Index), 4));
            }).ToList();
            return new ContainerMetricsSnapshot(
                container.Database.Id,
                container.Id,
                container.Pool.Throughput,
                container.Offer is null,
                container.Partitions.Count,
                Math.Round(partitions.Sum(p => p.RequestCharge), 4),
                partitions.Sum(p => p.ThrottledRequests),
                partitions);
        }).ToList();
        var now = time.GetUtcNow();
        return new EmulatorMetricsSnapshot(now, (now - startedAt).TotalSeconds, containers);
    }
}
