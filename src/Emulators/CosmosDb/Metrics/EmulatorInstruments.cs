using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Globalization;
using DroneDelivery.Emulators.CosmosDb.Faults;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>
/// The emulator's instruments, on a Meter of its own (named <see cref="MeterName"/>, outside the
/// services' <c>DroneDelivery.*</c> so that a service hosted in the same process does not read it).
/// A request is counted and its charge recorded as it is answered; each physical partition's state —
/// its RU totals, budget, RU consumed in the last second of the emulator's clock, items — is
/// observed when a reader collects, from the partition's own model.
/// </summary>
internal sealed class EmulatorInstruments : IDisposable
{
    public const string MeterName = "CosmosDbEmulator";

    /// <summary>The charge histogram's bucket bounds, in RU: a point read is 1, a fan-out query tens to hundreds.</summary>
    internal static readonly double[] ChargeBounds = [0.5, 1, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 50, 100, 250, 1000];

    private static readonly string[] StatusCodes = [.. Enumerable.Range(0, 600).Select(code => code.ToString(CultureInfo.InvariantCulture))];

    private readonly Counter<long> _requests;
    private readonly Histogram<double> _charges;

    public EmulatorInstruments(AccountStore store, CosmosFaultInjector faults)
    {
        Meter = new Meter(MeterName);
        _requests = Meter.CreateCounter<long>(CosmosEmulatorMetricNames.RequestsTotal, description: "Requests by operation and status code.");
        _charges = Meter.CreateHistogram(
            CosmosEmulatorMetricNames.RequestCharge,
            unit: null,
            description: "Request charge per request, in request units.",
            tags: null,
            advice: new InstrumentAdvice<double> { HistogramBucketBoundaries = ChargeBounds });

        Meter.CreateObservableCounter(CosmosEmulatorMetricNames.RequestChargeTotal, () => EachPartition(store, (_, p) => p.Metrics.Totals().Charge), description: "Request units consumed.");
        Meter.CreateObservableGauge(CosmosEmulatorMetricNames.ProvisionedThroughput, () => EachPartition(store, (c, _) => c.Pool.PerPartition), description: "Provisioned request units per second of the physical partition.");
        Meter.CreateObservableGauge(CosmosEmulatorMetricNames.AvailableRequestUnits, () => EachPartition(store, (c, p) => c.Pool.Available(p.Index)), description: "Request units the physical partition can spend now; negative while it repays admitted requests.");
        Meter.CreateObservableGauge(CosmosEmulatorMetricNames.ConsumedThroughput, () => EachPartition(store, (_, p) => p.Metrics.ConsumedLastSecond()), description: "Request units consumed during the last complete second.");
        Meter.CreateObservableCounter(CosmosEmulatorMetricNames.ThrottledRequestsTotal, () => EachPartition(store, (_, p) => p.Metrics.Totals().Throttled), description: "Requests answered 429 because the partition's RU budget was exhausted.");
        Meter.CreateObservableCounter(CosmosEmulatorMetricNames.PartitionRequestsTotal, () => EachPartition(store, (_, p) => p.Metrics.Totals().Requests), description: "Requests served by the physical partition.");
        Meter.CreateObservableCounter(
            CosmosFaultInjector.MetricName,
            () => faults.Counts().Select(f => new Measurement<long>(f.Count, new KeyValuePair<string, object?>("container", f.Container), new KeyValuePair<string, object?>("kind", f.Kind))),
            description: "Faults injected, by container and kind.");
        Meter.CreateObservableGauge(CosmosEmulatorMetricNames.Documents, () => EachPartition(store, (_, p) => (long)p.Count), description: "Items stored in the physical partition.");
    }

    /// <summary>The Meter the instruments are on: one per emulator, read by that emulator's meter provider only.</summary>
    public Meter Meter { get; }

    /// <summary>Counts one answered request; <paramref name="container"/> is null for account-level requests.</summary>
    public void Request(ContainerResource? container, string operation, int statusCode, double charge)
    {
        var tags = new TagList
        {
            { "database", container?.Database.Id ?? string.Empty },
            { "container", container?.Id ?? string.Empty },
            { "operation", operation },
        };
        if (container is not null)
        {
            _charges.Record(charge, tags);
        }

        tags.Add("status_code", statusCode >= 0 && statusCode < StatusCodes.Length ? StatusCodes[statusCode] : statusCode.ToString(CultureInfo.InvariantCulture));
        _requests.Add(1, tags);
    }

    public void Dispose() => Meter.Dispose();

    private static IEnumerable<Measurement<T>> EachPartition<T>(AccountStore store, Func<ContainerResource, PhysicalPartition, T> value)
        where T : struct
    {
        foreach (var container in store.Containers)
        {
            foreach (var partition in container.Partitions)
            {
                yield return new Measurement<T>(
                    value(container, partition),
                    new KeyValuePair<string, object?>("database", container.Database.Id),
                    new KeyValuePair<string, object?>("container", container.Id),
                    new KeyValuePair<string, object?>("partition", partition.Id));
            }
        }
    }
}
