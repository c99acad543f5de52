using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>A step measured while the machine stood still is measured once more from the same starting point.</summary>
public sealed class DisturbedStepTests : IDisposable
{
    private readonly string _chart = Directory.CreateTempSubdirectory("chart-").FullName;
    private readonly Step _step;

    public DisturbedStepTests() => _step = FakeStepResults.Catalog(_chart, "A1")["A1"];

    public void Dispose() => Directory.Delete(_chart, recursive: true);

    [Fact]
    public async Task A_quiet_step_is_measured_once()
    {
        var measured = new Queue<StepResult>([Result(stall: 0.3), Result(stall: 0.1)]);
        var resets = 0;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), _ => { resets++; return Task.FromResult<string?>("again"); });

        Assert.Equal(0, resets);
        Assert.Equal(0.3, result.LongestStallSeconds);
        Assert.Null(result.EarlierAttemptStallSeconds);
        Assert.False(result.Disturbed);
    }

    [Fact]
    public async Task A_disturbed_step_is_reset_and_measured_again_and_the_second_figures_are_kept()
    {
        var order = new List<string>();
        var measured = new Queue<StepResult>([Result(stall: 4.5), Result(stall: 0.2)]);

        var result = await LabRunner.MeasureWithOneRetryAsync(
            remeasure: true,
            () => { order.Add("measure"); return Task.FromResult(measured.Dequeue()); },
            _ => { order.Add("reset"); return Task.FromResult<string?>("the machine stood still"); });

        Assert.Equal(["measure", "reset", "measure"], order);
        Assert.Equal(0.2, result.LongestStallSeconds);
        Assert.Equal(4.5, result.EarlierAttemptStallSeconds);
        Assert.False(result.Disturbed);
    }

    [Fact]
    public async Task Told_not_to_remeasure_a_disturbed_step_keeps_its_first_measurement_marked()
    {
        var measured = new Queue<StepResult>([Result(stall: 4.5), Result(stall: 0.2)]);
        var resets = 0;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: false, () => Task.FromResult(measured.Dequeue()), _ => { resets++; return Task.FromResult<string?>("again"); });

        Assert.Equal(0, resets);
        Assert.Equal(4.5, result.LongestStallSeconds);
        Assert.True(result.Disturbed);
    }

    [Fact]
    public async Task A_step_disturbed_twice_is_not_measured_a_third_time_and_stays_marked()
    {
        var measured = new Queue<StepResult>([Result(stall: 3), Result(stall: 2.5), Result(stall: 0)]);
        var resets = 0;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), _ => { resets++; return Task.FromResult<string?>("again"); });

        Assert.Equal(1, resets);
        Assert.Single(measured);
        Assert.True(result.Disturbed);
        Assert.Contains("in an earlier attempt too", LabRunner.DisturbanceNote(result), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Other_busy_processes_alone_do_not_disturb_a_step_they_leave_within_its_budget()
    {
        // Other processes took a core on average, but the system stayed within what they left it: the model decided.
        var measured = new Queue<StepResult>([Result(stall: 0.4, otherCores: 1.1) with { SystemCpuPeakCores = 0.3, Budget = new CpuBudget(2, 1.1, 0.6) }]);
        var resets = 0;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), _ => { resets++; return Task.FromResult<string?>("again"); });

        Assert.Equal(0, resets);
        Assert.False(result.Disturbed);
        Assert.False(result.MachineBound);
    }

    [Fact]
    public async Task A_machine_bound_step_is_measured_again_and_the_reason_kept()
    {
        var bound = Result(stall: 0.2) with { SystemCpuPeakCores = 1.9, Budget = new CpuBudget(2, 0.05, 0.6) };
        var measured = new Queue<StepResult>([bound, Result(stall: 0.1) with { SystemCpuPeakCores = 0.7, Budget = new CpuBudget(2, 0.05, 0.6) }]);
        StepResult? seen = null;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), first => { seen = first; return Task.FromResult<string?>("measured again at scale 0.3"); });

        Assert.Same(bound, seen);
        Assert.False(result.MachineBound);
        Assert.Equal("measured again at scale 0.3", result.EarlierAttemptReason);
    }

    [Fact]
    public async Task A_machine_bound_step_that_no_smaller_scale_can_help_keeps_its_measurement_marked()
    {
        var bound = Result(stall: 0.2) with { SystemCpuPeakCores = 1.9, Budget = new CpuBudget(2, 0.05, 0.6) };
        var measured = new Queue<StepResult>([bound, Result(stall: 0.1)]);

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), _ => Task.FromResult<string?>(null));

        Assert.Same(bound, result);
        Assert.True(result.MachineBound);
        Assert.Single(measured);
    }

    [Fact]
    public void The_note_names_what_disturbed_the_step()
    {
        Assert.True(Result(stall: 3.2).Disturbed);
        Assert.Contains("stood still for up to 3.2 s", LabRunner.DisturbanceNote(Result(stall: 3.2)), StringComparison.Ordinal);
        Assert.False(Result(stall: 1.9, otherCores: 1.5).Disturbed);
    }

    private StepResult Result(double stall, double otherCores = 0) => FakeStepResults.For(_step) with { LongestStallSeconds = stall, OtherCores = otherCores };
}
