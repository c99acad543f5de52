using System.Globalization;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.Lab.Chaos;

/// <summary>Everything a chaos run reports.</summary>
internal sealed record ChaosReport(
    ChaosSettings Settings,
    string StepId,
    DateTimeOffset LoadStart,
    DateTimeOffset LoadEnd,
    DateTimeOffset ObservedUntil,
    LoadTestResult Load,
    ChaosFigures Figures,
    IReadOnlyList<FaultRecord> Faults,
    IReadOnlyDictionary<string, long> Injected,
    IReadOnlyList<ChaosVerdict> Verdicts,
    double WallSeconds);

/// <summary>Writes a chaos run's <c>chaos.json</c> (for tests and tools) and <c>chaos.md</c> (for people).</summary>
internal static class ChaosReportWriter
{
    public static async Task<(string Markdown, string Json)> WriteAsync(ChaosReport report, string directory, CancellationToken cancellationToken)
    {
        Directory.CreateDirectory(directory);
        var json = Path.Combine(directory, "chaos.json");
        var markdown = Path.Combine(directory, "chaos.md");
        await File.WriteAllTextAsync(json, Json(report).ToJsonString(new JsonSerializerOptions { WriteIndented = true }), cancellationToken).ConfigureAwait(false);
        await File.WriteAllTextAsync(markdown, Markdown(report), cancellationToken).ConfigureAwait(false);
        return (markdown, json);
    }

    internal static JsonObject Json(ChaosReport report)
    {
        var f = report.Figures;
        return new JsonObject
        {
            ["mode"] = report.Settings.Mode,
            ["step"] = report.StepId,
            ["ratePerSecond"] = report.Settings.Rate,
            ["loadSeconds"] = (report.LoadEnd - report.LoadStart).TotalSeconds,
            ["wallSeconds"] = Math.Round(report.WallSeconds),
            ["accepted"] = f.Accepted,
            ["unanswered"] = f.Unanswered,
            ["completed"] = f.Completed,
            ["deadLettered"] = Object(f.DeadLettered.ToDictionary(d => d.Key, d => (long)d.Value)),
            ["lost"] = f.Lost,
            ["unaccounted"] = f.Unaccounted,
            ["duplicated"] = f.DuplicatedTotal,
            ["duplicatedByKind"] = Object(f.Duplicated.ToDictionary(d => d.Key, d => (long)d.Value)),
            ["halfDone"] = f.HalfDone.Count,
            ["halfDoneExamples"] = new JsonArray([.. f.HalfDone.Take(20).Select(h => (JsonNode)JsonValue.Create(h))]),
            ["transientDeadLetters"] = f.TransientDeadLetters,
            ["preFaultCompletionsPerSecond"] = Math.Round(f.PreFaultRate, 2),
            ["replicasKilled"] = report.Faults.Sum(x => x.ReplicasKilled),
            ["redisRestarts"] = report.Faults.Count(x => x.Kind == FaultKind.RestartRedis),
            ["injectedFaults"] = Object(report.Injected),
            ["faults"] = new JsonArray([.. f.Recoveries.Select(r => (JsonNode)new JsonObject
            {
                ["kind"] = r.Fault.Kind.ToString(),
                ["startedSeconds"] = Math.Round(r.Fault.Started.TotalSeconds, 1),
                ["endedSeconds"] = Math.Round(r.Fault.Ended.TotalSeconds, 1),
                ["target"] = r.Fault.Target,
                ["replicasKilled"] = r.Fault.ReplicasKilled,
                ["recoverySeconds"] = r.Seconds,
            })]),
            ["verdicts"] = new JsonArray([.. report.Verdicts.Select(v => (JsonNode)new JsonObject { ["check"] = v.Check, ["passed"] = v.Passed, ["measured"] = v.Measured })]),
            ["passed"] = report.Verdicts.All(v => v.Passed),
        };
    }

