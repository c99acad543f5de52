using System.Globalization;
using System.Text.Json.Serialization;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.LoadDriver;
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
/// The local stand-ins' calibration: how slow the emulated cloud services are, how the simulated users
/// behave and how quick mode compresses time. These are the lab's only own numbers; every tuning knob
/// comes from the chart's step overlays. docs/lab.md explains each value. <c>calibration</c> prints the
/// built-in profiles as JSON, and <c>--calibration FILE</c> runs with a file of that shape
/// (<see cref="CalibrationFile"/>).
/// </summary>
internal sealed record LabCalibration
{
    /// <summary>The built-in calibration the case studies are replayed with.</summary>
    public const string DefaultProfile = "default";

    /// <summary>No injected latency: the emulators answer as fast as they can, so the software's own cost shows.</summary>
    public const string NoLatencyProfile = "no-latency";

    /// <summary>The built-in calibrations by name.</summary>
    public static IReadOnlyDictionary<string, LabCalibration> Profiles { get; } = new Dictionary<string, LabCalibration>(StringComparer.OrdinalIgnoreCase)
    {
        [DefaultProfile] = new(),
        [NoLatencyProfile] = new()
        {
            Name = NoLatencyProfile,
            CosmosLatency = new() { FixedMilliseconds = 0, ExponentialMeanMilliseconds = 0, PerDocumentMilliseconds = 0, ThrottledMilliseconds = 0 },
            ServiceBusLatency = new(SendMilliseconds: 0, ReceiveMilliseconds: 0, CompleteMilliseconds: 0),
        },
    };

    /// <summary>Where this calibration came from: a built-in profile's name or a file's path (not part of the file).</summary>
    [JsonIgnore]
    public string Name { get; init; } = DefaultProfile;

    /// <summary>
    /// Latency of each Cosmos DB data-plane request, per partition it visits: 20 ms plus an exponentially
    /// distributed delay of mean 40 ms (a mean of 60 ms), plus 0.05 ms per document. A serial 9-partition
    /// fan-out then takes about 540 ms (the case study's A2: 569 ms), and a parallel one waits for the slowest
    /// of nine draws, about 20 + 40 × 2.83 ≈ 133 ms (A3 ÷ A2 about 0.25; the case study: 0.38).
    /// </summary>
    public LatencyOptions CosmosLatency { get; init; } = new() { FixedMilliseconds = 20, ExponentialMeanMilliseconds = 40, PerDocumentMilliseconds = 0.05, ThrottledMilliseconds = 1 };

    /// <summary>
    /// Service Bus round trips. Complete at 100 ms, between the case study's p50 (87 ms) and p95
    /// (283 ms); with the three backend calls one message takes about the 250 ms the case study measured.
    /// </summary>
    public ServiceBusLatency ServiceBusLatency { get; init; } = new(SendMilliseconds: 5, ReceiveMilliseconds: 5, CompleteMilliseconds: 100);

    /// <summary>
    /// Quick mode divides the step load's duration and the queue's lock durations by this, so the
    /// same dynamics (locks expiring in a prefetch buffer) play out in a fraction of the time: the
    /// arrival and processing rates stay the case study's, so a backlog, and each message's wait in
    /// it, shrink by the same factor as the lock.
    /// </summary>
    public double QuickTimeScale { get; init; } = 15;

    /// <summary>
    /// Quick mode runs the chart's replica counts divided by this (at least one each) in the scenarios
    /// that ask for fewer (<see cref="LabScenario.FewerReplicasInQuickMode"/>: scenario B). Every replica
    /// is a process: at the chart's counts scenario B's later steps start 30–40 of them, whose idle
    /// work and start-up alone stall a 2-core machine for seconds at a time. Halved, every step's
    /// change of replicas still scales what it scales by half as much again or more (B3's backends 2 → 3,
    /// B6's workflow 2 → 3 and backends 3 → 5).
    /// </summary>
    public int QuickReplicaDivisor { get; init; } = 2;

    /// <summary>
    /// Megabytes of earlier deliveries the cache holds when a pipeline step starts: a long-running
    /// cache's working set, so a small maxmemory fills within a short step (B1).
    /// </summary>
    public int RedisWorkingSetMegabytes { get; init; } = 56;

    /// <summary>
    /// Invoices per second each of scenario A's users asks for, on a schedule (one request outstanding
    /// per user; an invoice due while the user still waits is missed). 2.9 makes the article's 1 → 40
    /// users ask for 59 invoices/s on average over the step — A4's throughput in the article, where the
    /// system kept up with its users.
    /// </summary>
    public double InvoiceRatePerUser { get; init; } = 2.9;

