using System.Globalization;
using System.Net;
using System.Text;
using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Reporting;

/// <summary>Each step's evidence and reasoning: where the time goes (hops), what limits the system (USE), and the diagnosis.</summary>
internal static partial class ReportWriter
{
    /// <summary>Median and 99th percentile of every hop, the critical path's marked.</summary>
    private static ChartSpec? HopChart(StepResult result) => result.Hops.Count == 0
        ? null
        : Charts.Bars(
            $"{result.Step.Id}-hops.svg",
            $"{result.Step.Id}: where the time goes — duration per hop (ms; * the critical path)",
            [.. result.Hops.Select(HopLabel)],
            [("p50", [.. result.Hops.Select(h => (double?)h.P50Ms)]), ("p99", [.. result.Hops.Select(h => (double?)h.P99Ms)])],
            "ms");

    private static string TraceLink(StepResult step) => $"steps/{step.Step.Id}/{Scenarios.LabRunner.TraceFileName}";

    private static string ProfileLink(StepResult step) => $"steps/{step.Step.Id}/{Scenarios.LabRunner.ProfileFileName}";

    private static string HopLabel(Hop hop) => (hop.OnCriticalPath ? "* " : string.Empty) + hop.Name;

    private static void AppendDiagnosis(StringBuilder md, StepResult step)
    {
        var finding = Diagnosis.Diagnose(step);
        md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"**Diagnosis** ({finding.Rule}): {finding.Sentence}.").AppendLine();
        if (step.Hops.Count > 0)
        {
            md.AppendLine("Where the time goes (the services' own metrics; * marks the critical path):").AppendLine();
            md.AppendLine("| hop | calls/s | p50 ms | p99 ms | errors | retries |").AppendLine("|---|---|---|---|---|---|");
            foreach (var hop in step.Hops)
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"| {HopLabel(hop)} | {hop.CallsPerSecond:0.0} | {hop.P50Ms:0.0} | {hop.P99Ms:0.0} | {hop.Errors:N0} | {hop.Retries:N0} |");
            }

            md.AppendLine();
        }

        if (step.Trace is { } trace)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"A representative slow request: {trace.DurationMs:0} ms, {trace.Spans} spans{(trace.Throttled > 0 ? $", {trace.Throttled} throttled Cosmos DB calls" : string.Empty)} (the 90th percentile of {trace.Traced} traced; trace `{trace.TraceId}`).").AppendLine();
            md.AppendLine(CultureInfo.InvariantCulture, $"![waterfall of a request]({TraceLink(step)})").AppendLine();
        }

        if (step.Profile is { } profile)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"Where the CPU goes: {profile.Component} (pid {profile.ProcessId}), the busiest process, {profile.Samples:N0} samples.").AppendLine();
            md.AppendLine(CultureInfo.InvariantCulture, $"![CPU profile of {profile.Component}]({ProfileLink(step)})").AppendLine();
            md.AppendLine("```").AppendLine(profile.TopFrames.TrimEnd()).AppendLine("```").AppendLine();
        }

        md.AppendLine("What limits it (utilisation, saturation, errors):").AppendLine();
        md.AppendLine("| resource | utilisation | saturation | errors |").AppendLine("|---|---|---|---|");
        foreach (var row in Diagnosis.UseTable(step))
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"| {row.Resource} | {row.Utilisation} | {row.Saturation} | {row.Errors} |");
        }
    }

    private static void AppendDiagnosisHtml(StringBuilder html, StepResult step)
    {
        static string E(string text) => WebUtility.HtmlEncode(text);
        var finding = Diagnosis.Diagnose(step);
        html.AppendLine(CultureInfo.InvariantCulture, $"<p class=\"diagnosis\"><b>Diagnosis</b> ({E(finding.Rule)}): {E(finding.Sentence.Replace("`", string.Empty, StringComparison.Ordinal))}.</p>");
        if (step.Hops.Count > 0)
        {
            html.AppendLine("<table class=\"hops\"><caption>Where the time goes (* the critical path)</caption><tr><th>hop</th><th>calls/s</th><th>p50 ms</th><th>p99 ms</th><th>errors</th><th>retries</th></tr>");
            foreach (var hop in step.Hops)
            {
                html.AppendLine(CultureInfo.InvariantCulture, $"<tr><td>{E(HopLabel(hop))}</td><td>{hop.CallsPerSecond:0.0}</td><td>{hop.P50Ms:0.0}</td><td>{hop.P99Ms:0.0}</td><td>{hop.Errors:N0}</td><td>{hop.Retries:N0}</td></tr>");
            }

            html.AppendLine("</table>");
        }

        if (step.Trace is { } trace)
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<p>A representative slow request: {trace.DurationMs:0} ms, {trace.Spans} spans (the 90th percentile of {trace.Traced} traced).</p><img src=\"{E(TraceLink(step))}\" alt=\"waterfall of a request\">");
        }

        if (step.Profile is { } profile)
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<p>Where the CPU goes: {E(profile.Component)} (pid {profile.ProcessId}), the busiest process, {profile.Samples:N0} samples.</p><img src=\"{E(ProfileLink(step))}\" alt=\"CPU profile of {E(profile.Component)}\"><pre>{E(profile.TopFrames.TrimEnd())}</pre>");
        }

        html.AppendLine("<table class=\"use\"><caption>What limits it</caption><tr><th>resource</th><th>utilisation</th><th>saturation</th><th>errors</th></tr>");
        foreach (var row in Diagnosis.UseTable(step))
        {
            html.AppendLine(CultureInfo.InvariantCulture, $"<tr><td>{E(row.Resource)}</td><td>{E(row.Utilisation)}</td><td>{E(row.Saturation)}</td><td>{E(row.Errors)}</td></tr>");
        }

        html.AppendLine("</table>");
    }
}
