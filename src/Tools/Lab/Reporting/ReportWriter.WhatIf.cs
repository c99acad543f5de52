using System.Globalization;
using System.Net;
using System.Text;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Reporting;

/// <summary>The report's what-if sections (each beside the step it starts from), its models, and the series files a comparison reads.</summary>
internal static partial class ReportWriter
{
    /// <summary>Each step's system series in <c>steps/&lt;id&gt;/metrics.json</c>, beside the load driver's files.</summary>
    private static void WriteStepSeries(IReadOnlyList<ScenarioOutcome> outcomes, string directory)
    {
        foreach (var step in outcomes.SelectMany(o => o.Steps))
        {
            StepSeries.WriteSystem(step, Path.Combine(directory, "steps", step.Step.Id));
        }
    }

    private static IEnumerable<ChartSpec> WhatIfCharts(ScenarioOutcome outcome) =>
        WhatIfReport.Pairs(outcome.Steps).SelectMany(pair => WhatIfReport.Charts(pair.WhatIf, pair.Baseline));

    private static void AppendWhatIfChanges(StringBuilder md, Step step)
    {
        if (step.WhatIf is null)
        {
            return;
        }

        var changes = string.Join(", ", step.WhatIfChanges.Select(c => $"`{c.Path}` {c.Before ?? "unset"} → {c.After ?? "unset"}"));
        md.AppendLine(CultureInfo.InvariantCulture, $"What-if ({step.WhatIf.Arguments}), changed from {step.BaseId}: {changes}.");
        md.AppendLine();
    }

