using System.Text.Json.Nodes;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Profiling;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A step's section of the report carries its reasoning: the diagnosis, the hops with the critical path and their
/// chart, the USE table, a traced request's waterfall and, when profiled, the flame graph with its top frames — in report.md, index.html and results.json.
/// </summary>
public sealed class DiagnosisReportTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("lab-diagnosis-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task A_steps_section_shows_its_diagnosis_hops_USE_table_and_profile()
    {
        var step = StepCatalog.Load()["B4"];
        var result = FakeStepResults.For(step, loadSeconds: 80) with
        {
            Pipeline = new PipelineFigures(6080, 9000, 6080, 0, 40, 2900, 0, 0, 0, 60,
                new Series("in", []), new Series("out", []), new Series("completions", []), new Series("dead", [])) { MeanProcessSeconds = 0.26 },
            Hops =
            [
                new Hop("workflow", "delivery", 70, 12, 40, 0, 2) { OnCriticalPath = true },
                new Hop("workflow", "package", 70, 9, 30, 0, 0),
                new Hop("workflow", "a message (whole handling)", 70, 260, 900, 3, 0),
            ],
            Processes = new Dictionary<string, int> { ["workflow"] = 2 },
            Trace = new StepTrace("4bf92f3577b34da6a3ce929d0e0e4736", 1_230, 31, 48, 0),
            Profile = new ProfiledProcess("workflow", 4242, Path.Combine(_directory, "run", "steps", "B4", LabRunner.ProfileFileName), "top frames by total\n  41.0 %  DroneDelivery.Workflow.DeliveryWorkflow.ProcessAsync", 5_000),
        };
        var scenario = new PipelineScenario();
        var outcome = new ScenarioOutcome(scenario, [result], scenario.Verdicts(new Dictionary<string, StepResult> { ["B4"] = result }, LabMode.Quick));
        var options = new LabRunOptions { Scenarios = ["B"], OutputDirectory = Path.Combine(_directory, "run") };

        await ReportWriter.WriteAsync([outcome], options, CancellationToken.None);

        var markdown = await File.ReadAllTextAsync(Path.Combine(options.OutputDirectory, "report.md"));
        Assert.Contains("**Diagnosis** (locks-lost): 2,900 settlements lost their lock", markdown, StringComparison.Ordinal);
        Assert.Contains("`serviceBus.queues.deliveryrequests.lockDuration` (Bicep `queueLockDuration`)", markdown, StringComparison.Ordinal);
        Assert.Contains("| * workflow → delivery | 70.0 | 12.0 | 40.0 | 0 | 2 |", markdown, StringComparison.Ordinal);
        Assert.Contains("| Service Bus queue | 6,080 in, 9,000 deliveries out (1.48×)", markdown, StringComparison.Ordinal);
        Assert.Contains("| Workflow concurrency | 18.2 of 40 message slots busy", markdown, StringComparison.Ordinal);
        Assert.Contains("A representative slow request: 1230 ms, 31 spans (the 90th percentile of 48 traced; trace `4bf92f3577b34da6a3ce929d0e0e4736`)", markdown, StringComparison.Ordinal);
        Assert.Contains("![waterfall of a request](steps/B4/trace.svg)", markdown, StringComparison.Ordinal);
        Assert.Contains("![CPU profile of workflow](steps/B4/cpu-profile.svg)", markdown, StringComparison.Ordinal);
        Assert.Contains("DroneDelivery.Workflow.DeliveryWorkflow.ProcessAsync", markdown, StringComparison.Ordinal);
        Assert.Contains("charts/B4-hops.svg", markdown, StringComparison.Ordinal);
        Assert.True(File.Exists(Path.Combine(options.OutputDirectory, "charts", "B4-hops.svg")));

        var html = await File.ReadAllTextAsync(Path.Combine(options.OutputDirectory, "index.html"));
        Assert.Contains("<b>Diagnosis</b> (locks-lost)", html, StringComparison.Ordinal);
        Assert.Contains("<caption>Where the time goes", html, StringComparison.Ordinal);
        Assert.Contains("<caption>What limits it</caption>", html, StringComparison.Ordinal);
        Assert.Contains("src=\"steps/B4/cpu-profile.svg\"", html, StringComparison.Ordinal);
        Assert.Contains("src=\"steps/B4/trace.svg\"", html, StringComparison.Ordinal);

        var json = JsonNode.Parse(await File.ReadAllTextAsync(Path.Combine(options.OutputDirectory, "results.json")))!["scenarios"]![0]!["steps"]![0]!;
        Assert.Equal("locks-lost", (string?)json["diagnosis"]!["rule"]);
        Assert.Equal("workflow", (string?)json["hops"]![0]!["from"]);
        Assert.Equal("Service Bus queue", (string?)json["use"]![0]!["resource"]);
    }
}
