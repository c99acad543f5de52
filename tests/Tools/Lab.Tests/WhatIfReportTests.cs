using System.CommandLine;
using System.Text.Json.Nodes;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The report shows a what-if beside the step it starts from (settings as changed, every figure with
/// its delta and ratio, overlaid charts) and a model beside the measured figure; <c>compare</c> reads two
/// reports back and puts their steps side by side, and refuses a path that is not a report.
/// (Charts are rendered with the real ECharts renderer: .ci/setup installs it.)
/// </summary>
public sealed class WhatIfReportTests : IDisposable
{
    private static readonly StepCatalog Catalog = StepCatalog.Load();
    private readonly string _directory = Directory.CreateTempSubdirectory("lab-report-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task A_what_if_is_reported_beside_its_step_with_deltas_changed_settings_and_overlaid_charts()
    {
        var run = await WriteRunAsync("run", outgoingB4: 11547, withWhatIf: true);

        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.Contains("### B4 + what-if beside B4", markdown);
        Assert.Contains("| `workflow.settings.Processor.PrefetchCount` | 3000 | 0 |", markdown);
        Assert.Contains("| outgoing deliveries | deliveries | 11,547 | 6,105 | -5,442 | 0.53× |", markdown);
        Assert.Contains("| incoming messages | messages | 6,080 | 6,080 | 0 | 1.00× |", markdown);
        Assert.Contains("charts/whatif-B4-incoming-messages-s.svg", markdown);
        Assert.True(File.Exists(Path.Combine(run, "charts", "whatif-B4-outgoing-deliveries-s.svg")));
        Assert.Contains("B4 + what-if beside B4", await File.ReadAllTextAsync(Path.Combine(run, "index.html")));
        // The step and its what-if each with its own diagnosis: PrefetchCount 0 loses (almost) no locks.
        Assert.Contains("**Diagnosis** (locks-lost): 3,667 settlements lost their lock", markdown);
        Assert.Equal(2, System.Text.RegularExpressions.Regex.Matches(markdown, @"^\*\*Diagnosis\*\*", System.Text.RegularExpressions.RegexOptions.Multiline).Count);

        var results = JsonNode.Parse(await File.ReadAllTextAsync(Path.Combine(run, "results.json")))!;
        var whatIf = results["scenarios"]![0]!["steps"]![1]!;
        Assert.Equal("B4+what-if", (string?)whatIf["id"]);
        Assert.Equal("workflow.settings.Processor.PrefetchCount", (string?)whatIf["whatIf"]!["changes"]![0]!["path"]);
        Assert.True(File.Exists(Path.Combine(run, "steps", "B4+what-if", StepSeries.FileName)));
    }

    [Fact]
    public async Task The_B6_model_is_printed_beside_the_measured_figure_and_labelled_as_a_model()
    {
        var run = await WriteRunAsync("run", outgoingB4: 11547, withWhatIf: false, withModel: true);

        var markdown = await File.ReadAllTextAsync(Path.Combine(run, "report.md"));
        Assert.Contains("### Model, not a measurement: B6 on the case study's cluster", markdown);
        Assert.Contains("| measured on this machine | not run |", markdown);
        Assert.Contains("12 nodes", markdown);
        Assert.Contains("Model, not a measurement", await File.ReadAllTextAsync(Path.Combine(run, "index.html")));
        Assert.NotNull(JsonNode.Parse(await File.ReadAllTextAsync(Path.Combine(run, "results.json")))!["scenarios"]![0]!["models"]![0]!["predicted"]);
    }

    [Fact]
    public async Task Compare_puts_the_common_steps_of_two_runs_side_by_side()
    {
        var before = await WriteRunAsync("before", outgoingB4: 11547, withWhatIf: true);
        var after = await WriteRunAsync("after", outgoingB4: 9000, withWhatIf: false);
        var output = Path.Combine(_directory, "comparison");

        var console = await ComparisonReport.WriteAsync(LabReport.Read(before), LabReport.Read(Path.Combine(after, "results.json")), output, CancellationToken.None);

        var markdown = await File.ReadAllTextAsync(Path.Combine(output, "comparison.md"));
        Assert.Contains("## B4", markdown);
        Assert.Contains("| outgoing deliveries | deliveries | 11,547 | 9,000 | -2,547 | 0.78× |", markdown);
        Assert.Contains("Only in a: B4 + what-if.", markdown);
        Assert.True(File.Exists(Path.Combine(output, "charts", "compare-b4-outgoing-deliveries-s.svg")));
        Assert.Contains("outgoing deliveries", console);
        Assert.Contains("0.78×", console);
        // Each side's reasoning: the lost locks in both (B4's prefetch), named by the rule that found them.
        Assert.Contains("Diagnosis a: locks-lost: 3,667 settlements lost their lock", markdown);
        Assert.Contains("Diagnosis b: locks-lost:", markdown);
        Assert.Contains("Diagnosis a: locks-lost", console);
    }

    [Fact]
    public async Task Compare_exits_2_naming_a_path_that_is_not_a_lab_report()
    {
        var run = await WriteRunAsync("run", outgoingB4: 11547, withWhatIf: false);
        var notAReport = Directory.CreateDirectory(Path.Combine(_directory, "empty")).FullName;
        var otherJson = Path.Combine(_directory, "other.json");
        await File.WriteAllTextAsync(otherJson, """{"name": "something else"}""");

        Assert.Contains("is not a lab report", Assert.Throws<InvalidDataException>(() => LabReport.Read(notAReport)).Message);
        Assert.Contains("is not a lab report", Assert.Throws<InvalidDataException>(() => LabReport.Read(otherJson)).Message);
        var error = new StringWriter();
        var exitCode = await new RootCommand { LabCommands.Compare() }.Parse(["compare", run, notAReport])
            .InvokeAsync(new InvocationConfiguration { Error = error, Output = TextWriter.Null });
        Assert.Equal(2, exitCode);
    }

    private async Task<string> WriteRunAsync(string name, long outgoingB4, bool withWhatIf, bool withModel = false)
    {
        List<StepResult> steps = [Result(Catalog["B4"], outgoingB4, 3667)];
        if (withWhatIf)
        {
            steps.Add(Result(Catalog.WhatIf("B4", new WhatIf([new(ValuesSourceKind.Set, "workflow.settings.Processor.PrefetchCount=0")])), 6105, 1));
        }

        var scenario = new PipelineScenario();
        var byStep = steps.Where(s => s.Step.WhatIf is null).ToDictionary(s => s.Step.Id);
        var predictions = withModel ? [ScaleOutModel.Predict(B5(), Catalog["B6"], null)!] : Array.Empty<ModelPrediction>();
        var outcome = new ScenarioOutcome(scenario, steps, [.. scenario.Verdicts(byStep, LabMode.Quick), .. scenario.WhatIfVerdicts(steps, LabMode.Quick)]) { Predictions = predictions };
        var options = new LabRunOptions { Scenarios = ["B"], OutputDirectory = Path.Combine(_directory, name) };

        await ReportWriter.WriteAsync([outcome], options, CancellationToken.None);
        return options.OutputDirectory;
    }

    private static StepResult Result(Step step, long outgoing, long lockLost)
    {
        var incoming = new Series("incoming", [.. Enumerable.Range(0, 80).Select(s => new TimePoint(s, s))]);
        var outgoingSeries = new Series("outgoing", [.. Enumerable.Range(0, 80).Select(s => new TimePoint(s, outgoing / 6080.0 * s))]);
        var completions = new Series("completed per 5 s", [.. Enumerable.Range(0, 16).Select(b => new TimePoint(b * 5, 300))]);
        return FakeStepResults.For(step, loadSeconds: 80) with
        {
            Pipeline = new PipelineFigures(6080, outgoing, 6080, 0, 0, lockLost, 0, 0, 0, 60, incoming, outgoingSeries, completions, new Series("dead-lettered", [])),
            CpuSeries = [new Series("workflow", [.. Enumerable.Range(0, 80).Select(s => new TimePoint(s, 90))])],
            Cpu = [new CpuFigures("workflow", 90, 100)],
        };
    }

    private static StepResult B5() => Result(Catalog["B5"], 6080, 0) with
    {
        CpuSeries = [.. ScaleOutModel.Components.Select(c => new Series(c.Name, [.. Enumerable.Range(0, 60).Select(s => new TimePoint(s, 40))]))],
        Processes = ScaleOutModel.Components.ToDictionary(c => c.Name, _ => 3),
    };
}