    /// <summary>
    /// How long an invoice user waits before giving up (a timeout, counted as an error), in multiples of the
    /// modelled latency of the serial fan-out (the utilization container's partitions × the mean latency of one
    /// partition, ÷ the model scale): 1.75 × 540 ms = 945 ms at scale 1. The margin is the model's, not a
    /// machine's: above what an unthrottled serial fan-out takes (A2: its nine exponential latencies stay under it
    /// but for about one invoice in three hundred), below what a throttled A1 takes once its 40 users share the 31
    /// queries/s its 900 RU/s allow, so A1's throughput falls while its users still rise, as the article's did.
    /// Why 1.75 and not 2 or 1.5, with the figures measured at each: docs/lab.md, "The users' patience".
    /// </summary>
    public double InvoiceTimeoutMargin { get; init; } = 1.75;

    /// <summary>
    /// Delivery requests per second at the end of scenario B's ramp (it starts at 2): well above what the
    /// tuned workflow completes, so a backlog builds at the peak as in the case study, and its last
    /// messages wait in the prefetch buffers past B4's lock (PT1M, 4 s in quick mode). That wait shrinks with the square of the
    /// gap between this peak and the workflow's completion rate, so the peak sits well clear of the
    /// fastest workflow measured: at 250/s it holds up to about 150 completions/s. A slower workflow's
    /// longer wait costs B5 nothing it is judged on (dead-lettering takes five lost PT5M locks, 20 s each in
    /// quick mode).
    /// </summary>
    public double DeliveryRequestPeakRate { get; init; } = 250;

    /// <summary>Think time of each user of a steady delivery-request soak (scenario B's own load is an arrival rate).</summary>
    public TimeSpan DeliveryRequestThinkTime { get; init; } = TimeSpan.FromMilliseconds(250);

    /// <summary>
    /// The share of the machine's cores — of what other processes leave of them — the system may use at the
    /// busiest moment of a step (<see cref="Measurement.CpuBudget"/>). Below it the emulated cloud's limits decide
    /// the figures; a step above it is machine-bound.
    /// </summary>
    public double CpuBudgetShare { get; init; } = 0.6;

    /// <summary>
    /// The share of the CPU budget the chosen scale aims the system's predicted peak at: the prediction rests on a
    /// short probe at low load, so it keeps a margin below the budget a step is held to.
    /// </summary>
    public double ScaleCpuTarget { get; init; } = 0.75;

    /// <summary>
    /// The smallest model scale the lab runs at. Below it injected delays of a second or more stretch the warm-ups
    /// and leave too few requests in a quick step to measure; a machine that would need less is told so before
    /// anything is measured (exit code 4).
    /// </summary>
    public double MinimumScale { get; init; } = 0.1;

    public double TimeScale(LabMode mode) => mode == LabMode.Quick ? QuickTimeScale : 1;

    /// <summary>The replica divisor a run of <paramref name="scenario"/> in <paramref name="mode"/> uses unless told another.</summary>
    public int ReplicaDivisor(LabMode mode, LabScenario scenario) => mode == LabMode.Quick && scenario.FewerReplicasInQuickMode ? QuickReplicaDivisor : 1;

    /// <summary>Every value out of its range, as <c>jsonPath: problem</c>; empty when the calibration is usable.</summary>
    public IReadOnlyList<string> Problems()
    {
        var problems = new List<string>();
        void Range(string path, double value, double min, double max, bool minExclusive = false)
        {
            if (!double.IsFinite(value) || value < min || value > max || (minExclusive && value <= min))
            {
                problems.Add(string.Create(CultureInfo.InvariantCulture, $"{path} must be {(minExclusive ? "above" : "at least")} {min} and at most {max} (got {value})"));
            }
        }

        if (CosmosLatency is null)
        {
            problems.Add("cosmosLatency is required");
        }
        else
        {
            Range("cosmosLatency.fixedMilliseconds", CosmosLatency.FixedMilliseconds, 0, 60_000);
            Range("cosmosLatency.exponentialMeanMilliseconds", CosmosLatency.ExponentialMeanMilliseconds, 0, 60_000);
            Range("cosmosLatency.perDocumentMilliseconds", CosmosLatency.PerDocumentMilliseconds, 0, 1_000);
            Range("cosmosLatency.throttledMilliseconds", CosmosLatency.ThrottledMilliseconds, 0, 60_000);
        }

        if (ServiceBusLatency is null)
        {
            problems.Add("serviceBusLatency is required");
        }
        else
        {
            Range("serviceBusLatency.sendMilliseconds", ServiceBusLatency.SendMilliseconds, 0, 60_000);
            Range("serviceBusLatency.receiveMilliseconds", ServiceBusLatency.ReceiveMilliseconds, 0, 60_000);
            Range("serviceBusLatency.completeMilliseconds", ServiceBusLatency.CompleteMilliseconds, 0, 60_000);
        }

        Range("quickTimeScale", QuickTimeScale, 1, 60);
        Range("quickReplicaDivisor", QuickReplicaDivisor, 1, 10);
        Range("redisWorkingSetMegabytes", RedisWorkingSetMegabytes, 0, 4_096);
        Range("invoiceRatePerUser", InvoiceRatePerUser, 0, 1_000, minExclusive: true);
        Range("invoiceTimeoutMargin", InvoiceTimeoutMargin, 1, 100);
        Range("deliveryRequestPeakRate", DeliveryRequestPeakRate, 2, OpenLoad.MaxRate);
        Range("deliveryRequestThinkTime", DeliveryRequestThinkTime.TotalSeconds, 0, 600);
        Range("cpuBudgetShare", CpuBudgetShare, 0.05, 1);
        Range("scaleCpuTarget", ScaleCpuTarget, 0.1, 1);
        Range("minimumScale", MinimumScale, 0.01, 1);
        return problems;
    }
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

