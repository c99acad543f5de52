using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The model scale: rates times it, delays divided by it, counts untouched — and the choice of it from a probe
/// of the machine, against the CPU budget.
/// </summary>
public sealed class ModelScaleTests
{
    private static readonly LabCalibration Calibration = new();

    [Fact]
    public void Rates_grow_with_the_scale_and_delays_shrink_with_it()
    {
        var half = new ModelScale(0.5);

        Assert.Equal(58, half.Rate(116));
        Assert.Equal(TimeSpan.FromSeconds(2), half.Delay(TimeSpan.FromSeconds(1)));
        Assert.Equal(450, half.Throughput(900, physicalPartitions: 9));
        var cosmos = half.Cosmos(new LatencyOptions { FixedMilliseconds = 20, ExponentialMeanMilliseconds = 40, PerDocumentMilliseconds = 0.05, ThrottledMilliseconds = 1 });
        Assert.Equal((40, 80, 0.1, 2), (cosmos.FixedMilliseconds, cosmos.ExponentialMeanMilliseconds, cosmos.PerDocumentMilliseconds, cosmos.ThrottledMilliseconds));
        Assert.Equal(new ServiceBusLatency(10, 10, 200), half.ServiceBus(new ServiceBusLatency(5, 5, 100)));
    }

    [Fact]
    public void A_container_keeps_at_least_one_request_unit_per_partition() =>
        Assert.Equal(9, new ModelScale(0.001).Throughput(900, physicalPartitions: 9));

    [Theory]
    [InlineData(0.437, 0.43)]
    [InlineData(0.0999, 0.099)]
    [InlineData(1, 1)]
    [InlineData(2.37, 2.3)]
    public void A_chosen_scale_has_two_significant_digits_rounded_down(double wanted, double chosen) =>
        Assert.Equal(chosen, ModelScale.RoundedDown(wanted).Value, precision: 9);

    [Fact]
    public void A_machine_with_cores_to_spare_runs_the_model_at_scale_one()
    {
        // 4 ms per request × 100/s = 0.4 cores + 0.1 at rest, well within 75 % of 60 % of 2 cores.
        var choice = ScaleSelection.Choose(Probe(cpuMsPerRequest: 4, idleCores: 0.1), peakRate: 100, Calibration);

        Assert.Equal(1, choice.Scale.Value);
        Assert.False(choice.MachineTooSmall);
        Assert.Equal(0.5, choice.PredictedPeakCores!.Value, precision: 9);
    }

    [Fact]
    public void A_machine_short_of_cpu_runs_the_model_at_the_scale_that_keeps_its_predicted_peak_at_the_target()
    {
        // Budget 0.6 × 2 = 1.2 cores, target 0.75 × 1.2 = 0.9; (0.9 − 0.1) ÷ (12 ms × 116/s = 1.392) = 0.5747.
        var choice = ScaleSelection.Choose(Probe(cpuMsPerRequest: 12, idleCores: 0.1), peakRate: 116, Calibration);

        Assert.Equal(0.57, choice.Scale.Value, precision: 9);
        Assert.True(choice.PredictedPeakCores <= Calibration.ScaleCpuTarget * choice.Budget!.LimitCores);
        Assert.Contains("scale 0.57", choice.Reason, StringComparison.Ordinal);
    }

    [Fact]
    public void Other_processes_at_normal_priority_leave_the_system_less_and_the_scale_follows()
    {
        var quiet = ScaleSelection.Choose(Probe(cpuMsPerRequest: 12, idleCores: 0.1), peakRate: 116, Calibration);
        var busy = ScaleSelection.Choose(Probe(cpuMsPerRequest: 12, idleCores: 0.1, otherCores: 1), peakRate: 116, Calibration);

        Assert.True(busy.Scale.Value < quiet.Scale.Value / 2 + 0.01, $"{busy.Scale} with a core busy, {quiet.Scale} without");
    }

    [Fact]
    public void A_machine_whose_own_latency_rivals_the_models_runs_smaller()
    {
        // The model takes 540 ms; this machine adds 200 ms of its own: at most 25 % of the model → 540 × 0.25 ÷ 200 = 0.675.
        var choice = ScaleSelection.Choose(Probe(cpuMsPerRequest: 1, idleCores: 0.05, meanLatencyMs: 740, modelLatencyMs: 540), peakRate: 116, Calibration);

        Assert.Equal(0.67, choice.Scale.Value, precision: 9);
        Assert.Contains("added 200 ms", choice.Reason, StringComparison.Ordinal);
    }

    [Fact]
    public void A_machine_too_small_even_at_the_smallest_scale_is_told_so_before_anything_is_measured()
    {
        var choice = ScaleSelection.Choose(Probe(cpuMsPerRequest: 60, idleCores: 0.3, cores: 1), peakRate: 250, Calibration);

        Assert.True(choice.MachineTooSmall);
        Assert.Contains("too small for the lab", choice.Reason, StringComparison.Ordinal);
        Assert.Contains("below the smallest, 0.1", choice.Reason, StringComparison.Ordinal);
    }

