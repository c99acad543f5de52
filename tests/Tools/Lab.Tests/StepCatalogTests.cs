using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

public sealed class StepCatalogTests : IDisposable
{
    private readonly string _chart = Directory.CreateTempSubdirectory("chart-").FullName;

    public StepCatalogTests()
    {
        File.WriteAllText(Path.Combine(_chart, "values.yaml"), """
            commonSettings:
              Resilience:
                MaxRetryAttempts: 3
            droneScheduler:
              replicas: 3
              settings:
                Utilization:
                  MaxConcurrency: 0
                  PartitionKeyPath: /partitionKey
            cosmosDb:
              containers:
                utilization: { throughput: 900, physicalPartitions: 9 }
            """);
        Directory.CreateDirectory(Path.Combine(_chart, "steps"));
        File.WriteAllText(Path.Combine(_chart, "steps", "A3.yaml"), """
            # A3 — parallel cross-partition queries
            # MaxConcurrency 0 -> -1 on top of 2500 RU/s.

            cosmosDb:
              containers:
                utilization:
                  throughput: 2500
            droneScheduler:
              settings:
                Utilization:
                  MaxConcurrency: -1
            """);
    }

    [Fact]
    public void A_step_is_the_chart_defaults_with_its_overlay_merged_over_them()
    {
        var step = StepCatalog.Load(_chart)["A3"];

        Assert.Equal("A3 — parallel cross-partition queries", step.Title);
        Assert.Equal(3, step.Replicas(ServiceKind.DroneScheduler));
        Assert.Equal(2500L, step.CosmosContainer("utilization")["throughput"]);
        Assert.Equal(9L, step.CosmosContainer("utilization")["physicalPartitions"]);
        Assert.Equal(
            new Dictionary<string, string>
            {
                ["Resilience__MaxRetryAttempts"] = "3",
                ["Utilization__MaxConcurrency"] = "-1",
                ["Utilization__PartitionKeyPath"] = "/partitionKey",
            },
            step.Settings(ServiceKind.DroneScheduler));
    }

    [Fact]
    public void The_overlay_alone_lists_what_the_step_changes()
    {
        var step = StepCatalog.Load(_chart)["A3"];

        Assert.Equal(
            [("cosmosDb.containers.utilization.throughput", "2500"), ("droneScheduler.settings.Utilization.MaxConcurrency", "-1")],
            step.Overlay.Leaves().OrderBy(l => l.Path, StringComparer.Ordinal));
    }

    [Fact]
    public void An_unknown_step_is_named_in_the_error()
    {
        var error = Assert.Throws<KeyNotFoundException>(() => StepCatalog.Load(_chart)["A9"]);

        Assert.Contains("A9", error.Message);
        Assert.Contains("A3", error.Message);
    }

    public void Dispose() => Directory.Delete(_chart, recursive: true);
}
