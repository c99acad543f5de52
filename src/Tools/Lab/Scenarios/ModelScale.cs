using System.Globalization;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Lab.Deployment;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>
/// The scale the emulated cloud runs at on this machine. At scale s every rate of the model is s times the
/// article's — the RU/s provisioned, the users' arrival rates — and every
/// delay of it 1/s times — Cosmos DB's and Service Bus's injected latencies, the users' patience — while counts
/// (users, partitions, replicas, MaxConcurrentCalls, PrefetchCount), lock durations and each step's length stay
/// as they are. (A cache's size stays too: B1's is full of the working set from the start. A lock need not grow
/// with a message's handling: the Workflow renews the lock of a message it is handling, so the lock covers the
/// message's wait in the prefetch buffer, which comes out the same at any scale; lengthened by what the scale adds
/// to the handling, it made B4 lose far fewer locks at scale 0.1 than at 0.22.) Every ratio the articles report
/// comes out the same at any scale (the share of calls throttled,
/// RU and calls per operation, a backlog's wait against a lock, one step's throughput against another's), a rate
/// measured here ÷ s and a latency × s are the article-equivalent figures, and the system's CPU per second is
/// s times what it is at scale 1 — so the scale that fits the machine's CPU budget leaves the model, not the
/// machine, deciding the figures (docs/lab.md, "The model decides").
/// </summary>
internal sealed record ModelScale(double Value)
{
    public static ModelScale One { get; } = new(1);

    /// <summary>
    /// The largest scale <c>--scale</c> accepts. Above 1 the lab asks more of the machine than the article's system
    /// did of its cluster: a way to see what a step that exceeds its CPU budget looks like (machine-bound).
    /// </summary>
    public const double Maximum = 10;

    public double Rate(double perSecond) => perSecond * Value;

    public TimeSpan Delay(TimeSpan delay) => delay / Value;

    public double DelayMilliseconds(double milliseconds) => milliseconds / Value;

    /// <summary>A container's provisioned RU/s at this scale, at least 1 per physical partition.</summary>
    public int Throughput(int requestUnitsPerSecond, int physicalPartitions) =>
        Math.Max(physicalPartitions, (int)Math.Round(requestUnitsPerSecond * Value, MidpointRounding.AwayFromZero));

    public LatencyOptions Cosmos(LatencyOptions latency) => new()
    {
        FixedMilliseconds = latency.FixedMilliseconds / Value,
        ExponentialMeanMilliseconds = latency.ExponentialMeanMilliseconds / Value,
        PerDocumentMilliseconds = latency.PerDocumentMilliseconds / Value,
        ThrottledMilliseconds = latency.ThrottledMilliseconds / Value,
    };

    public ServiceBusLatency ServiceBus(ServiceBusLatency latency) => new(
        (int)Math.Round(latency.SendMilliseconds / Value),
        (int)Math.Round(latency.ReceiveMilliseconds / Value),
        (int)Math.Round(latency.CompleteMilliseconds / Value));

    public override string ToString() => Value.ToString("0.##", CultureInfo.InvariantCulture);

    /// <summary>The largest scale at or below <paramref name="value"/> with two significant digits (0.437 → 0.43), for figures a reader can repeat.</summary>
    public static ModelScale RoundedDown(double value)
    {
        if (value >= 1)
        {
            return new(Math.Floor(value * 10) / 10);
        }

        var digits = Math.Pow(10, 1 - (int)Math.Floor(Math.Log10(value)));
        return new(Math.Floor((value * digits) + 1e-9) / digits);
    }
}
