using System.Globalization;
using System.Text;
using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.LoadDriver.Cli;

/// <summary>The plain-text summary printed at the end of a run.</summary>
internal static class Summary
{
    public static string Format(LoadReport report)
    {
        var t = report.Totals;
        var text = new StringBuilder();
        Line(text, $"stopped: {report.StopReason} after {report.LoadSeconds:0.0} s of load ({report.TotalSeconds:0.0} s with draining)");
        var unsent = t.Unsent > 0 ? $", {t.Unsent} never sent (in-flight limit)" : "";
        Line(text, $"requests: {t.Sent} sent, {t.Requests} finished, {t.Successes} ok, {t.Errors} errors ({t.Timeouts} timeouts, {t.ConnectionErrors} connection errors), {t.Cancelled} cancelled{unsent}");
        Line(text, $"throughput: {t.SuccessesPerSecond:0.0} ok/s, {t.RequestsPerSecond:0.0} req/s");
        Line(text, $"status: {string.Join(", ", report.StatusCounts.Select(kv => $"{kv.Key}={kv.Value}"))}");
        Line(text, $"latency (ms): {Percentiles(report.Latency)}");
        if (report.SendLag is { } lag)
        {
            Line(text, $"send lag (ms): {Percentiles(lag)}");
        }

        if (report.Completion is { } completion)
        {
            var c = completion.Counts;
            Line(text, $"completion: {c.Tracked} followed, {c.Completed} completed, {c.TimedOut} timed out, {c.Abandoned} abandoned, {c.Untracked} untracked, {c.Rejected} rejected; {c.PollRequests} polls, {c.PollErrors} poll errors");
            Line(text, $"completion latency (ms): {Percentiles(completion.Latency)}");
        }

        foreach (var sample in report.ErrorSamples)
        {
            Line(text, $"error sample: {sample}");
        }

        return text.ToString();
    }

    private static string Percentiles(LatencyReport l) =>
        l.Count == 0
            ? "no samples"
            : $"p50 {l.P50Ms:0.###}  p90 {l.P90Ms:0.###}  p99 {l.P99Ms:0.###}  p99.9 {l.P999Ms:0.###}  p99.99 {l.P9999Ms:0.###}  max {l.MaxMs:0.###}  mean {l.MeanMs:0.###}  (n={l.Count})";

    private static void Line(StringBuilder text, FormattableString line) =>
        text.Append(line.ToString(CultureInfo.InvariantCulture)).Append('\n');
}
