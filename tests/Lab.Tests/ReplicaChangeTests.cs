using DroneDelivery.Lab.Deployment;

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