    internal static string Markdown(ChaosReport report)
    {
        var f = report.Figures;
        var plan = report.Settings.Plan;
        var md = new StringBuilder();
        md.AppendLine(CultureInfo.InvariantCulture, $"# Chaos run: {report.StepId} ({report.Settings.Mode})").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture,
            $"{report.Settings.Rate:0.#} delivery requests/s for {(report.LoadEnd - report.LoadStart).TotalSeconds:0} s on {report.StepId}'s configuration (replicas ÷ {report.Settings.ReplicaDivisor}); " +
            $"a Workflow or backend replica killed every {plan.KillEvery.TotalSeconds:0} s, each other fault once for {plan.FaultWindow.TotalSeconds:0} s, replacements after {plan.RestartDelay.TotalSeconds:0} s. " +
            $"Run took {report.WallSeconds:0} s.").AppendLine();
        md.AppendLine("## Verdicts").AppendLine().AppendLine("| | check | measured |").AppendLine("|---|---|---|");
        foreach (var verdict in report.Verdicts)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"| {(verdict.Passed ? "PASS" : "FAIL")} | {verdict.Check} | {Cell(verdict.Measured)} |");
        }

        md.AppendLine().AppendLine("## Outcome of every accepted request (from the stores)").AppendLine().AppendLine("| | count |").AppendLine("|---|---|");
        md.AppendLine(CultureInfo.InvariantCulture, $"| accepted (202) | {f.Accepted} |");
        md.AppendLine(CultureInfo.InvariantCulture, $"| no answer (time-out, connection error) | {f.Unanswered} |");
        md.AppendLine(CultureInfo.InvariantCulture, $"| completed: package, drone assignment, utilization and delivery stored | {f.Completed} |");
        foreach (var (reason, count) in f.DeadLettered.OrderBy(d => d.Key, StringComparer.Ordinal))
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"| dead-lettered {reason} | {count} |");
        }

        md.AppendLine(CultureInfo.InvariantCulture, $"| lost | {f.Lost} |");
        md.AppendLine(CultureInfo.InvariantCulture, $"| duplicated | {f.DuplicatedTotal} |");
        md.AppendLine(CultureInfo.InvariantCulture, $"| half-done | {f.HalfDone.Count} |");
        md.AppendLine().AppendLine("## Faults and recovery").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture, $"Pre-fault completion rate {f.PreFaultRate:0.0}/s; recovered when {ChaosVerdicts.RecoveryWindowSeconds} s reach {ChaosVerdicts.RecoveredShare:P0} of it, counted from the fault's end (window closed, replacement ready).").AppendLine();
        md.AppendLine("| fault | start s | end s | what | recovery after its end, s | after its start, s |").AppendLine("|---|---|---|---|---|---|");
        foreach (var recovery in f.Recoveries)
        {
            var r = recovery.Fault;
            var (afterEnd, afterStart) = recovery.Seconds is { } s
                ? (s.ToString("0", CultureInfo.InvariantCulture), (s + (r.Ended - r.Started).TotalSeconds).ToString("0", CultureInfo.InvariantCulture))
                : ("not recovered", "–");
            md.AppendLine(CultureInfo.InvariantCulture, $"| {r.Kind} | {r.Started.TotalSeconds:0.0} | {r.Ended.TotalSeconds:0.0} | {Cell(r.Target)} | {afterEnd} | {afterStart} |");
        }

        md.AppendLine().AppendLine("Faults the emulators injected: " + (report.Injected.Count == 0 ? "none" : string.Join(", ", report.Injected.Select(i => $"{i.Key} {i.Value}"))) + ".");
        if (f.HalfDone.Count > 0)
        {
            md.AppendLine().AppendLine("## Half-done deliveries").AppendLine();
            foreach (var line in f.HalfDone.Take(50))
            {
                md.AppendLine("- " + line);
            }
        }

        return md.ToString();
    }

    private static JsonObject Object(IReadOnlyDictionary<string, long> values) =>
        new([.. values.OrderBy(v => v.Key, StringComparer.Ordinal).Select(v => KeyValuePair.Create(v.Key, (JsonNode?)JsonValue.Create(v.Value)))]);

    private static string Cell(string text) => text.Replace("|", "\\|", StringComparison.Ordinal);
}
