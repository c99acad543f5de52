using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>How long the lab runs each step.</summary>
internal enum LabMode
{
    /// <summary>Tens of seconds per step, time compressed (CI and a first look).</summary>
    Quick,

    /// <summary>The case studies' 8-minute step load per step.</summary>
    Full,
}

/// <summary>
/// The local stand-ins' calibration: how slow the emulated cloud services are and how quick mode
/// compresses time. These are the lab's only own numbers; every tuning knob comes from the chart's
/// step overlays. docs/lab.md explains each value.
/// </summary>
internal sealed record LabCalibration
{
    /// <summary>
    /// Latency of each Cosmos DB data-plane request. 40 ms per partition visited makes a serial
    /// 9-partition fan-out cost ~360 ms and a parallel one ~40 ms, the contrast of steps A2 and A3.
    /// </summary>
    public LatencyOptions CosmosLatency { get; init; } = new() { FixedMilliseconds = 40, PerDocumentMilliseconds = 0.05, ThrottledMilliseconds = 1 };

    /// <summary>
    /// Service Bus round trips. Complete at 100 ms, between the case study's p50 (87 ms) and p95
    /// (283 ms); with the three backend calls one message takes about the 250 ms the case study measured.
    /// </summary>
    public ServiceBusLatency ServiceBusLatency { get; init; } = new(SendMilliseconds: 5, ReceiveMilliseconds: 5, CompleteMilliseconds: 100);

    /// <summary>
    /// Quick mode divides the step load's duration and the queue's lock durations by this, so the
    /// same dynamics (locks expiring in a prefetch buffer) play out in a fraction of the time.
    /// </summary>
    public double QuickTimeScale { get; init; } = 6;

    /// <summary>
    /// Megabytes of earlier deliveries the cache holds when a pipeline step starts: a long-running
    /// cache's working set, so a small maxmemory fills within a short step (B1).
    /// </summary>
    public int RedisWorkingSetMegabytes { get; init; } = 56;

    /// <summary>
    /// Think time of each invoice user (scenario A). With it, 40 users ask for about as many invoices
    /// per second as the 2,500 RU/s container serves serially without throttling (step A2).
    /// </summary>
    public TimeSpan InvoiceThinkTime { get; init; } = TimeSpan.FromMilliseconds(500);

    /// <summary>
    /// Delivery requests per second at the end of scenario B's ramp (it starts at 2). Above what the
    /// tuned workflow completes, so a backlog builds at the peak as in the case study.
    /// </summary>
    public double DeliveryRequestPeakRate { get; init; } = 150;

    /// <summary>Think time of each user of a steady delivery-request soak (scenario B's own load is an arrival rate).</summary>
    public TimeSpan DeliveryRequestThinkTime { get; init; } = TimeSpan.FromMilliseconds(250);

    public double TimeScale(LabMode mode) => mode == LabMode.Quick ? QuickTimeScale : 1;
}

/// <summary>What one lab run does.</summary>
internal sealed record LabRunOptions
{
    public required IReadOnlyList<string> Scenarios { get; init; }

    /// <summary>Only these steps (e.g. A1, A3); empty runs every step of each scenario.</summary>
    public IReadOnlyList<string> Steps { get; init; } = [];

    public LabMode Mode { get; init; } = LabMode.Quick;

    /// <summary>Where the report goes; default artifacts/lab/&lt;timestamp&gt;.</summary>
    public required string OutputDirectory { get; init; }

    public LabCalibration Calibration { get; init; } = new();

    /// <summary>Replicas per service are the step's divided by this; 1 runs the chart's counts.</summary>
    public int ReplicaDivisor { get; init; } = 1;

    public string? ChartDirectory { get; init; }

    /// <summary>When set, each chosen step also runs with these values over it (<c>-f</c>, <c>--set</c>), measured beside it.</summary>
    public WhatIf? WhatIf { get; init; }

    /// <summary>When set, a real Prometheus scrapes the system on this port (files in the output's <c>prometheus/</c>).</summary>
    public int? PrometheusPort { get; init; }

    /// <summary>Progress messages for the console.</summary>
    public Action<string> Log { get; init; } = _ => { };
}
