using System.CommandLine;
using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Reporting;

/// <summary>One lab report as a comparison reads it: its directory and its steps' figures from <c>results.json</c>.</summary>
internal sealed record LabReport(string Directory, string Mode, IReadOnlyList<LabReport.StepFiguresOf> Steps)
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web);

    /// <summary>A step of the report: id, label, every figure, and its diagnosis (rule and sentence) when the report has one.</summary>
    internal sealed record StepFiguresOf(string Id, string Label, IReadOnlyList<Figure> Figures, string? Diagnosis = null);

    /// <summary>Reads a report from its directory or its <c>results.json</c>.</summary>
    /// <exception cref="InvalidDataException">The path is not a lab report (named in the message, with what is missing).</exception>
    public static LabReport Read(string path)
    {
        var file = File.Exists(path) ? path : Path.Combine(path, "results.json");
        if (!File.Exists(file))
        {
            throw new InvalidDataException($"'{path}' is not a lab report: it has no results.json (give the directory a `run` wrote, e.g. artifacts/lab/<timestamp>).");
        }

        Results? results;
        try
        {
            results = JsonSerializer.Deserialize<Results>(File.ReadAllText(file), Json);
        }
        catch (JsonException e)
        {
            throw new InvalidDataException($"'{file}' is not a lab report: not the JSON a `run` writes ({e.Message}).", e);
        }

        var steps = (results?.Scenarios ?? []).SelectMany(s => s.Steps ?? []).ToList();
        if (results?.Mode is null || steps.Count == 0)
        {
            throw new InvalidDataException($"'{file}' is not a lab report: it lists no measured steps.");
        }

        if (steps.FirstOrDefault(s => s.Figures is null or { Count: 0 }) is { } old)
        {
            throw new InvalidDataException($"'{file}' has no figures for step {old.Id}: it was written by an older lab, which the comparison cannot read; run the steps again.");
        }

        return new LabReport(Path.GetDirectoryName(Path.GetFullPath(file))!, results.Mode, [.. steps.Select(s => new StepFiguresOf(s.Id, s.Label ?? s.Id, s.Figures!, s.Diagnosis is { Rule: { } rule, Sentence: { } sentence } ? $"{rule}: {sentence}" : null))]);
    }

    public StepSeries Series(string stepId) => StepSeries.Read(Path.Combine(Directory, "steps", stepId));

    private sealed record Results(string? Mode, List<ScenarioJson>? Scenarios);

    private sealed record ScenarioJson(string? Id, List<StepJson>? Steps);

    private sealed record StepJson(string Id, string? Label, List<Figure>? Figures, DiagnosisJson? Diagnosis);

    private sealed record DiagnosisJson(string? Rule, string? Sentence);
}

