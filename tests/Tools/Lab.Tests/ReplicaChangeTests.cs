using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A step that only changes a service's replica count scales it, as a Deployment scales: the replicas
/// already running (warm, connected) stay, and only the difference starts. A change of settings restarts.
/// </summary>
public sealed class ReplicaChangeTests
{
    private static readonly Dictionary<string, string> Settings = new(StringComparer.Ordinal) { ["Cosmos__DatabaseId"] = "dronedelivery" };

    [Fact]
    public void Only_the_count_changing_scales_the_running_replicas()
    {
        Assert.Equal(ReplicaChange.Scale, ReplicaSet.ChangeFor(false, Settings, 2, new Dictionary<string, string>(Settings), 5));
        Assert.Equal(ReplicaChange.Scale, ReplicaSet.ChangeFor(false, Settings, 5, new Dictionary<string, string>(Settings), 2));
    }

    [Fact]
    public void Changed_settings_a_forced_restart_or_nothing_running_restart_the_replicas()
    {
        var changed = new Dictionary<string, string>(Settings) { ["Cosmos__DatabaseId"] = "other" };
        var added = new Dictionary<string, string>(Settings) { ["Redis__Instance"] = "x" };

        Assert.Equal(ReplicaChange.Restart, ReplicaSet.ChangeFor(false, Settings, 2, changed, 5));
        Assert.Equal(ReplicaChange.Restart, ReplicaSet.ChangeFor(false, Settings, 2, added, 2));
        Assert.Equal(ReplicaChange.Restart, ReplicaSet.ChangeFor(true, Settings, 2, Settings, 5));
        Assert.Equal(ReplicaChange.Restart, ReplicaSet.ChangeFor(false, new Dictionary<string, string>(), 0, new Dictionary<string, string>(), 2));
    }

    [Fact]
    public void The_same_settings_and_count_change_nothing()
    {
        Assert.Equal(ReplicaChange.None, ReplicaSet.ChangeFor(false, Settings, 3, new Dictionary<string, string>(Settings), 3));
    }

    [Fact]
    public void New_replicas_take_the_lowest_free_numbers()
    {
        Assert.Equal(["delivery-3", "delivery-4"], ReplicaSet.NewNames("delivery", ["delivery-1", "delivery-2"], 2));
        Assert.Equal(["delivery-2", "delivery-4"], ReplicaSet.NewNames("delivery", ["delivery-1", "delivery-3"], 2));
    }
}

/// <summary>
/// Quick mode halves scenario B's replicas (30–40 processes at the chart's counts stall two cores) and keeps
/// scenario A's (halved, two DroneScheduler replicas starved their thread pools in A3); an explicit
/// <c>--replica-divisor</c> applies to both, and full mode runs the chart's counts.
/// </summary>
public sealed class ReplicaDivisorTests
{
    private static readonly LabCalibration Calibration = new();

    [Fact]
    public void Quick_mode_divides_only_scenario_Bs_replicas()
    {
        var quick = new LabRunOptions { Scenarios = ["A", "B"], Mode = LabMode.Quick, OutputDirectory = ".", Calibration = Calibration };

        Assert.Equal(1, quick.ReplicaDivisorFor(new GatewayScenario()));
        Assert.Equal(Calibration.QuickReplicaDivisor, quick.ReplicaDivisorFor(new PipelineScenario()));
        Assert.Equal(2, Calibration.QuickReplicaDivisor);
    }

    [Fact]
    public void Full_mode_runs_the_charts_counts_and_an_explicit_divisor_applies_to_both_scenarios()
    {
        var full = new LabRunOptions { Scenarios = ["A", "B"], Mode = LabMode.Full, OutputDirectory = ".", Calibration = Calibration };
        var explicitDivisor = full with { Mode = LabMode.Quick, ReplicaDivisor = 3 };

        Assert.Equal(1, full.ReplicaDivisorFor(new PipelineScenario()));
        Assert.Equal(3, explicitDivisor.ReplicaDivisorFor(new GatewayScenario()));
        Assert.Equal(3, explicitDivisor.ReplicaDivisorFor(new PipelineScenario()));
    }
}
