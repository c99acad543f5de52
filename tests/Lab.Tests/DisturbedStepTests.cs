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

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), () => { resets++; return Task.CompletedTask; });

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
            () => { order.Add("reset"); return Task.CompletedTask; });

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

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: false, () => Task.FromResult(measured.Dequeue()), () => { resets++; return Task.CompletedTask; });

        Assert.Equal(0, resets);
        Assert.Equal(4.5, result.LongestStallSeconds);
        Assert.True(result.Disturbed);
    }

    [Fact]
    public async Task A_step_disturbed_twice_is_not_measured_a_third_time_and_stays_marked()
    {
        var measured = new Queue<StepResult>([Result(stall: 3), Result(stall: 2.5), Result(stall: 0)]);
        var resets = 0;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), () => { resets++; return Task.CompletedTask; });

        Assert.Equal(1, resets);
        Assert.Single(measured);
        Assert.True(result.Disturbed);
        Assert.Contains("in an earlier attempt too", LabRunner.DisturbanceNote(result), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_step_slowed_down_steadily_by_other_busy_processes_is_measured_again()
    {
        // The lab's timer never stalled, but other processes took a core on average: a steady slowdown.
        var measured = new Queue<StepResult>([Result(stall: 0.4, otherCores: 1.1), Result(stall: 0.2, otherCores: 0.05)]);
        var resets = 0;

        var result = await LabRunner.MeasureWithOneRetryAsync(remeasure: true, () => Task.FromResult(measured.Dequeue()), () => { resets++; return Task.CompletedTask; });

        Assert.Equal(1, resets);
        Assert.False(result.Disturbed);
        Assert.Equal(1.1, result.EarlierAttemptOtherCores);
        Assert.Contains("other processes took 1.10", result.EarlierAttemptDisturbance, StringComparison.Ordinal);
    }

    [Fact]
    public void The_note_names_what_disturbed_the_step()
    {
        var both = Result(stall: 3.2, otherCores: 0.8);

        Assert.True(both.Disturbed);
        Assert.Contains("stood still for up to 3.2 s", LabRunner.DisturbanceNote(both), StringComparison.Ordinal);
        Assert.Contains("other processes took 0.80", LabRunner.DisturbanceNote(both), StringComparison.Ordinal);
        Assert.False(Result(stall: 1.9, otherCores: 0.49).Disturbed);
    }

    private StepResult Result(double stall, double otherCores = 0) => FakeStepResults.For(_step) with { LongestStallSeconds = stall, OtherCores = otherCores };
}
