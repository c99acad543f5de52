using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>A step whose figures the machine decided is named machine-bound, and its verdicts do not count.</summary>
public sealed class MachineBoundTests : IDisposable
{
    private readonly string _chart = Directory.CreateTempSubdirectory("chart-").FullName;
    private readonly StepCatalog _catalog;

    public MachineBoundTests() => _catalog = FakeStepResults.Catalog(_chart, "A1", "A2", "A3", "A4");

    public void Dispose() => Directory.Delete(_chart, recursive: true);

    [Fact]
    public void A_step_within_its_budget_is_not_machine_bound()
    {
        var step = Step("A1", peakCores: 1.1);

        Assert.False(step.MachineBound);
        Assert.Empty(step.MachineBoundReason);
    }

    [Fact]
    public void A_step_above_its_cpu_budget_is_machine_bound_and_says_by_how_much()
    {
        var step = Step("A1", peakCores: 1.5);

        Assert.True(step.MachineBound);
        Assert.Contains("the system took 1.50 cores at its busiest 5 s, above its budget of 1.20 cores", step.MachineBoundReason, StringComparison.Ordinal);
    }

    [Fact]
    public void A_step_whose_thread_pool_queued_is_machine_bound_within_its_cpu_budget()
    {
        var step = Step("A3", peakCores: 0.9) with { ThreadPoolSaturation = "dronescheduler's thread pool queued 183 work items for a thread" };

        Assert.True(step.MachineBound);
        Assert.Equal("dronescheduler's thread pool queued 183 work items for a thread", step.MachineBoundReason);
    }

    [Fact]
    public void Verdicts_of_a_machine_bound_step_and_of_those_compared_with_it_are_shown_but_not_counted()
    {
        var results = new[] { Step("A1", peakCores: 1.6), Step("A2", peakCores: 0.8), Step("A3", peakCores: 0.9), Step("A4", peakCores: 0.7) };
        var verdicts = new Verdict[]
        {
            new("A1", "throttles", Passed: false, "0 throttled"),
            new("A2", "no 429s", Passed: true, "0"),
            new("A3", "faster than A2", Passed: true, "…") { ComparedWith = ["A2"] },
            new("A4", "throughput at least 2.8× A1's", Passed: false, "1.2×") { ComparedWith = ["A1"] },
        };

        var judged = LabRunner.Judged(verdicts, results);

        Assert.Equal([false, true, true, false], judged.Select(v => v.NotJudgedBecause is null));
        Assert.StartsWith("A1 was machine-bound: the system took 1.60 cores", judged[3].NotJudgedBecause, StringComparison.Ordinal);
        // Neither failure counts: both read A1's figures, which the machine decided.
        Assert.DoesNotContain(judged, v => v.Counts && !v.Passed);
        Assert.StartsWith("skip  A4", LabRunner.Describe(judged[3]), StringComparison.Ordinal);
        Assert.StartsWith("PASS  A3", LabRunner.Describe(judged[2]), StringComparison.Ordinal);
    }

    [Fact]
    public void A_machine_bound_step_is_measured_again_at_a_smaller_scale_until_the_smallest()
    {
        var calibration = new LabCalibration();

        Assert.Equal(0.3, LabRunner.ScaleForRetry(new ModelScale(0.5), calibration)!.Value, precision: 9);
        Assert.Equal(0.1, LabRunner.ScaleForRetry(new ModelScale(0.12), calibration)!.Value, precision: 9);
        Assert.Null(LabRunner.ScaleForRetry(new ModelScale(0.1), calibration));
    }

    private StepResult Step(string id, double peakCores) =>
        FakeStepResults.For(_catalog[id]) with { SystemCpuPeakCores = peakCores, Budget = new CpuBudget(2, 0, 0.6) };
}