    [Fact]
    public void At_the_smallest_scale_the_predicted_peak_may_use_the_whole_budget_not_only_the_share_a_larger_scale_aims_at()
    {
        // One core: budget 0.6, target 0.75 × 0.6 = 0.45. 14 ms × 250/s = 3.5 cores at scale 1: (0.45 − 0.1) ÷ 3.5 = 0.1 fits
        // the target; 18 ms asks 0.078 of the target, but at 0.1 predicts 0.1 + 0.45 = 0.55 cores, within the budget.
        var edge = ScaleSelection.Choose(Probe(cpuMsPerRequest: 18, idleCores: 0.1, cores: 1), peakRate: 250, Calibration);
        var beyond = ScaleSelection.Choose(Probe(cpuMsPerRequest: 22, idleCores: 0.1, cores: 1), peakRate: 250, Calibration);

        Assert.False(edge.MachineTooSmall);
        Assert.Equal(0.1, edge.Scale.Value, precision: 9);
        Assert.Equal(0.55, edge.PredictedPeakCores!.Value, precision: 9);
        Assert.Contains("scale 0.1, the smallest", edge.Reason, StringComparison.Ordinal);
        Assert.True(beyond.MachineTooSmall);
        Assert.Contains("even at 0.1 the peak is predicted at 0.65 cores, above the budget itself", beyond.Reason, StringComparison.Ordinal);
    }

    [Fact]
    public void The_busiest_window_is_the_highest_five_second_average()
    {
        IReadOnlyList<SystemCpuSample> samples = [.. new[] { 0.2, 0.2, 1.0, 1.0, 1.0, 1.0, 1.0, 0.1, 0.1 }.Select((cores, i) => new SystemCpuSample(i, cores))];

        Assert.Equal(1.0, CpuBudget.PeakCores(samples), precision: 9);
        Assert.Equal(0.5, CpuBudget.PeakCores([new(0, 0.4), new(1, 0.6)]), precision: 9);
        Assert.Equal(0, CpuBudget.PeakCores([]));
    }

    [Fact]
    public void A_thread_pool_is_saturated_when_it_queues_on_two_scrapes_in_a_row()
    {
        Assert.Null(CpuBudget.ThreadPoolSaturation([new(0, "gateway", 200), new(2, "gateway", 3), new(4, "gateway", 180)]));
        var saturated = CpuBudget.ThreadPoolSaturation([new(0, "gateway", 2), new(0, "dronescheduler", 40), new(2, "dronescheduler", 183)]);

        Assert.Equal("dronescheduler's thread pool queued 183 work items for a thread", saturated);
    }

    [Fact]
    public void A_budget_is_its_share_of_what_other_processes_leave()
    {
        Assert.Equal(1.2, new CpuBudget(2, 0, 0.6).LimitCores, precision: 9);
        Assert.Equal(0.6, new CpuBudget(2, 1, 0.6).LimitCores, precision: 9);
        Assert.Equal(0.9, new CpuBudget(2, 0.5, 0.6).LimitCores, precision: 9);
    }

    [Fact]
    public void Other_processes_at_the_same_priority_leave_the_system_at_least_half_the_machine()
    {
        // Two busy shells took 1.8 of 2 cores while the system was idle; asked, the scheduler splits the cores evenly.
        var beside = new CpuBudget(2, 1.8, 0.6);

        Assert.Equal(0.6, beside.LimitCores, precision: 9);
        Assert.Contains("0.60 cores (60 % of 1, half the 2-core machine: other processes took 1.80 cores", beside.Describe(), StringComparison.Ordinal);
        Assert.Equal(0.3, new CpuBudget(1, 1.5, 0.6).LimitCores, precision: 9);
    }

    [Fact]
    public void Under_a_quota_other_processes_take_from_the_system_only_what_the_free_cores_do_not_cover()
    {
        // One core's quota on a 2-core machine: a process on the other core leaves the quota whole.
        Assert.Equal(0.6, new CpuBudget(1, 0.8, 0.6, HardwareCores: 2).LimitCores, precision: 9);
        // A quota of one and a half cores, with 1.2 cores taken beside it: the 0.8 left, but no less than half the machine.
        Assert.Equal(0.6, new CpuBudget(1.5, 1.2, 0.6, HardwareCores: 2).LimitCores, precision: 9);
        Assert.Equal(0.9, new CpuBudget(1.5, 0, 0.6, HardwareCores: 2).LimitCores, precision: 9);
        Assert.Contains("of a quota on a 2-core machine", new CpuBudget(1, 0, 0.6, HardwareCores: 2).Describe(), StringComparison.Ordinal);
    }

    [Fact]
    public void A_second_that_stops_falling_above_the_resting_level_is_not_yet_rest()
    {
        // The seconds after a probe's first hold on one core, where 0.26 once passed for rest.
        var settling = new ScaleSelection.Settling();

        Assert.False(settling.Add(0.30));
        Assert.False(settling.Add(0.26));
        Assert.False(settling.Add(0.24));
        Assert.False(settling.Add(0.08));
        Assert.True(settling.Add(0.07));
        Assert.Equal(0.07, settling.RestingCores, precision: 9);
    }

    [Fact]
    public void The_rest_is_the_quietest_second_seen_not_the_last()
    {
        var settling = new ScaleSelection.Settling();

        Assert.False(settling.Add(0.12));
        Assert.False(settling.Add(0.05));
        Assert.True(settling.Add(0.09));
        Assert.Equal(0.05, settling.RestingCores, precision: 9);
    }

    private static MachineProbe Probe(double cpuMsPerRequest, double idleCores, double otherCores = 0, int cores = 2, double? meanLatencyMs = null, double? modelLatencyMs = null) =>
        new("A1", 24, 300, 15, cores, otherCores, idleCores, cpuMsPerRequest, meanLatencyMs, modelLatencyMs);
}
