using System.Globalization;

namespace DroneDelivery.Lab.Measurement;

/// <summary>One resource of a step in the USE method's terms: how busy it was, how much work waited for it, and its errors.</summary>
internal sealed record UseRow(string Resource, string Utilisation, string Saturation, string Errors);

/// <summary>A tuning knob: its Helm value path, and the Bicep parameter that sets the same on Azure (null: an application setting, Helm only).</summary>
internal sealed record Knob(string HelmValue, string? BicepParameter = null)
{
    public override string ToString() => BicepParameter is null ? $"`{HelmValue}`" : $"`{HelmValue}` (Bicep `{BicepParameter}`)";
}

/// <summary>
/// What limited a step, in one sentence with its figures, and the knobs that move that limit. <see cref="Rule"/> names the
/// rule that found it; <see cref="MachineLimited"/> says the machine, not the modelled cloud, was the limit.
/// </summary>
internal sealed record Finding(string Rule, string Constraint, IReadOnlyList<Knob> Knobs, bool MachineLimited = false)
{
    public string Sentence => Knobs.Count == 0 ? Constraint : $"{Constraint} → {string.Join(", ", Knobs)}";
}

/// <summary>
/// Reads a step's evidence — its hops, CPU, thread pools, Cosmos DB, Service Bus and Redis figures — as the case studies
/// reason: find the resource that binds, state it with its figures, name the knob that moves it. The rules are tried in
/// order, the machine first (a machine-bound step's figures say nothing about the model), then the modelled limits
/// from the most to the least specific evidence.
/// </summary>
internal static class Diagnosis
{
    /// <summary>Share of Cosmos DB calls answered 429 from which throttling is the binding limit.</summary>
    internal const double ThrottledShare = 0.01;

    /// <summary>Share of its capacity at which a resource binds: provisioned RU/s of a partition, the Workflow's concurrency.</summary>
    internal const double Binding = 0.8;

    public static Finding Diagnose(StepResult step)
    {
        return Machine(step) ?? RedisFull(step) ?? CosmosThrottled(step) ?? LocksLost(step) ?? WorkflowConcurrency(step)
            ?? SerialFanOut(step) ?? CrossPartition(step) ?? Unbound(step);
    }