    /// <summary>
    /// Replicas per service are the step's divided by this (1 runs the chart's counts); when not set, the
    /// calibration's for the mode and scenario (<see cref="LabCalibration.ReplicaDivisor"/>).
    /// </summary>
    public int? ReplicaDivisor { get; init; }

    /// <summary>The replica divisor <paramref name="scenario"/> runs with.</summary>
    public int ReplicaDivisorFor(LabScenario scenario) => ReplicaDivisor ?? Calibration.ReplicaDivisor(Mode, scenario);

    public string? ChartDirectory { get; init; }

    /// <summary>When set, each chosen step also runs with these values over it (<c>-f</c>, <c>--set</c>), measured beside it.</summary>
    public WhatIf? WhatIf { get; init; }

    /// <summary>
    /// Whether a step the machine disturbed or bound is measured once more (the default; a machine-bound one at a
    /// smaller scale); when not, its first measurement stands, flagged.
    /// </summary>
    public bool RemeasureDisturbed { get; init; } = true;

    /// <summary>The model scale to run at (<c>--scale</c>); null chooses it from a probe of this machine (<see cref="ScaleSelection"/>).</summary>
    public double? Scale { get; init; }

    /// <summary>When set, a real Prometheus scrapes the system on this port (files in the output's <c>prometheus/</c>).</summary>
    public int? PrometheusPort { get; init; }

    /// <summary>When set, the standalone Aspire dashboard runs beside the system and receives every process's telemetry (<c>--dashboard</c>).</summary>
    public bool Dashboard { get; init; }

    /// <summary>
    /// A sample of the requests is traced (through the Aspire dashboard, started for it) and each step's report draws a
    /// representative slow one as a waterfall; on for <c>run</c> unless <c>--no-traces</c>.
    /// </summary>
    public bool Traces { get; init; }

    /// <summary>Each step's busiest .NET process is profiled during its load and drawn as a flame graph (<c>--profile</c>).</summary>
    public bool Profile { get; init; }

    /// <summary>Values over every step's for the whole run (as <c>helm install --set</c>): what a command needs of the release, not a what-if.</summary>
    public DroneDelivery.Lab.Steps.ValuesTree DeploymentValues { get; init; } = DroneDelivery.Lab.Steps.ValuesTree.Empty;

    /// <summary>redis-server keeps an append-only file, so killing and restarting it loses nothing it acknowledged (the chaos command).</summary>
    public bool RedisPersistence { get; init; }

    /// <summary>Progress messages for the console.</summary>
    public Action<string> Log { get; init; } = _ => { };

    /// <summary>The clock of the run's progress lines and of the timing it decides itself (a chaos run's fault schedule, a soak's samples).</summary>
    public TimeProvider Time { get; init; } = TimeProvider.System;

    /// <summary>How often a long load prints a progress line (<see cref="ProgressReporter"/>).</summary>
    public TimeSpan ProgressInterval { get; init; } = ProgressReporter.DefaultInterval;

    /// <summary>A reporter of a load's progress to <see cref="Log"/>, every <see cref="ProgressInterval"/> of <see cref="Time"/>; the caller disposes it when the load is over.</summary>
    public ProgressReporter Progress(string label, Func<string?>? detail = null) => new(label, Log, Time, ProgressInterval, detail);
}