/// <summary>
/// <c>compare &lt;a&gt; &lt;b&gt;</c>: two runs side by side, step by step (a = before, b = after a change of
/// code or settings): every figure with a, b, b − a and b ÷ a, and each step's series overlaid. Writes
/// <c>comparison.md</c>, <c>index.html</c> and the charts, and prints the tables.
/// </summary>
internal static class ComparisonReport
{
    public static Command Command(Option<string?> output, Func<string> defaultOutput)
    {
        var a = new Argument<string>("a") { Description = "The first report (before): a directory a `run` wrote, or its results.json." };
        var b = new Argument<string>("b") { Description = "The second report (after)." };
        var command = new Command("compare", "Compare two lab reports step by step: every figure with its delta and ratio, and overlaid charts.") { a, b, output };
        command.SetAction(async (parse, cancellationToken) =>
        {
            LabReport first, second;
            try
            {
                first = LabReport.Read(parse.GetValue(a)!);
                second = LabReport.Read(parse.GetValue(b)!);
            }
            catch (InvalidDataException e)
            {
                Console.Error.WriteLine(e.Message);
                return 2;
            }

            var directory = parse.GetValue(output) ?? defaultOutput();
            return await LabCommands.ExitCodeAsync("comparison", async () =>
            {
                Console.Write(await WriteAsync(first, second, directory, cancellationToken).ConfigureAwait(false));
                Console.WriteLine();
                Console.WriteLine($"Comparison: {Path.Combine(directory, "index.html")}");
                return 0;
            }, cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    /// <summary>Writes the comparison into <paramref name="directory"/> and returns the console's tables.</summary>
    public static async Task<string> WriteAsync(LabReport a, LabReport b, string directory, CancellationToken cancellationToken)
    {
        Directory.CreateDirectory(directory);
        var common = a.Steps.Where(s => b.Steps.Any(o => o.Id == s.Id)).ToList();
        var charts = common.SelectMany(step => Comparison.OverlayCharts(
            $"compare-{Comparison.Slug(step.Id)}", $"{step.Label}: a vs b", ($"a: {step.Label}", a.Series(step.Id)), ($"b: {step.Label}", b.Series(step.Id)))).ToList();
        await ChartRenderer.RenderAsync(charts, Path.Combine(directory, "charts"), cancellationToken).ConfigureAwait(false);

        var md = new StringBuilder("# Comparison of two lab runs\n\n");
        var html = new StringBuilder("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Drone Delivery lab comparison</title>");
        html.AppendLine("<style>body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th:first-child,td:first-child,td:nth-child(2){text-align:left}img{max-width:100%;border:1px solid #eee;margin:.5em 0}</style></head><body>");
        html.AppendLine("<h1>Comparison of two lab runs</h1>");
        var console = new StringBuilder();
        foreach (var (label, report) in new[] { ("a", a), ("b", b) })
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"- **{label}**: `{report.Directory}` ({report.Mode} mode; steps {string.Join(", ", report.Steps.Select(s => s.Label))})");
            html.AppendLine(CultureInfo.InvariantCulture, $"<p><b>{label}</b>: <code>{WebUtility.HtmlEncode(report.Directory)}</code> ({report.Mode} mode)</p>");
        }

        md.AppendLine().AppendLine("Delta = b − a; ratio = b ÷ a.");
        foreach (var step in common)
        {
            var rows = Comparison.Rows(step.Figures, b.Steps.Single(s => s.Id == step.Id).Figures);
            md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"## {step.Label}").AppendLine().Append(Comparison.Markdown(rows, "a", "b")).AppendLine();
            html.AppendLine(CultureInfo.InvariantCulture, $"<h2>{WebUtility.HtmlEncode(step.Label)}</h2>").Append(Comparison.Html(rows, "a", "b"));
            console.AppendLine(CultureInfo.InvariantCulture, $"{step.Label}:").Append(Comparison.ConsoleTable(rows, "a", "b")).AppendLine();
            foreach (var (label, diagnosis) in new[] { ("a", step.Diagnosis), ("b", b.Steps.Single(s => s.Id == step.Id).Diagnosis) }.Where(d => d.Item2 is not null))
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"Diagnosis {label}: {diagnosis}").AppendLine();
                html.AppendLine(CultureInfo.InvariantCulture, $"<p><b>Diagnosis {label}</b>: {WebUtility.HtmlEncode(diagnosis!.Replace("`", string.Empty, StringComparison.Ordinal))}</p>");
                console.AppendLine(CultureInfo.InvariantCulture, $"Diagnosis {label}: {diagnosis}");
            }

            foreach (var chart in charts.Where(c => c.FileName.StartsWith($"compare-{Comparison.Slug(step.Id)}-", StringComparison.Ordinal)))
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"![{chart.Title}](charts/{chart.FileName})");
                html.AppendLine(CultureInfo.InvariantCulture, $"<img src=\"charts/{WebUtility.HtmlEncode(chart.FileName)}\" alt=\"{WebUtility.HtmlEncode(chart.Title)}\">");
            }
        }

        foreach (var (label, only) in new[] { ("a", a.Steps.Where(s => !b.Steps.Any(o => o.Id == s.Id))), ("b", b.Steps.Where(s => !a.Steps.Any(o => o.Id == s.Id))) })
        {
            if (only.Any())
            {
                var line = $"Only in {label}: {string.Join(", ", only.Select(s => s.Label))}.";
                md.AppendLine().AppendLine(line);
                html.AppendLine(CultureInfo.InvariantCulture, $"<p>{WebUtility.HtmlEncode(line)}</p>");
                console.AppendLine(line);
            }
        }

        if (common.Count == 0)
        {
            console.AppendLine("The two reports have no step in common.");
        }

        html.AppendLine("</body></html>");
        await File.WriteAllTextAsync(Path.Combine(directory, "comparison.md"), md.ToString(), cancellationToken).ConfigureAwait(false);
        await File.WriteAllTextAsync(Path.Combine(directory, "index.html"), html.ToString(), cancellationToken).ConfigureAwait(false);
        return console.ToString();
    }
}