    public static IReadOnlyList<UseRow> UseTable(StepResult step)
    {
        var rows = new List<UseRow>();
        if (step.Budget is { } budget)
        {
            rows.Add(new UseRow(
                "machine CPU",
                F($"{step.SystemCpuAverageCores:0.00} of {budget.Cores:0.#} cores on average"),
                F($"{step.SystemCpuPeakCores:0.00} cores at the busiest {CpuBudget.WindowSeconds} s; budget {budget.LimitCores:0.00}")
                    + (step.CoreWaitShare is { } wait ? F($"; {wait:0.00} s waited for a core per CPU second") : string.Empty),
                step.Disturbed ? step.Disturbance : "–"));
        }

        foreach (var cpu in step.Cpu)
        {
            rows.Add(new UseRow(
                $"{cpu.Component} CPU",
                F($"{cpu.AveragePercent:0} % of a core per process on average ({step.Processes.GetValueOrDefault(cpu.Component, 1)} processes)"),
                step.ThreadPoolQueueMax.TryGetValue(cpu.Component, out var queue) ? F($"thread-pool queue up to {queue:0}; busiest process {cpu.MaxPercent:0} %") : F($"busiest process {cpu.MaxPercent:0} %"),
                "–"));
        }

        if (step.Cosmos is { } cosmos)
        {
            var calls = cosmos.CallsPerOperation * cosmos.Operations;
            rows.Add(new UseRow(
                $"Cosmos DB {cosmos.Container}",
                F($"busiest partition at {PeakPartitionShare(cosmos) * 100:0} % of its {cosmos.ProvisionedPerPartition:0} RU/s"),
                F($"{cosmos.CallsPerOperation:0.0} calls and {cosmos.RequestUnitsPerOperation:0.0} RU per operation"),
                F($"{cosmos.ThrottledRequests:N0} throttled (429), {Share(cosmos.ThrottledRequests, calls) * 100:0.0} % of calls")));
        }

        if (step.Pipeline is { } pipeline)
        {
            rows.Add(new UseRow(
                "Service Bus queue",
                F($"{pipeline.Incoming:N0} in, {pipeline.Outgoing:N0} deliveries out ({Share(pipeline.Outgoing, pipeline.Incoming):0.00}×)"),
                F($"{pipeline.ActiveAtEnd:N0} messages left at the end, {pipeline.ScheduledAtEnd:N0} scheduled for a retry"),
                F($"{pipeline.LockLost:N0} lock-lost settlements, {pipeline.DeadLettered:N0} dead-lettered")));
            if (InFlight(step) is { } flight)
            {
                rows.Add(new UseRow(
                    "Workflow concurrency",
                    F($"{flight.Mean:0.0} of {flight.Capacity} message slots busy on average ({flight.Mean / flight.Capacity * 100:0} %)"),
                    F($"{flight.Rate:0.0} messages/s × {flight.Seconds * 1000:0} ms each (Little's law)"),
                    F($"{pipeline.Abandoned:N0} abandoned")));
            }

            rows.Add(new UseRow("Redis", RedisUtilisation(step, pipeline.Redis), "–", F($"{pipeline.RedisOutOfMemoryErrors:N0} OOM refusals")));
        }

        foreach (var (service, waits) in step.ConnectionPoolWaits.OrderBy(w => w.Key, StringComparer.Ordinal).Where(w => w.Value.Waited > 0))
        {
            rows.Add(new UseRow($"{service} HTTP connection pools", "–", F($"{waits.Waited:N0} requests waited for a connection, {waits.MeanWaitMs:0.0} ms on average"), "–"));
        }

        rows.Add(new UseRow(
            "users",
            F($"{step.Throughput:0.0} successful requests/s"),
            F($"p99 {step.PercentileMs(99):0} ms"),
            F($"{step.Load.Totals.Errors:N0} failed or timed out ({string.Join(", ", step.Load.StatusCounts.Where(s => !s.Key.StartsWith('2')).OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key} × {s.Value:N0}"))})")));
        return rows;
    }

    /// <summary>Redis' used memory against its maxmemory at the step's end, and where it began.</summary>
    private static string RedisUtilisation(StepResult step, RedisMemory? memory)
    {
        static double Mb(long bytes) => bytes / 1048576.0;
        var limit = step.Step.Setting("redis.maxmemory") is { } maxMemory ? $"maxmemory {maxMemory}" : "no maxmemory";
        return memory switch
        {
            null => limit,
            { UsedShareAtEnd: { } share } => F($"{Mb(memory.UsedAtEnd):0.0} of {Mb(memory.Max):0.0} MB used at the end ({share * 100:0} %), {Mb(memory.UsedAtStart):0.0} MB at the start"),
            _ => F($"{Mb(memory.UsedAtEnd):0.0} MB used at the end, {Mb(memory.UsedAtStart):0.0} MB at the start ({limit})"),
        };
    }

    private static Finding? Machine(StepResult step) => step.MachineBound
        ? new Finding("machine", $"The machine, not the modelled cloud: {step.MachineBoundReason}", [], MachineLimited: true)
        : null;

    private static Finding? RedisFull(StepResult step) => step.Pipeline is { RedisOutOfMemoryErrors: > 0 } pipeline
        ? new Finding(
            "redis-full",
            F($"Redis is full: {pipeline.RedisOutOfMemoryErrors:N0} writes refused with OOM at maxmemory {step.Step.Setting("redis.maxmemory") ?? "unset"} ({step.Step.Setting("redis.maxmemoryPolicy") ?? "noeviction"}), so Delivery fails and the Workflow retries"),
            [new("redis.maxmemory", "redisSku, redisCapacity")])
        : null;

    private static Finding? CosmosThrottled(StepResult step)
    {
        if (step.Cosmos is not { } cosmos)
        {
            return null;
        }

        var calls = cosmos.CallsPerOperation * cosmos.Operations;
        var share = Share(cosmos.ThrottledRequests, calls);
        var peak = PeakPartitionShare(cosmos);
        // A query that reads every partition costs each invoice all of them: more RU/s is one way out, a partition
        // key that reads one partition the cheaper one (the articles' "scale the DB again, or better, fix the query").
        var crossPartition = cosmos.CallsPerOperation >= 2;
        return share >= ThrottledShare && peak >= Binding
            ? new Finding(
                "cosmos-throttled",
                F($"The {cosmos.Container} container at {peak * 100:0} % of its {cosmos.ProvisionedPerPartition:0} RU/s per partition at its busiest, {share * 100:0.0} % of calls throttled (429) and retried")
                    + (crossPartition ? F($"; each invoice reads {cosmos.CallsPerOperation:0.#} partitions for {cosmos.RequestUnitsPerOperation:0.0} RU, so a partition key would cut the demand instead") : string.Empty),
                crossPartition ? [ThroughputKnob(cosmos.Container), .. PartitionKeyKnobs] : [ThroughputKnob(cosmos.Container)])
            : null;
    }

    /// <summary>Lost locks bind from this share of the settlements on: one lock lost at the end of a backlog is not a limit.</summary>
    internal const double LockLostShare = 0.01;

    private static Finding? LocksLost(StepResult step)
    {
        if (step.Pipeline is not { LockLost: > 0 } pipeline || Share(pipeline.LockLost, pipeline.Completed + pipeline.LockLost) < LockLostShare)
        {
            return null;
        }

        var prefetch = step.Step.Setting("workflow.settings.Processor.PrefetchCount") ?? "0";
        var lockDuration = step.Step.Setting("serviceBus.queues.deliveryrequests.lockDuration") ?? "PT1M";
        var why = prefetch == "0"
            ? $"messages outlive the queue's {lockDuration} lock while they are handled"
            : $"prefetched messages wait in the client's buffer past the queue's {lockDuration} lock";
        return new Finding(
            "locks-lost",
            F($"{pipeline.LockLost:N0} settlements lost their lock ({Share(pipeline.LockLost, pipeline.Completed + pipeline.LockLost) * 100:0} % of settlements) with PrefetchCount {prefetch}: {why}, are delivered again ({Share(pipeline.Outgoing, pipeline.Incoming):0.00} deliveries per message) and dead-lettered ({pipeline.DeadLettered:N0})"),
            [new("serviceBus.queues.deliveryrequests.lockDuration", "queueLockDuration"), new("workflow.settings.Processor.PrefetchCount")]);
    }

    private static Finding? WorkflowConcurrency(StepResult step) => InFlight(step) is { } flight && flight.Mean >= Binding * flight.Capacity
        ? new Finding(
            "workflow-concurrency",
            F($"The Workflow's concurrency: {flight.Mean:0.0} of its {flight.Capacity} message slots ({flight.PerProcess} per process × {flight.Processes}) busy on average — {flight.Rate:0.0} messages/s × {flight.Seconds * 1000:0} ms each — while {step.Pipeline!.ActiveAtEnd:N0} messages wait in the queue"),
            flight.PerProcess <= 1
                ? [new("workflow.settings.Processor.MaxConcurrentCalls")]
                : [new("workflow.replicas", "userNodeCount"), new("workflow.settings.Processor.MaxConcurrentCalls")])
        : null;

    /// <summary>
    /// The invoice waits for DroneScheduler (the critical path), whose Cosmos DB calls run one after another: its
    /// median is close to calls × one call's median.
    /// </summary>
    private static Finding? SerialFanOut(StepResult step)
    {
        if (step.Cosmos is not { CallsPerOperation: >= 2 } cosmos || Critical(step, "gateway") is not { } slowest || slowest.To != "dronescheduler"
            || step.Hops.Where(h => h.From == "dronescheduler" && Hops.IsCosmos(h, "query")).MaxBy(h => h.CallsPerSecond) is not { } query)
        {
            return null;
        }

        // Queries per invoice from the two hops' rates: the plan and metadata calls are other hops.
        var queries = slowest.CallsPerSecond > 0 ? query.CallsPerSecond / slowest.CallsPerSecond : cosmos.CallsPerOperation;
        return queries >= 2 && slowest.P50Ms >= 0.6 * queries * query.P50Ms
            ? new Finding(
                "serial-fan-out",
                F($"DroneScheduler's {queries:0.#} Cosmos DB queries per invoice run one after another: gateway → dronescheduler p50 {slowest.P50Ms:0} ms against {query.P50Ms:0} ms per query, the invoice's critical path"),
                [new("droneScheduler.settings.Utilization.MaxConcurrency")])
            : null;
    }

    private static Finding? CrossPartition(StepResult step) => step.Cosmos is { CallsPerOperation: >= 2 } cosmos
        ? new Finding(
            "cross-partition",
            F($"Each invoice still reads every partition: {cosmos.CallsPerOperation:0.#} Cosmos DB calls and {cosmos.RequestUnitsPerOperation:0.0} RU per invoice, in parallel, because the {cosmos.Container} container is not partitioned by owner"),
            PartitionKeyKnobs)
        : null;

    /// <summary>The owner-keyed container and the settings that query it with the partition key (step A4).</summary>
    private static readonly Knob[] PartitionKeyKnobs =
    [
        new("droneScheduler.settings.Utilization.ContainerId"),
        new("droneScheduler.settings.Utilization.QueryWithPartitionKey"),
        new("cosmosDb.containers.utilization-by-owner.throughput", "utilizationByOwnerThroughput"),
    ];

    private static Finding Unbound(StepResult step)
    {
        var slowest = step.Hops.Where(h => h.OnCriticalPath).MaxBy(h => h.P50Ms);
        return new Finding(
            "unbound",
            slowest is null
                ? "No modelled limit binds: no throttling, no lost locks, no full cache, no saturated concurrency"
                : F($"No modelled limit binds (no throttling, lost locks, full cache or saturated concurrency); the longest hop is {slowest.Name} at p50 {slowest.P50Ms:0} ms"),
            []);
    }

    /// <summary>The caller's hop on the critical path.</summary>
    private static Hop? Critical(StepResult step, string caller) => step.Hops.FirstOrDefault(h => h.From == caller && h.OnCriticalPath);

    /// <summary>The Workflow's mean messages in flight by Little's law, against its slots (MaxConcurrentCalls × processes).</summary>
    private static (double Mean, int Capacity, int PerProcess, int Processes, double Rate, double Seconds)? InFlight(StepResult step)
    {
        if (step.Pipeline?.MeanProcessSeconds is not { } seconds
            || step.Hops.FirstOrDefault(h => h is { From: "workflow" } && h.To.StartsWith("a message", StringComparison.Ordinal)) is not { } messages
            || !int.TryParse(step.Step.Setting("workflow.settings.Processor.MaxConcurrentCalls"), NumberStyles.Integer, CultureInfo.InvariantCulture, out var perProcess))
        {
            return null;
        }

        var processes = Math.Max(1, step.Processes.GetValueOrDefault("workflow", 1));
        return (messages.CallsPerSecond * seconds, perProcess * processes, perProcess, processes, messages.CallsPerSecond, seconds);
    }

    private static Knob ThroughputKnob(string container) => container switch
    {
        "utilization" => new($"cosmosDb.containers.{container}.throughput", "utilizationThroughput"),
        "utilization-by-owner" => new($"cosmosDb.containers.{container}.throughput", "utilizationByOwnerThroughput"),
        _ => new($"cosmosDb.containers.{container}.throughput", "supportingContainerThroughput"),
    };

    /// <summary>The busiest partition's highest RU/s over the step, as a share of what each partition is provisioned.</summary>
    private static double PeakPartitionShare(CosmosFigures cosmos) =>
        cosmos.ProvisionedPerPartition <= 0 ? 0 : cosmos.ConsumedPerPartition.SelectMany(s => s.Points).Select(p => p.Value).DefaultIfEmpty(0).Max() / cosmos.ProvisionedPerPartition;

    private static double Share(double part, double whole) => whole <= 0 ? 0 : part / whole;

    private static string F(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);
}
