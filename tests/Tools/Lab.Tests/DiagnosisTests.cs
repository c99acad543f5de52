using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The diagnosis of a step: the rule that binds, stated with its figures, and the knob that moves it. Each case is the
/// chart's real step (or a what-if of it, as <c>run --set</c> builds it) with the evidence such a step produces; a
/// what-if that moves the constraint changes the diagnosis.
/// </summary>
public sealed class DiagnosisTests
{
    private static readonly StepCatalog Catalog = StepCatalog.Load();

    [Fact]
    public void A1_throttled_on_every_partition_is_the_utilization_containers_RU_s()
    {
        var finding = Diagnosis.Diagnose(GatewayStep("A1", throttled: 620, peakShare: 1.0));

        Assert.Equal("cosmos-throttled", finding.Rule);
        Assert.Contains("utilization container at 100 % of its 100 RU/s per partition", finding.Constraint, StringComparison.Ordinal);
        Assert.Contains("6.2 % of calls throttled", finding.Constraint, StringComparison.Ordinal);
        Assert.Equal(new Knob("cosmosDb.containers.utilization.throughput", "utilizationThroughput"), finding.Knobs[0]);
        Assert.Contains("each invoice reads 10 partitions for 29.0 RU, so a partition key would cut the demand instead", finding.Constraint, StringComparison.Ordinal);
        Assert.Contains(new Knob("droneScheduler.settings.Utilization.QueryWithPartitionKey"), finding.Knobs);
        Assert.False(finding.MachineLimited);
    }

    [Fact]
    public void A1_with_9000_RU_s_is_no_longer_RU_bound_but_its_serial_fan_out_is_the_critical_path()
    {
        var step = GatewayStep("A1", throttled: 0, peakShare: 0.25, set: "cosmosDb.containers.utilization.throughput=9000");

        var finding = Diagnosis.Diagnose(step);

        Assert.Equal("serial-fan-out", finding.Rule);
        Assert.Contains("9 Cosmos DB queries per invoice run one after another", finding.Constraint, StringComparison.Ordinal);
        Assert.Equal([new Knob("droneScheduler.settings.Utilization.MaxConcurrency")], finding.Knobs);
    }

    [Fact]
    public void A3s_parallel_queries_leave_the_cross_partition_cost_and_A4s_one_call_leaves_no_modelled_limit()
    {
        var a3 = Diagnosis.Diagnose(GatewayStep("A3", throttled: 0, peakShare: 0.5, droneSchedulerP50Ms: 95));
        var a4 = Diagnosis.Diagnose(GatewayStep("A4", throttled: 0, peakShare: 0.2, droneSchedulerP50Ms: 25, callsPerOperation: 1));

        Assert.Equal("cross-partition", a3.Rule);
        Assert.Contains(new Knob("cosmosDb.containers.utilization-by-owner.throughput", "utilizationByOwnerThroughput"), a3.Knobs);
        Assert.Equal("unbound", a4.Rule);
        Assert.Contains("the longest hop is gateway → dronescheduler", a4.Constraint, StringComparison.Ordinal);
    }

    [Fact]
    public void B1s_OOM_refusals_are_a_full_Redis()
    {
        var finding = Diagnosis.Diagnose(PipelineStep("B1", redisOom: 412, messagesPerSecond: 3, processMs: 300));

        Assert.Equal("redis-full", finding.Rule);
        Assert.Contains("412 writes refused with OOM", finding.Constraint, StringComparison.Ordinal);
        Assert.Equal([new Knob("redis.maxmemory", "redisSku, redisCapacity")], finding.Knobs);
    }

