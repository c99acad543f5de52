using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;
using DroneDelivery.LoadDriver.Results;
using HdrHistogram;

namespace DroneDelivery.Lab.Tests;

/// <summary>Step results with an empty load, for tests of what the lab decides from measured figures.</summary>
internal static class FakeStepResults
{
    /// <summary>A chart folder with one step overlay per id, each a plain header.</summary>
    public static StepCatalog Catalog(string chartDirectory, params string[] stepIds)
    {
        File.WriteAllText(Path.Combine(chartDirectory, "values.yaml"), "gateway:\n  replicas: 1\n");
        Directory.CreateDirectory(Path.Combine(chartDirectory, "steps"));
        foreach (var id in stepIds)
        {
            File.WriteAllText(Path.Combine(chartDirectory, "steps", id + ".yaml"), $"# {id} — a step\n\ngateway:\n  replicas: 1\n");
        }

        return StepCatalog.Load(chartDirectory);
    }

    public static StepResult For(Step step) => new()
    {
        Step = step,
        Load = new LoadTestResult
        {
            Scenario = "test",
            Target = new Uri("http://127.0.0.1:1/"),
            Shape = new ClosedLoad(1, 1, TimeSpan.FromSeconds(1)),
            Bounds = new LoadBounds(),
            StartedAt = DateTimeOffset.UnixEpoch,
            LoadDuration = TimeSpan.FromSeconds(1),
            TotalDuration = TimeSpan.FromSeconds(1),
            StopReason = StopReason.Completed,
            Totals = new LoadTotals(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
            StatusCounts = new Dictionary<string, long>(),
            RequestLatency = new LongHistogram(3_600_000_000, 3),
            TimeSeries = [],
            ErrorSamples = [],
        },
        Cpu = [],
        CpuSeries = [],
        ThreadPoolQueueMax = new Dictionary<string, double>(),
    };
}
