using System.Globalization;
using System.Text;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>Reads the model's counters into snapshots (JSON) and the Prometheus text format.</summary>
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
                container.Counters.Requests(),
                container.Counters.Charges(),
                partitions);
        }).ToList();
        var now = time.GetUtcNow();
        return new EmulatorMetricsSnapshot(now, (now - startedAt).TotalSeconds, store.AccountCounters.Requests(), containers);
    }

    public string Prometheus()
    {
        var snapshot = Snapshot(1);
        var text = new StringBuilder();
        Family(text, CosmosEmulatorMetricNames.RequestChargeTotal, "counter", "Request units consumed.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.RequestChargeTotal, p => p.RequestCharge);
        Family(text, CosmosEmulatorMetricNames.ProvisionedThroughput, "gauge", "Provisioned request units per second of the physical partition.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.ProvisionedThroughput, p => p.ProvisionedThroughput);
        Family(text, CosmosEmulatorMetricNames.AvailableRequestUnits, "gauge", "Request units the physical partition can spend now; negative while it repays admitted requests.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.AvailableRequestUnits, p => p.AvailableRequestUnits);
        Family(text, CosmosEmulatorMetricNames.ConsumedThroughput, "gauge", "Request units consumed during the last complete second.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.ConsumedThroughput, p => p.ConsumedLastSecond);
        Family(text, CosmosEmulatorMetricNames.ThrottledRequestsTotal, "counter", "Requests answered 429 because the partition's RU budget was exhausted.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.ThrottledRequestsTotal, p => p.ThrottledRequests);
        Family(text, CosmosEmulatorMetricNames.PartitionRequestsTotal, "counter", "Requests served by the physical partition.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.PartitionRequestsTotal, p => p.Requests);
        Family(text, CosmosEmulatorMetricNames.Documents, "gauge", "Items stored in the physical partition.");
        EachPartition(snapshot, text, CosmosEmulatorMetricNames.Documents, p => p.Documents);

        Family(text, CosmosEmulatorMetricNames.RequestsTotal, "counter", "Requests by operation and status code.");
        foreach (var r in snapshot.AccountRequests)
        {
            Sample(text, CosmosEmulatorMetricNames.RequestsTotal, [("database", string.Empty), ("container", string.Empty), ("operation", r.Operation), ("status_code", Code(r.StatusCode))], r.Count);
        }

        foreach (var c in snapshot.Containers)
        {
            foreach (var r in c.Requests)
            {
                Sample(text, CosmosEmulatorMetricNames.RequestsTotal, [("database", c.Database), ("container", c.Container), ("operation", r.Operation), ("status_code", Code(r.StatusCode))], r.Count);
            }
        }

        Family(text, CosmosEmulatorMetricNames.RequestCharge, "histogram", "Request charge per request, in request units.");
        foreach (var c in snapshot.Containers)
        {
            foreach (var d in c.RequestCharges)
            {
                foreach (var b in d.Buckets)
                {
                    var le = b.UpperBound is { } bound ? bound.ToString(CultureInfo.InvariantCulture) : "+Inf";
                    Sample(text, CosmosEmulatorMetricNames.RequestCharge + "_bucket", [("database", c.Database), ("container", c.Container), ("operation", d.Operation), ("le", le)], b.Count);
                }

                Sample(text, CosmosEmulatorMetricNames.RequestCharge + "_sum", [("database", c.Database), ("container", c.Container), ("operation", d.Operation)], d.Sum);
                Sample(text, CosmosEmulatorMetricNames.RequestCharge + "_count", [("database", c.Database), ("container", c.Container), ("operation", d.Operation)], d.Count);
            }
        }

        return text.ToString();
    }

    private static string Code(int status) => status.ToString(CultureInfo.InvariantCulture);

    private static void EachPartition(EmulatorMetricsSnapshot snapshot, StringBuilder text, string name, Func<PartitionMetricsSnapshot, double> value)
    {
        foreach (var c in snapshot.Containers)
        {
            foreach (var p in c.Partitions)
            {
                Sample(text, name, [("database", c.Database), ("container", c.Container), ("partition", p.Id)], value(p));
            }
        }
    }

    private static void Family(StringBuilder text, string name, string type, string help) =>
        text.Append("# HELP ").Append(name).Append(' ').Append(help).Append('\n')
            .Append("# TYPE ").Append(name).Append(' ').Append(type).Append('\n');

    private static void Sample(StringBuilder text, string name, (string Name, string Value)[] labels, double value)
    {
        text.Append(name).Append('{');
        for (var i = 0; i < labels.Length; i++)
        {
            if (i > 0)
            {
                text.Append(',');
            }

            text.Append(labels[i].Name).Append("=\"")
                .Append(labels[i].Value.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\"", "\\\"", StringComparison.Ordinal).Replace("\n", "\\n", StringComparison.Ordinal))
                .Append('"');
        }

        text.Append("} ").Append(value.ToString("R", CultureInfo.InvariantCulture)).Append('\n');
    }
}
