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

    /// <summary>A step result whose load lasted <paramref name="loadSeconds"/> with <paramref name="successes"/> requests each taking <paramref name="latencyMs"/>.</summary>
    public static StepResult For(Step step, double loadSeconds = 1, long successes = 0, double latencyMs = 0)
    {
        var latency = new LongHistogram(3_600_000_000, 3);
        if (successes > 0)
        {
            latency.RecordValueWithCount((long)(latencyMs * 1000), successes);
        }

        return For(step) with
        {
            Load = Load(TimeSpan.FromSeconds(loadSeconds), new LoadTotals(successes, successes, successes, 0, 0, 0, 0, 0, 0, 0, 0), latency),
        };
    }

    public static StepResult For(Step step) => new()
    {
        Step = step,
        Load = Load(TimeSpan.FromSeconds(1), new LoadTotals(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), new LongHistogram(3_600_000_000, 3)),
        Cpu = [],
        CpuSeries = [],
        ThreadPoolQueueMax = new Dictionary<string, double>(),
    };

    private static LoadTestResult Load(TimeSpan duration, LoadTotals totals, LongHistogram latency) => new()
    {
        Scenario = "test",
        Target = new Uri("http://127.0.0.1:1/"),
        Shape = new ClosedLoad(1, 1, TimeSpan.FromSeconds(1)),
        Bounds = new LoadBounds(),
        StartedAt = DateTimeOffset.UnixEpoch,
        LoadDuration = duration,
        TotalDuration = duration,
        StopReason = StopReason.Completed,
        Totals = totals,
        StatusCounts = new Dictionary<string, long>(),
        RequestLatency = latency,
        TimeSeries = [],
        ErrorSamples = [],
    };
}