    private static void AppendWhatIfs(StringBuilder md, ScenarioOutcome outcome, IReadOnlyList<ChartSpec> charts)
    {
        foreach (var (whatIf, baseline) in WhatIfReport.Pairs(outcome.Steps))
        {
            md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"### {whatIf.Step.Label} beside {baseline.Step.Label}").AppendLine();
            md.AppendLine(CultureInfo.InvariantCulture, $"`{whatIf.Step.WhatIf!.Arguments}` over step {baseline.Step.Id}. Settings as changed:").AppendLine();
            md.AppendLine("| value | " + baseline.Step.Label + " | " + whatIf.Step.Label + " |").AppendLine("|---|---|---|");
            foreach (var change in whatIf.Step.WhatIfChanges)
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"| `{change.Path}` | {change.Before ?? "unset"} | {change.After ?? "unset"} |");
            }

            md.AppendLine().AppendLine("Every figure, the what-if's beside the step's (delta = what-if − step, ratio = what-if ÷ step):").AppendLine();
            md.Append(Comparison.Markdown(Comparison.Rows(StepFigures.Of(baseline), StepFigures.Of(whatIf)), baseline.Step.Label, whatIf.Step.Label));
            md.AppendLine();
            foreach (var verdict in outcome.Verdicts.Where(v => v.StepId == whatIf.Step.Label))
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"- {(verdict.Passed ? "✅" : "✖️")} {verdict.Expectation} — {verdict.Measured}");
            }

            md.AppendLine();
            foreach (var chart in charts.Where(c => c.FileName.StartsWith(WhatIfReport.ChartPrefix(whatIf) + "-", StringComparison.Ordinal)))
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"![{chart.Title}](charts/{chart.FileName})");
            }
        }
    }

    private static void AppendWhatIfsHtml(StringBuilder html, ScenarioOutcome outcome, IReadOnlyList<ChartSpec> charts)
    {
        static string E(string text) => WebUtility.HtmlEncode(text);
        foreach (var (whatIf, baseline) in WhatIfReport.Pairs(outcome.Steps))
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<h3>{E(whatIf.Step.Label)} beside {E(baseline.Step.Label)}</h3><p><code>{E(whatIf.Step.WhatIf!.Arguments)}</code> over step {E(baseline.Step.Id)}. Settings as changed:</p>");
            html.Append(CultureInfo.InvariantCulture, $"<table><tr><th>value</th><th>{E(baseline.Step.Label)}</th><th>{E(whatIf.Step.Label)}</th></tr>");
            foreach (var change in whatIf.Step.WhatIfChanges)
            {
                html.Append(CultureInfo.InvariantCulture, $"<tr><td><code>{E(change.Path)}</code></td><td>{E(change.Before ?? "unset")}</td><td>{E(change.After ?? "unset")}</td></tr>");
            }

            html.AppendLine("</table>");
            html.Append(Comparison.Html(Comparison.Rows(StepFigures.Of(baseline), StepFigures.Of(whatIf)), baseline.Step.Label, whatIf.Step.Label));
            html.AppendLine("<ul>");
            foreach (var verdict in outcome.Verdicts.Where(v => v.StepId == whatIf.Step.Label))
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<li class=\"{(verdict.Passed ? "pass" : "note")}\">{(verdict.Passed ? "PASS" : "not met")} {E(verdict.Expectation)} — {E(verdict.Measured)}</li>");
            }

            html.AppendLine("</ul>");
            foreach (var chart in charts.Where(c => c.FileName.StartsWith(WhatIfReport.ChartPrefix(whatIf) + "-", StringComparison.Ordinal)))
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<img src=\"charts/{E(chart.FileName)}\" alt=\"{E(chart.Title)}\">");
            }
        }
    }

    private static void AppendPredictions(StringBuilder md, ScenarioOutcome outcome)
    {
        foreach (var prediction in outcome.Predictions)
        {
            md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"### Model, not a measurement: {prediction.StepId} on the case study's cluster").AppendLine();
            md.AppendLine(CultureInfo.InvariantCulture, $"| | {prediction.Quantity} |").AppendLine("|---|---|");
            md.AppendLine(CultureInfo.InvariantCulture, $"| **model** (the case study's cluster) | **{prediction.Predicted:0.0}** — bound by {prediction.Binding.Name} |");
            md.AppendLine(CultureInfo.InvariantCulture, $"| measured on this machine | {(prediction.Measured is { } m ? m.ToString("0.0", CultureInfo.InvariantCulture) : "not run")} |").AppendLine();
            md.AppendLine("| limit | completions/s | from |").AppendLine("|---|---|---|");
            foreach (var limit in prediction.Limits.OrderBy(l => l.Rate))
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"| {limit.Name} | {limit.Rate:0.0} | {limit.How} |");
            }

            md.AppendLine().AppendLine("Inputs:").AppendLine();
            foreach (var input in prediction.Inputs)
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"- {input.Name}: {input.Value}");
            }
        }
    }

    private static void AppendPredictionsHtml(StringBuilder html, ScenarioOutcome outcome)
    {
        static string E(string text) => WebUtility.HtmlEncode(text);
        foreach (var prediction in outcome.Predictions)
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<h3>Model, not a measurement: {E(prediction.StepId)} on the case study's cluster</h3>");
            html.AppendLine(CultureInfo.InvariantCulture, $"<table><tr><th></th><th>{E(prediction.Quantity)}</th></tr><tr><td><b>model</b> (the case study's cluster)</td><td><b>{prediction.Predicted:0.0}</b> — bound by {E(prediction.Binding.Name)}</td></tr><tr><td>measured on this machine</td><td>{(prediction.Measured is { } m ? m.ToString("0.0", CultureInfo.InvariantCulture) : "not run")}</td></tr></table>");
            html.Append("<table><tr><th>limit</th><th>completions/s</th><th>from</th></tr>");
            foreach (var limit in prediction.Limits.OrderBy(l => l.Rate))
            {
                html.Append(CultureInfo.InvariantCulture, $"<tr><td>{E(limit.Name)}</td><td>{limit.Rate:0.0}</td><td>{E(limit.How)}</td></tr>");
            }

            html.AppendLine("</table><ul>");
            foreach (var input in prediction.Inputs)
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<li>{E(input.Name)}: {E(input.Value)}</li>");
            }

            html.AppendLine("</ul>");
        }
    }
}