    [Fact]
    public void B2_one_message_at_a_time_is_the_Workflows_concurrency_and_with_MaxConcurrentCalls_20_it_no_longer_is()
    {
        // One Workflow process handling 3.9 messages/s at 250 ms each: 0.98 of its one slot busy.
        var one = Diagnosis.Diagnose(PipelineStep("B2", messagesPerSecond: 3.9, processMs: 250, activeAtEnd: 900));
        var twenty = Diagnosis.Diagnose(PipelineStep("B2", messagesPerSecond: 3.9, processMs: 250, set: "workflow.settings.Processor.MaxConcurrentCalls=20"));

        Assert.Equal("workflow-concurrency", one.Rule);
        Assert.Contains("1.0 of its 1 message slots", one.Constraint, StringComparison.Ordinal);
        Assert.Equal([new Knob("workflow.settings.Processor.MaxConcurrentCalls")], one.Knobs);
        Assert.Equal("unbound", twenty.Rule);
    }

    [Fact]
    public void One_lock_lost_at_the_end_of_a_backlog_is_no_limit()
    {
        // As a real run of B2 with MaxConcurrentCalls 20 measured: one lost lock among about a thousand settlements.
        var finding = Diagnosis.Diagnose(PipelineStep("B2", lockLost: 1, messagesPerSecond: 20, processMs: 600, set: "workflow.settings.Processor.MaxConcurrentCalls=20"));

        Assert.NotEqual("locks-lost", finding.Rule);
    }

    [Fact]
    public void B4s_lost_locks_are_the_prefetch_buffer_and_with_PrefetchCount_0_there_are_none_to_blame()
    {
        var b4 = Diagnosis.Diagnose(PipelineStep("B4", lockLost: 850, messagesPerSecond: 40, processMs: 260));
        var noPrefetch = Diagnosis.Diagnose(PipelineStep("B4", messagesPerSecond: 40, processMs: 260, set: "workflow.settings.Processor.PrefetchCount=0"));

        Assert.Equal("locks-lost", b4.Rule);
        Assert.Contains("850 settlements lost their lock", b4.Constraint, StringComparison.Ordinal);
        Assert.Contains("PrefetchCount 3000", b4.Constraint, StringComparison.Ordinal);
        Assert.Equal(new Knob("serviceBus.queues.deliveryrequests.lockDuration", "queueLockDuration"), b4.Knobs[0]);
        Assert.NotEqual("locks-lost", noPrefetch.Rule);
    }

    [Fact]
    public void A_CPU_starved_step_blames_the_machine_not_the_modelled_cloud()
    {
        var starved = GatewayStep("A1", throttled: 620, peakShare: 1.0) with
        {
            Budget = new CpuBudget(2, 0, 0.6),
            SystemCpuPeakCores = 1.9,
        };

        var finding = Diagnosis.Diagnose(starved);

        Assert.Equal("machine", finding.Rule);
        Assert.True(finding.MachineLimited);
        Assert.Contains("above its budget", finding.Constraint, StringComparison.Ordinal);
        Assert.Empty(finding.Knobs);
    }

    [Fact]
    public void The_USE_table_names_every_resource_the_articles_reason_about()
    {
        var gateway = Diagnosis.UseTable(GatewayStep("A1", throttled: 620, peakShare: 1.0) with { Budget = new CpuBudget(2, 0, 0.6), SystemCpuPeakCores = 0.9 });
        var pipeline = Diagnosis.UseTable(PipelineStep("B4", lockLost: 850, messagesPerSecond: 40, processMs: 260));

        Assert.Equal(["machine CPU", "Cosmos DB utilization", "users"], gateway.Select(r => r.Resource));
        Assert.Equal("620 throttled (429), 6.2 % of calls", gateway[1].Errors);
        Assert.Equal(["Service Bus queue", "Workflow concurrency", "Redis", "users"], pipeline.Select(r => r.Resource));
        Assert.Contains("850 lock-lost settlements", pipeline[0].Errors, StringComparison.Ordinal);
        Assert.Equal("maxmemory 512mb", pipeline[2].Utilisation);
    }

