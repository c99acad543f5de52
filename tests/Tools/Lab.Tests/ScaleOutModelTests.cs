using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// B6 on the case study's cluster, predicted from B5's CPU cost per completed message and B6's
/// replicas, concurrency and CPU limits (the chart's real B6), with every limit computed by hand here.
/// </summary>
public sealed class ScaleOutModelTests
{
    private static readonly StepCatalog Catalog = StepCatalog.Load();
    private static readonly Series Empty = new("empty", []);

    [Fact]
    public void The_prediction_is_the_lowest_limit_each_from_B5_s_cost_and_B6_s_shape()
    {
        // 60 one-second samples: workflow 50 % × 3 processes = 90 CPU s, delivery 20 % × 6 = 72,
        // package and dronescheduler 10 % × 6 = 36 each; 6,000 messages completed.
        var prediction = ScaleOutModel.Predict(B5(completed: 6000, processSeconds: 0.25), Catalog["B6"], measuredB6: null)!;

        // Per message: workflow 15 ms, delivery 12 ms, package 6 ms, dronescheduler 6 ms = 39 ms.
        Assert.Equal(24 / 0.039, Limit(prediction, "the cluster's CPU"), 6);
        Assert.Equal(6 * 1 / 0.015, Limit(prediction, "workflow CPU"), 6);
        Assert.Equal(9 * 1 / 0.012, Limit(prediction, "delivery CPU"), 6);
        Assert.Equal(9 * 1 / 0.006, Limit(prediction, "package CPU"), 6);
        Assert.Equal(9 * 1 / 0.006, Limit(prediction, "dronescheduler CPU"), 6);
        Assert.Equal(20 * 6 / 0.25, Limit(prediction, "the workflow's concurrency"), 6);
        Assert.Equal(400, prediction.Predicted, 6);
        Assert.Equal("workflow CPU", prediction.Binding.Name);
        Assert.Null(prediction.Measured);
        Assert.Contains("model (not a measurement)", prediction.Summary);
        Assert.Contains("not run", prediction.Summary);
        Assert.Contains(prediction.Inputs, i => i.Value.Contains("12 nodes", StringComparison.Ordinal) && i.Value.Contains("2 cores per node (assumed", StringComparison.Ordinal));
    }

    [Fact]
    public void A_slow_workflow_makes_concurrency_the_limit_and_the_measured_B6_is_shown_beside()
    {
        var b6 = FakeStepResults.For(Catalog["B6"]) with { Pipeline = Pipeline(completed: 6000, peak: 81.6, processSeconds: null) };

        var prediction = ScaleOutModel.Predict(B5(completed: 6000, processSeconds: 1.5), Catalog["B6"], b6)!;

        Assert.Equal("the workflow's concurrency", prediction.Binding.Name);
        Assert.Equal(20 * 6 / 1.5, prediction.Predicted, 6);
        Assert.Equal(81.6, prediction.Measured);
    }

    [Fact]
    public void Scenario_B_predicts_B6_only_when_B5_was_measured()
    {
        var scenario = new PipelineScenario();

        Assert.Empty(scenario.Predictions(new Dictionary<string, StepResult>(), Catalog));
        var prediction = Assert.Single(scenario.Predictions(new Dictionary<string, StepResult> { ["B5"] = B5(6000, 0.25) }, Catalog));
        Assert.Equal("B6", prediction.StepId);
    }

    [Fact]
    public void Without_completed_messages_there_is_no_prediction()
    {
        Assert.Null(ScaleOutModel.Predict(B5(completed: 0, processSeconds: 0.25), Catalog["B6"], null));
    }

    private static StepResult B5(long completed, double? processSeconds) =>
        FakeStepResults.For(Catalog["B5"]) with
        {
            Pipeline = Pipeline(completed, peak: 70, processSeconds),
            CpuSeries = [Cpu("workflow", 50), Cpu("delivery", 20), Cpu("package", 10), Cpu("dronescheduler", 10), Cpu("ingestion", 80)],
            Processes = new Dictionary<string, int> { ["workflow"] = 3, ["delivery"] = 6, ["package"] = 6, ["dronescheduler"] = 6, ["ingestion"] = 3 },
        };

    private static PipelineFigures Pipeline(long completed, double peak, double? processSeconds) =>
        new(completed, completed, completed, 0, 0, 0, 0, 0, 0, peak, Empty, Empty, Empty, Empty) { MeanProcessSeconds = processSeconds };

    private static Series Cpu(string component, double percent) => new(component, [.. Enumerable.Range(0, 60).Select(s => new TimePoint(s, percent))]);

    private static double Limit(ModelPrediction prediction, string name) => Assert.Single(prediction.Limits, l => l.Name == name).Rate;
}
