using System.Globalization;
using System.Net;
using System.Text;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Reporting;

/// <summary>One figure of two measurements side by side: a, b, b − a and b ÷ a (null where a side lacks it).</summary>
internal sealed record ComparisonRow(string Name, string Unit, double? A, double? B)
{
    public double? Delta => A is { } a && B is { } b ? b - a : null;

    public double? Ratio => A is { } a && B is { } b && a != 0 ? b / a : null;

    public string[] Cells() =>
    [
        Name,
        Unit,
        A is { } a ? Figure.Format(a) : "–",
        B is { } b ? Figure.Format(b) : "–",
        Delta is { } d ? (d > 0 ? "+" : string.Empty) + Figure.Format(d) : "–",
        Ratio is { } r ? r.ToString("0.00", CultureInfo.InvariantCulture) + "×" : "–",
    ];
}

/// <summary>
/// Two measurements of a step side by side — a what-if beside the step it starts from, or one run
/// beside another — as tables (markdown, HTML, console) and overlaid time-series charts.
/// </summary>
internal static class Comparison
{
    /// <summary>The series overlaid, in this order, when either side has them.</summary>
    private static readonly string[] OverlaidSeries =
        ["successful requests/s", "failed requests/s", "p99 latency (ms)", "incoming messages/s", "outgoing deliveries/s", "completions per 5 s", "dead-lettered/s", "Cosmos DB 429s/s"];

    public static IReadOnlyList<ComparisonRow> Rows(IReadOnlyList<Figure> a, IReadOnlyList<Figure> b)
    {
        var names = a.Select(f => f.Name).Concat(b.Select(f => f.Name)).Distinct(StringComparer.Ordinal);
        return [.. names.Select(name =>
        {
            var left = a.FirstOrDefault(f => f.Name == name);
            var right = b.FirstOrDefault(f => f.Name == name);
            return new ComparisonRow(name, (left ?? right)!.Unit, left?.Value, right?.Value);
        })];
    }

    public static string Markdown(IReadOnlyList<ComparisonRow> rows, string a, string b)
    {
        var md = new StringBuilder();
        md.AppendLine(CultureInfo.InvariantCulture, $"| figure | unit | {a} | {b} | delta | ratio |").AppendLine("|---|---|---|---|---|---|");
        foreach (var row in rows)
        {
            md.AppendLine("| " + string.Join(" | ", row.Cells()) + " |");
        }

        return md.ToString();
    }

    public static string Html(IReadOnlyList<ComparisonRow> rows, string a, string b)
    {
        static string E(string text) => WebUtility.HtmlEncode(text);
        var html = new StringBuilder();
        html.Append(CultureInfo.InvariantCulture, $"<table><tr><th>figure</th><th>unit</th><th>{E(a)}</th><th>{E(b)}</th><th>delta</th><th>ratio</th></tr>");
        foreach (var row in rows)
        {
            html.Append("<tr>").Append(string.Concat(row.Cells().Select(c => $"<td>{E(c)}</td>"))).Append("</tr>");
        }

        return html.AppendLine("</table>").ToString();
    }

    public static string ConsoleTable(IReadOnlyList<ComparisonRow> rows, string a, string b)
    {
        var table = new List<string[]> { new[] { "figure", "unit", a, b, "delta", "ratio" } };
        table.AddRange(rows.Select(r => r.Cells()));
        var widths = Enumerable.Range(0, 6).Select(i => table.Max(r => r[i].Length)).ToArray();
        var text = new StringBuilder();
        foreach (var row in table)
        {
            text.Append("  ").Append(row[0].PadRight(widths[0])).Append("  ").Append(row[1].PadRight(widths[1]));
            for (var i = 2; i < 6; i++)
            {
                text.Append("  ").Append(row[i].PadLeft(widths[i]));
            }

            text.AppendLine();
        }

        return text.ToString();
    }

    /// <summary>One chart per series either side has, each side's line over the other's (b dashed), seconds since the load started.</summary>
    public static IEnumerable<ChartSpec> OverlayCharts(string filePrefix, string title, (string Label, StepSeries Series) a, (string Label, StepSeries Series) b)
    {
        var cpu = a.Series.Items.Concat(b.Series.Items)
            .Where(s => s.Name.StartsWith("CPU ", StringComparison.Ordinal) && s.Points.Count > 0)
            .GroupBy(s => s.Name)
            .OrderByDescending(g => g.Max(s => s.Points.Average(p => p.Value)))
            .Select(g => g.Key)
            .Take(2);
        foreach (var name in OverlaidSeries.Concat(cpu))
        {
            var left = a.Series[name];
            var right = b.Series[name];
            if ((left?.Points ?? []).Concat(right?.Points ?? []).All(p => p.Value == 0))
            {
                continue;
            }

            List<Line> lines = [];
            if (left is not null)
            {
                lines.Add(new Line(left with { Name = a.Label }, Step: name.Contains("per 5 s", StringComparison.Ordinal)));
            }

            if (right is not null)
            {
                lines.Add(new Line(right with { Name = b.Label }, Dashed: true, Step: name.Contains("per 5 s", StringComparison.Ordinal)));
            }

            yield return Charts.TimeSeries($"{filePrefix}-{Slug(name)}.svg", $"{title}: {name}", lines, name);
        }
    }

    /// <summary>A name fit for a file: letters and digits, the rest dashes.</summary>
    public static string Slug(string name) =>
        string.Join('-', new string([.. name.ToLowerInvariant().Select(c => char.IsAsciiLetterOrDigit(c) ? c : ' ')]).Split(' ', StringSplitOptions.RemoveEmptyEntries));
}

/// <summary>The what-if steps of a run, each with the step it starts from.</summary>
internal static class WhatIfReport
{
    public static IEnumerable<(StepResult WhatIf, StepResult Baseline)> Pairs(IEnumerable<ScenarioOutcome> outcomes) =>
        outcomes.SelectMany(o => Pairs(o.Steps));

    public static IEnumerable<(StepResult WhatIf, StepResult Baseline)> Pairs(IReadOnlyList<StepResult> steps) =>
        steps.Where(s => s.Step.WhatIf is not null)
            .Select(w => (w, steps.FirstOrDefault(s => s.Step.WhatIf is null && s.Step.Id == w.Step.BaseId)))
            .Where(p => p.Item2 is not null)
            .Select(p => (p.w, p.Item2!));

    /// <summary>The file-name prefix of a what-if's overlay charts.</summary>
    public static string ChartPrefix(StepResult whatIf) => $"whatif-{whatIf.Step.BaseId}";

    public static IEnumerable<ChartSpec> Charts(StepResult whatIf, StepResult baseline) =>
        Comparison.OverlayCharts(ChartPrefix(whatIf), $"{whatIf.Step.Label} vs {baseline.Step.Label}", (baseline.Step.Label, StepSeries.Of(baseline)), (whatIf.Step.Label, StepSeries.Of(whatIf)));
}