    [Fact]
    public void The_USE_table_gives_Redis_used_memory_against_maxmemory_during_the_step()
    {
        const long Mb = 1024 * 1024;
        var b1 = PipelineStep("B1", messagesPerSecond: 1, processMs: 900, redisOom: 300);
        var full = b1 with { Pipeline = b1.Pipeline! with { Redis = new RedisMemory(50 * Mb, 63 * Mb, 64 * Mb) } };
        var unlimited = b1 with { Pipeline = b1.Pipeline! with { Redis = new RedisMemory(50 * Mb, 70 * Mb, 0) } };

        var redis = Diagnosis.UseTable(full).Single(r => r.Resource == "Redis");

        Assert.Equal("63.0 of 64.0 MB used at the end (98 %), 50.0 MB at the start", redis.Utilisation);
        Assert.Equal("300 OOM refusals", redis.Errors);
        Assert.StartsWith("70.0 MB used at the end, 50.0 MB at the start (", Diagnosis.UseTable(unlimited).Single(r => r.Resource == "Redis").Utilisation, StringComparison.Ordinal);
    }

    [Fact]
    public void The_USE_table_gives_the_time_the_systems_threads_waited_for_a_core_as_the_cpus_saturation()
    {
        var a1 = GatewayStep("A1", throttled: 620, peakShare: 1.0) with { Budget = new CpuBudget(1, 0, 0.6, HardwareCores: 2), SystemCpuPeakCores = 0.3, CoreWaitShare = 0.91 };

        var machine = Diagnosis.UseTable(a1).Single(r => r.Resource == "machine CPU");

        Assert.Equal("0.30 cores at the busiest 5 s; budget 0.60; 0.91 s waited for a core per CPU second", machine.Saturation);
        Assert.DoesNotContain("waited", Diagnosis.UseTable(a1 with { CoreWaitShare = null }).Single(r => r.Resource == "machine CPU").Saturation, StringComparison.Ordinal);
    }

    private static Step StepOf(string id, string? set) => set is null
        ? Catalog[id]
        : Catalog.WhatIf(id, new WhatIf([new ValuesSource(ValuesSourceKind.Set, set)]));

    /// <summary>Scenario A's evidence: 1,000 invoices of 10 Cosmos DB calls each (9 queries and a plan), nine partitions of 100 RU/s.</summary>
    private static StepResult GatewayStep(string id, long throttled, double peakShare, string? set = null, double droneSchedulerP50Ms = 600, double callsPerOperation = 10)
    {
        const double Provisioned = 100;
        return FakeStepResults.For(StepOf(id, set)) with
        {
            Cosmos = new CosmosFigures(
                "utilization",
                throttled,
                1_000,
                29,
                callsPerOperation,
                Provisioned,
                [new Series("partition 0", [new TimePoint(1, Provisioned * peakShare)])],
                new Series("429/s", [])),
            Hops =
            [
                new Hop("gateway", "delivery", 20, 3, 8, 0, 0),
                new Hop("gateway", "package", 20, 40, 90, 0, 0),
                new Hop("gateway", "dronescheduler", 20, droneSchedulerP50Ms, droneSchedulerP50Ms * 2, 0, 0) { OnCriticalPath = true },
                new Hop("dronescheduler", "Cosmos DB utilization query", 20 * (callsPerOperation - 1), Math.Min(60, droneSchedulerP50Ms * 0.8), 120, 0, 0) { OnCriticalPath = true },
            ],
        };
    }

    /// <summary>Scenario B's evidence: the Workflow's message rate and handling time, one Workflow process.</summary>
    private static StepResult PipelineStep(
        string id, double messagesPerSecond, double processMs, long redisOom = 0, long lockLost = 0, long activeAtEnd = 0, string? set = null) =>
        FakeStepResults.For(StepOf(id, set)) with
        {
            Pipeline = new PipelineFigures(
                1_000, 1_000 + lockLost, 1_000, 0, lockLost / 10, lockLost, redisOom, activeAtEnd, 0, messagesPerSecond,
                new Series("in", []), new Series("out", []), new Series("completions", []), new Series("dead", []))
            {
                MeanProcessSeconds = processMs / 1000,
            },
            Processes = new Dictionary<string, int> { ["workflow"] = 1 },
            Hops = [new Hop("workflow", "a message (whole handling)", messagesPerSecond, processMs, processMs * 2, 0, 0)],
        };
}
