using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;
using HdrHistogram;

namespace DroneDelivery.Lab.Reporting;

/// <summary>
/// Writes a run's report: <c>report.md</c> (the articles' tables with our measurements beside them,
/// each step's changes, figures and verdicts), the charts as SVG, <c>index.html</c> showing them all,
/// and <c>results.json</c> with the figures the verdicts were computed from.
/// </summary>
internal static partial class ReportWriter
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { WriteIndented = true };

    public static async Task<string> WriteAsync(IReadOnlyList<ScenarioOutcome> outcomes, LabRunOptions options, CancellationToken cancellationToken)
    {
        var directory = options.OutputDirectory;
        Directory.CreateDirectory(directory);
        var charts = outcomes.SelectMany(ChartsOf).ToList();
        await ChartRenderer.RenderAsync(charts, Path.Combine(directory, "charts"), cancellationToken).ConfigureAwait(false);

        var markdown = Markdown(outcomes, options, charts);
        await File.WriteAllTextAsync(Path.Combine(directory, "report.md"), markdown, cancellationToken).ConfigureAwait(false);
        await File.WriteAllTextAsync(Path.Combine(directory, "index.html"), Html(outcomes, options, charts), cancellationToken).ConfigureAwait(false);
        await File.WriteAllTextAsync(Path.Combine(directory, "results.json"), JsonSerializer.Serialize(Summary(outcomes, options), Json), cancellationToken).ConfigureAwait(false);
        WriteStepSeries(outcomes, directory);
        return Path.Combine(directory, "index.html");
    }

    /// <summary>The charts of a scenario: a summary across steps, then each step's.</summary>
    internal static IEnumerable<ChartSpec> ChartsOf(ScenarioOutcome outcome)
    {
        var steps = outcome.Steps;
        var ids = steps.Select(s => s.Step.Id).ToList();
        if (outcome.Scenario is GatewayScenario)
        {
            // Beside the article's figures, ours at the article's speed: throughput ÷ scale, latency × scale.
            yield return Charts.Bars($"{outcome.Scenario.Id}-summary-throughput.svg", "Throughput per step (successful req/s, article-equivalent)", ids,
                [(HereLabel(steps), [.. steps.Select(s => (double?)s.ArticleThroughput)]), ("article", [.. ids.Select(id => Article(outcome, "throughput (req/s)", id))])], "req/s");
            yield return Charts.Bars($"{outcome.Scenario.Id}-summary-latency.svg", "Average latency per step (ms, article-equivalent)", ids,
                [(HereLabel(steps), [.. steps.Select(s => (double?)s.ArticleAverageLatencyMs)]), ("article", [.. ids.Select(id => Article(outcome, "average latency (ms)", id))])], "ms");
            yield return Charts.Bars($"{outcome.Scenario.Id}-summary-ru.svg", "Request units and Cosmos DB calls per operation", ids,
                [("RU per operation", [.. steps.Select(s => (double?)s.Cosmos?.RequestUnitsPerOperation)]), ("calls per operation", [.. steps.Select(s => (double?)s.Cosmos?.CallsPerOperation)])], "per operation");
        }
        else
        {
            yield return Charts.Bars($"{outcome.Scenario.Id}-summary-completions.svg", "Peak completions per second (5-second bins, article-equivalent)", ids,
                [(HereLabel(steps), [.. steps.Select(s => s.Pipeline?.MaxCompletionsPerSecond / s.Scale)])], "messages/s");
            yield return Charts.Bars($"{outcome.Scenario.Id}-summary-failures.svg", "Dead-letters, lock-lost settlements and Redis OOM errors", ids,
                [("dead-lettered", [.. steps.Select(s => (double?)s.Pipeline?.DeadLettered)]), ("lock lost", [.. steps.Select(s => (double?)s.Pipeline?.LockLost)]), ("Redis OOM", [.. steps.Select(s => (double?)s.Pipeline?.RedisOutOfMemoryErrors)])], "count");
        }

        foreach (var step in steps)
        {
            foreach (var chart in StepCharts(step))
            {
                yield return chart;
            }
        }

        foreach (var chart in WhatIfCharts(outcome))
        {
            yield return chart;
        }
    }

    /// <summary>"measured here", or with the scale when the steps did not run at 1.</summary>
    private static string HereLabel(IReadOnlyList<StepResult> steps) =>
        steps.All(s => s.Scale == 1) ? "measured here" : "measured here, at the article's speed";

    private static IEnumerable<ChartSpec> StepCharts(StepResult result)
    {
        var id = result.Step.Id;
        var seconds = result.Load.TimeSeries;
        var users = seconds.Any(s => s.ActiveUsers is not null)
            ? new Line(new Series("users", [.. seconds.Select(s => new TimePoint(s.Second, s.ActiveUsers ?? 0))]), Axis: 1, Dashed: true, Step: true)
            : null;
        List<Line> throughput =
        [
            new(new Series("successful requests/s", [.. seconds.Select(s => new TimePoint(s.Second, s.Successes / s.IntervalSeconds))]), Area: true),
            new(new Series("errors/s", [.. seconds.Select(s => new TimePoint(s.Second, s.Errors / s.IntervalSeconds))])),
        ];
        if (users is not null)
        {
            throughput.Add(users);
        }

        yield return Charts.TimeSeries($"{id}-throughput.svg", $"{id}: throughput and users over time", throughput, "requests/s", users is null ? null : "users");
        yield return Charts.TimeSeries($"{id}-latency.svg", $"{id}: latency percentiles per second", [
            new(new Series("p50", [.. seconds.Where(s => s.P50Ms is not null).Select(s => new TimePoint(s.Second, s.P50Ms!.Value))])),
            new(new Series("p99", [.. seconds.Where(s => s.P99Ms is not null).Select(s => new TimePoint(s.Second, s.P99Ms!.Value))])),
            new(new Series("max", [.. seconds.Where(s => s.MaxMs is not null).Select(s => new TimePoint(s.Second, s.MaxMs!.Value))]), Dashed: true),
        ], "ms");

        if (result.Cosmos is { } cosmos)
        {
            yield return Charts.TimeSeries(
                $"{id}-ru-per-partition.svg",
                $"{id}: RU consumed per physical partition per second ({cosmos.Container})",
                [.. cosmos.ConsumedPerPartition.Select(s => new Line(s))],
                "RU/s",
                references: [($"provisioned per partition: {cosmos.ProvisionedPerPartition:0} RU/s", cosmos.ProvisionedPerPartition)]);
            yield return Charts.TimeSeries($"{id}-throttles.svg", $"{id}: Cosmos DB 429s per second", [new(cosmos.ThrottledPerSecond, Area: true)], "429/s");
        }

        if (result.Pipeline is { } pipeline)
        {
            // Incoming as a shaded area: where outgoing follows it exactly (B5) the line lies on the area's edge.
            yield return Charts.TimeSeries($"{id}-incoming-outgoing.svg", $"{id}: Service Bus incoming vs outgoing messages per second", [
                new(pipeline.IncomingPerSecond, Area: true),
                new(pipeline.OutgoingPerSecond),
                new(pipeline.DeadLetteredPerSecond, Dashed: true),
            ], "messages/s");
            yield return Charts.Bars(
                $"{id}-completions.svg",
                $"{id}: completions per 5 seconds",
                [.. pipeline.CompletionsPer5Seconds.Points.Select(p => p.Second.ToString("0", CultureInfo.InvariantCulture) + " s")],
                [("completed", [.. pipeline.CompletionsPer5Seconds.Points.Select(p => (double?)p.Value)])],
                "messages");
        }

        if (HopChart(result) is { } hops)
        {
            yield return hops;
        }

        yield return Charts.TimeSeries($"{id}-cpu.svg", $"{id}: CPU per component (average over its processes)", [.. result.CpuSeries.Select(s => new Line(s))], "% of one core");
        if (result.Budget is { } budget)
        {
            yield return Charts.TimeSeries(
                $"{id}-system-cpu.svg",
                $"{id}: the whole system's CPU against its budget (scale {result.Scale:0.##})",
                [new(result.SystemCpuSeries, Area: true)],
                "cores",
                references: [(string.Create(CultureInfo.InvariantCulture, $"budget: {budget.LimitCores:0.00} cores"), budget.LimitCores)]);
        }
    }

    private static double? Article(ScenarioOutcome outcome, string metric, string step) =>
        outcome.Scenario.ArticleTable.FirstOrDefault(r => r.Metric == metric)?.ByStep.GetValueOrDefault(step) is { } text &&
        double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) ? value : null;

    private static string Markdown(IReadOnlyList<ScenarioOutcome> outcomes, LabRunOptions options, IReadOnlyList<ChartSpec> charts)
    {
        var md = new StringBuilder();
        md.AppendLine("# Drone Delivery lab report").AppendLine();
        var compression = options.Mode == LabMode.Quick
            ? string.Create(CultureInfo.InvariantCulture, $" (time compressed {options.Calibration.QuickTimeScale:0.#}×: load and message locks last 1/{options.Calibration.QuickTimeScale:0.#} of the case study's).")
            : ".";
        md.AppendLine(CultureInfo.InvariantCulture, $"Run at {DateTimeOffset.Now:yyyy-MM-dd HH:mm zzz} on {Environment.ProcessorCount} cores, {options.Mode.ToString().ToLowerInvariant()} mode{compression}");
        md.AppendLine("Replicas: " + string.Join("; ", outcomes.Select(o => options.ReplicaDivisorFor(o.Scenario) is var divisor && divisor == 1
            ? $"scenario {o.Scenario.Id} the chart's counts"
            : string.Create(CultureInfo.InvariantCulture, $"scenario {o.Scenario.Id} the chart's counts ÷ {divisor}, at least one each (`--replica-divisor 1` runs the chart's)"))) + ".");
        md.AppendLine(CultureInfo.InvariantCulture, $"Calibration: `{options.Calibration.Name}` (its values are in `results.json`). Machine load average when the report was written: {MachineLoad.Describe()}.");
        md.AppendLine("Absolute figures differ from the articles (one machine, emulated cloud services); the direction and rough size of each change are what to compare.").AppendLine();
        md.AppendLine("## Verdicts").AppendLine();
        foreach (var verdict in outcomes.SelectMany(o => o.Verdicts))
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"- {(verdict.NotJudgedBecause is not null ? "⏸️" : verdict.Passed ? "✅" : verdict.Required ? "❌" : "ℹ️")} **{verdict.StepId}** {verdict.Expectation} — {verdict.Measured}{(verdict.NotJudgedBecause is { } why ? $" (not judged: {why})" : string.Empty)}");
        }

        foreach (var bound in LabRunner.MachineBoundSteps(outcomes))
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"- ⚠️ **{bound.Step.Label} machine-bound** — {LabRunner.MachineBoundNote(bound)}");
        }

        foreach (var outcome in outcomes)
        {
            md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"## Scenario {outcome.Scenario.Id}: {outcome.Scenario.Title}").AppendLine();
            AppendScale(md, outcome);
            var ids = outcome.Steps.Select(s => s.Step.Id).ToList();
            md.AppendLine("| metric | " + string.Join(" | ", ids.Select(id => $"{id} article | {id} here")) + " |");
            md.AppendLine("|---|" + string.Concat(ids.Select(_ => "---|---|")));
            foreach (var row in outcome.Scenario.ArticleTable)
            {
                md.Append(CultureInfo.InvariantCulture, $"| {row.Metric} |");
                foreach (var step in outcome.Steps)
                {
                    var ours = outcome.Scenario.Measured(step).GetValueOrDefault(row.Metric, "");
                    md.Append(CultureInfo.InvariantCulture, $" {row.ByStep.GetValueOrDefault(step.Step.Id, "–")} | {ours} |");
                }

                md.AppendLine();
            }

            md.AppendLine();
            foreach (var chart in charts.Where(c => c.FileName.StartsWith(outcome.Scenario.Id + "-summary", StringComparison.Ordinal)))
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"![{chart.Title}](charts/{chart.FileName})");
            }

            foreach (var step in outcome.Steps)
            {
                md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"### {step.Step.Title}").AppendLine();
                md.AppendLine("```").AppendLine(step.Step.Header).AppendLine("```").AppendLine();
                var changes = step.Step.Overlay.Leaves().ToList();
                md.AppendLine(changes.Count == 0 ? "Settings: the chart defaults." : "Settings changed from the chart defaults: " + string.Join(", ", changes.Select(c => $"`{c.Path}` = `{c.Value}`")) + ".");
                md.AppendLine();
                AppendWhatIfChanges(md, step.Step);
                md.AppendLine(CultureInfo.InvariantCulture, $"Load: {step.Load.Totals.Requests:N0} requests in {step.Load.LoadDuration.TotalSeconds:0} s, {step.Throughput:0.0} successful/s, latency avg {step.AverageLatencyMs:0} ms, p50 {step.PercentileMs(50):0} ms, p99 {step.PercentileMs(99):0} ms, p99.9 {step.PercentileMs(99.9):0} ms, max {step.Load.RequestLatency.GetMaxValue() / 1000.0:0} ms; status: {string.Join(", ", step.Load.StatusCounts.OrderBy(s => s.Key, StringComparer.Ordinal).Select(s => $"{s.Key} × {s.Value:N0}"))}.");
                if (step.Load.Completion is { } completion && completion.Latency.TotalCount > 0)
                {
                    md.AppendLine(CultureInfo.InvariantCulture, $"End-to-end completion (202 → delivery scheduled): {completion.Latency.TotalCount:N0} followed, p50 {completion.Latency.GetValueAtPercentile(50) / 1000.0:0} ms, p99 {completion.Latency.GetValueAtPercentile(99) / 1000.0:0} ms.");
                }

                md.AppendLine(CultureInfo.InvariantCulture, $"Machine: {LabRunner.CpuLine(step)}; on average {step.SystemCpuAverageCores:0.00} cores.");
                if (step.EarlierAttemptReason is { } earlier)
                {
                    md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"> Measured twice: {earlier} (the first attempt's load files are in `load-earlier/`); these are the second attempt's figures.").AppendLine();
                }

                if (step.MachineBound)
                {
                    md.AppendLine().AppendLine("> **Machine-bound.** " + LabRunner.MachineBoundNote(step)).AppendLine();
                }

                if (step.Disturbed)
                {
                    md.AppendLine().AppendLine("> **Disturbed.** " + LabRunner.DisturbanceNote(step)).AppendLine();
                }

                if (step.Cosmos is { } c)
                {
                    md.AppendLine(CultureInfo.InvariantCulture, $"Cosmos DB ({c.Container}): {c.ThrottledRequests:N0} throttled requests, {c.RequestUnitsPerOperation:0.0} RU and {c.CallsPerOperation:0.0} calls per {GatewayScenarioOperation}, {c.Operations:N0} operations.");
                }

                if (step.Pipeline is { } p)
                {
                    md.AppendLine(CultureInfo.InvariantCulture, $"Service Bus: {p.Incoming:N0} incoming, {p.Outgoing:N0} outgoing deliveries, {p.Completed:N0} completed, {p.Abandoned:N0} abandoned, {p.DeadLettered:N0} dead-lettered, {p.LockLost:N0} lock-lost, {p.ActiveAtEnd:N0} left and {p.ScheduledAtEnd:N0} scheduled for a retry; peak {p.MaxCompletionsPerSecond:0.0} completions/s; Redis OOM errors: {p.RedisOutOfMemoryErrors:N0}.");
                }

                md.AppendLine();
                md.AppendLine("| component | CPU avg % | CPU max % | thread-pool queue max |").AppendLine("|---|---|---|---|");
                foreach (var cpu in step.Cpu)
                {
                    md.AppendLine(CultureInfo.InvariantCulture, $"| {cpu.Component} | {cpu.AveragePercent:0} | {cpu.MaxPercent:0} | {(step.ThreadPoolQueueMax.TryGetValue(cpu.Component, out var q) ? q.ToString("0", CultureInfo.InvariantCulture) : "–")} |");
                }

                AppendDiagnosis(md, step);

                md.AppendLine();
                foreach (var chart in charts.Where(ch => ch.FileName.StartsWith(step.Step.Id + "-", StringComparison.Ordinal)))
                {
                    md.AppendLine(CultureInfo.InvariantCulture, $"![{chart.Title}](charts/{chart.FileName})");
                }
            }

            AppendWhatIfs(md, outcome, charts);
            AppendPredictions(md, outcome);
        }

        return md.ToString();
    }

    private const string GatewayScenarioOperation = "GetDroneUtilization";

    /// <summary>The scale the scenario ran at, why, and what the probe measured.</summary>
    private static void AppendScale(StringBuilder md, ScenarioOutcome outcome)
    {
        if (outcome.Scale is not { } choice)
        {
            return;
        }

        md.AppendLine(CultureInfo.InvariantCulture, $"**Model scale {choice.Scale}.** {choice.Reason}.");
        if (choice.Probe is { } probe)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"Probe: {probe.Describe()}.");
        }

        if (choice.Scale.Value != 1)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"At scale {choice.Scale} the emulated cloud's rates (RU/s, the users' arrivals) are {choice.Scale} times the article's and its delays (injected latency, the users' patience) 1/{choice.Scale} times: a rate measured here ÷ {choice.Scale}, and a latency × {choice.Scale}, is the article-equivalent figure shown in brackets.");
        }

        md.AppendLine();
    }

    private static string Html(IReadOnlyList<ScenarioOutcome> outcomes, LabRunOptions options, IReadOnlyList<ChartSpec> charts)
    {
        static string E(string text) => WebUtility.HtmlEncode(text);
        var html = new StringBuilder();
        html.AppendLine("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Drone Delivery lab report</title>");
        html.AppendLine("<style>body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th:first-child,td:first-child{text-align:left}img{max-width:100%;border:1px solid #eee;margin:.5em 0}.pass{color:#2b8a3e}.fail{color:#c92a2a}.note{color:#666}pre{background:#f6f8fa;padding:.8em;white-space:pre-wrap}table.use td,caption{text-align:left}.diagnosis{background:#fff8e1;padding:.5em .8em;border-left:4px solid #e67700}</style></head><body>");
        html.AppendLine("<h1>Drone Delivery lab report</h1>");
        html.AppendLine(CultureInfo.InvariantCulture, $"<p>{E(options.Mode.ToString().ToLowerInvariant())} mode on {Environment.ProcessorCount} cores. Figures differ from the articles in size; compare directions.</p>");
        html.AppendLine("<h2>Verdicts</h2><ul>");
        foreach (var verdict in outcomes.SelectMany(o => o.Verdicts))
        {
            var css = verdict.NotJudgedBecause is not null ? "note" : verdict.Passed ? "pass" : verdict.Required ? "fail" : "note";
            var mark = verdict.NotJudgedBecause is not null ? "skip" : verdict.Passed ? "PASS" : verdict.Required ? "FAIL" : "note";
            html.AppendLine(CultureInfo.InvariantCulture, $"<li class=\"{css}\"><b>{mark} {E(verdict.StepId)}</b> {E(verdict.Expectation)} — {E(verdict.Measured)}{(verdict.NotJudgedBecause is { } why ? E($" (not judged: {why})") : string.Empty)}</li>");
        }

        foreach (var bound in LabRunner.MachineBoundSteps(outcomes))
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<li class=\"fail\"><b>machine-bound</b> {E(LabRunner.MachineBoundNote(bound))}</li>");
        }

        foreach (var disturbed in LabRunner.DisturbedSteps(outcomes))
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<li class=\"note\"><b>disturbed</b> {E(LabRunner.DisturbanceNote(disturbed))}</li>");
        }

        html.AppendLine("</ul>");
        foreach (var outcome in outcomes)
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<h2>Scenario {E(outcome.Scenario.Id)}: {E(outcome.Scenario.Title)}</h2>");
            if (outcome.Scale is { } choice)
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<p><b>Model scale {E(choice.Scale.ToString())}.</b> {E(choice.Reason)}{(choice.Probe is { } probe ? E($" Probe: {probe.Describe()}.") : string.Empty)}</p>");
            }

            html.AppendLine("<table><tr><th>metric</th>");
            foreach (var step in outcome.Steps)
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<th>{E(step.Step.Id)} article</th><th>{E(step.Step.Id)} here</th>");
            }

            html.AppendLine("</tr>");
            foreach (var row in outcome.Scenario.ArticleTable)
            {
                html.Append(CultureInfo.InvariantCulture, $"<tr><td>{E(row.Metric)}</td>");
                foreach (var step in outcome.Steps)
                {
                    html.Append(CultureInfo.InvariantCulture, $"<td>{E(row.ByStep.GetValueOrDefault(step.Step.Id, "–"))}</td><td>{E(outcome.Scenario.Measured(step).GetValueOrDefault(row.Metric, ""))}</td>");
                }

                html.AppendLine("</tr>");
            }

            html.AppendLine("</table>");
            foreach (var chart in charts.Where(c => c.FileName.StartsWith(outcome.Scenario.Id + "-summary", StringComparison.Ordinal)))
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<img src=\"charts/{E(chart.FileName)}\" alt=\"{E(chart.Title)}\">");
            }

            foreach (var step in outcome.Steps)
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<h3>{E(step.Step.Title)}</h3><pre>{E(step.Step.Header)}</pre>");
                html.AppendLine(CultureInfo.InvariantCulture, $"<p class=\"{(step.MachineBound ? "fail" : "note")}\">Machine: {E(LabRunner.CpuLine(step))}.</p>");
                AppendDiagnosisHtml(html, step);
                foreach (var chart in charts.Where(ch => ch.FileName.StartsWith(step.Step.Id + "-", StringComparison.Ordinal)))
                {
                    html.AppendLine(CultureInfo.InvariantCulture, $"<img src=\"charts/{E(chart.FileName)}\" alt=\"{E(chart.Title)}\">");
                }
            }

            AppendWhatIfsHtml(html, outcome, charts);
            AppendPredictionsHtml(html, outcome);
        }

        html.AppendLine("<p>Details: <a href=\"report.md\">report.md</a>, <a href=\"results.json\">results.json</a>, per-step load results under <code>steps/</code>, process logs under <code>system/</code>.</p></body></html>");
        return html.ToString();
    }

    private static object Summary(IReadOnlyList<ScenarioOutcome> outcomes, LabRunOptions options) => new
    {
        mode = options.Mode.ToString().ToLowerInvariant(),
        calibrationName = options.Calibration.Name,
        calibration = options.Calibration,
        loadAverage = MachineLoad.Describe(),
        scenarios = outcomes.Select(o => new
        {
            id = o.Scenario.Id,
            title = o.Scenario.Title,
            steps = o.Steps.Select(s => new
            {
                id = s.Step.Id,
                label = s.Step.Label,
                baseId = s.Step.BaseId,
                title = s.Step.Title,
                whatIf = s.Step.WhatIf is null ? null : new { arguments = s.Step.WhatIf.Arguments, changes = s.Step.WhatIfChanges },
                figures = StepFigures.Of(s),
                changes = s.Step.Overlay.Leaves().ToDictionary(l => l.Path, l => l.Value),
                throughput = s.Throughput,
                averageLatencyMs = s.AverageLatencyMs,
                p50Ms = s.PercentileMs(50),
                p99Ms = s.PercentileMs(99),
                successes = s.Load.Totals.Successes,
                errors = s.Load.Totals.Errors,
                cosmos = s.Cosmos is null ? null : new { s.Cosmos.Container, s.Cosmos.ThrottledRequests, s.Cosmos.Operations, s.Cosmos.RequestUnitsPerOperation, s.Cosmos.CallsPerOperation, s.Cosmos.ProvisionedPerPartition },
                pipeline = s.Pipeline is null ? null : new { s.Pipeline.Incoming, s.Pipeline.Outgoing, s.Pipeline.Completed, s.Pipeline.Abandoned, s.Pipeline.DeadLettered, s.Pipeline.LockLost, s.Pipeline.RedisOutOfMemoryErrors, s.Pipeline.ActiveAtEnd, s.Pipeline.ScheduledAtEnd, s.Pipeline.MaxCompletionsPerSecond, s.Pipeline.Redis },
                cpu = s.Cpu,
                threadPoolQueueMax = s.ThreadPoolQueueMax,
                longestStallSeconds = s.LongestStallSeconds,
                otherCores = s.OtherCores,
                earlierAttemptStallSeconds = s.EarlierAttemptStallSeconds,
                earlierAttemptReason = s.EarlierAttemptReason,
                scale = s.Scale,
                articleThroughput = s.ArticleThroughput,
                articleAverageLatencyMs = s.ArticleAverageLatencyMs,
                systemCpuPeakCores = s.SystemCpuPeakCores,
                systemCpuAverageCores = s.SystemCpuAverageCores,
                cpuBudgetCores = s.Budget?.LimitCores,
                machineBound = s.MachineBound,
                machineBoundReason = s.MachineBound ? s.MachineBoundReason : null,
                threadPoolSaturation = s.ThreadPoolSaturation,
                coreWaitShare = s.CoreWaitShare,
                hops = s.Hops,
                trace = s.Trace,
                diagnosis = Diagnosis.Diagnose(s),
                use = Diagnosis.UseTable(s),
            }),
            scale = o.Scale is null ? null : new
            {
                value = o.Scale.Scale.Value,
                reason = o.Scale.Reason,
                probe = o.Scale.Probe,
                latencyAboveModelMs = o.Scale.Probe?.LatencyAboveModelMs,
                predictedPeakCores = o.Scale.PredictedPeakCores,
                cpuBudgetCores = o.Scale.Budget?.LimitCores,
            },
            verdicts = o.Verdicts,
            models = o.Predictions,
        }),
    };
}
