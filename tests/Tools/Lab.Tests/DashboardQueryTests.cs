using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.LocalProcesses;
using Xunit;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// Every PromQL expression of every Grafana dashboard, evaluated by a real Prometheus that scraped
/// the local system through the quick lab run's steps (A1, A3: invoices and Cosmos DB throttling;
/// B4, B5: the pipeline, with lock-lost settlements), must be valid and return data. The lab
/// keeps Prometheus's storage in its output folder; after the run the test serves that storage
/// with a Prometheus of its own and evaluates each expression over the run, every 5 s (a query at
/// each of those times). Sharing the quick run keeps the cost to a few seconds.
/// </summary>
[Trait("Category", "Lab")]
[Collection(QuickLabRunCollection.Name)]
public sealed class DashboardQueryTests(QuickLabRun run)
{
    /// <summary>
    /// Expressions (panel and the metric they read) that may return nothing here, with the reason;
    /// they must still be valid PromQL. Keep it short: every one counts a failure that a healthy
    /// quick run does not cause (or causes only on some machines), so its series does not exist
    /// yet — the services create a counter's series on its first increment. That the metric is
    /// emitted at all is checked by the chart tests (DashboardTests).
    /// </summary>
    private static readonly (string Panel, string Metric, string Reason)[] AllowedEmpty =
    [
        // The workflow abandons only on a transient backend failure and dead-letters only a message
        // it cannot process; B4 loses locks instead (its messages come back by lock expiry).
        ("Workflow settlements", "servicebus_client_messages_abandoned_total", "no transient backend failures"),
        ("Workflow settlements", "servicebus_client_messages_deadlettered_total", "no unprocessable messages"),
        // The broker dead-letters after MaxDeliveryCount lost locks; in quick mode that happens on
        // some machines only (docs/lab.md, B4's informational verdict).
        ("Dead-lettered messages", "servicebus_emulator_deadlettered_messages_total", "B4 dead-letters on some machines only"),
        // Redis refuses writes only when full (B1's 64 MB, not in the quick run); the others' caches have room.
        ("Redis errors by command", "dronedelivery_delivery_redis_calls_total", "no Redis errors outside B1"),
        ("Redis out-of-memory refusals", "dronedelivery_delivery_redis_oom_errors_total", "no Redis errors outside B1"),
        // Backends answer 5xx only when overloaded or failing, which they are not on a fast machine.
        ("Backend 5xx", "http_server_request_duration_seconds_count", "no backend errors on a fast machine"),
        // Polly creates the events' series on the first retry, timeout or circuit transition; a healthy
        // quick run may have none (the chart tests prove the name is emitted).
        ("Gateway → backend retries, timeouts and circuit transitions", "resilience_polly_strategy_events_total", "no retries on a healthy run"),
        ("Workflow → backend retries, timeouts and circuit transitions", "resilience_polly_strategy_events_total", "no retries on a healthy run"),
    ];

    private const string NoData = "no data";

    private static readonly string Dashboards = RepositoryLayout.InRepository("charts", "dronedelivery", "dashboards");

    [Fact]
    public async Task Every_dashboard_expression_returns_data_from_the_quick_run()
    {
        Assert.Contains($"Prometheus: http://127.0.0.1:{run.PrometheusPort}/", run.Console, StringComparison.Ordinal);
        Assert.False(FreePort.IsListening(run.PrometheusPort), "Prometheus still listens after the lab ended.");
        var directory = Path.Combine(run.Output, "prometheus");
        Assert.True(File.Exists(Path.Combine(directory, "prometheus.yml")), run.Console);

        await using var prometheus = await PrometheusServer.StartAsync(directory, FreePort.Next(), CancellationToken.None, configuration: "global: {}\n");
        using var http = new HttpClient { BaseAddress = prometheus.Url, Timeout = TimeSpan.FromSeconds(30) };
        var failures = new List<string>();
        var evaluated = 0;
        foreach (var file in Directory.EnumerateFiles(Dashboards, "*.json").Order(StringComparer.Ordinal))
        {
            using var dashboard = JsonDocument.Parse(await File.ReadAllTextAsync(file));
            var variables = await VariablesAsync(http, dashboard.RootElement, failures, Path.GetFileName(file));
            foreach (var (panel, expr) in Expressions(dashboard.RootElement))
            {
                var name = $"{Path.GetFileName(file)}: {panel}";
                var query = Substitute(expr, variables);
                var (ok, detail) = await EvaluateAsync(http, query, run.Started, run.Ended);
                evaluated++;
                var allowedEmpty = AllowedEmpty.Any(a => a.Panel == panel && expr.Contains(a.Metric, StringComparison.Ordinal));
                if (!ok && !(allowedEmpty && detail == NoData))
                {
                    failures.Add($"{name}: {detail}{Environment.NewLine}    {query}");
                }
            }
        }

        Assert.True(evaluated > 0, "No dashboard expressions found.");
        Assert.True(failures.Count == 0, string.Join(Environment.NewLine, failures));
    }

    /// <summary>Each panel's title and target expressions, nested rows included.</summary>
    internal static IEnumerable<(string Panel, string Expr)> Expressions(JsonElement dashboard)
    {
        if (!dashboard.TryGetProperty("panels", out var panels))
        {
            yield break;
        }

        foreach (var panel in panels.EnumerateArray())
        {
            var title = panel.TryGetProperty("title", out var t) ? t.GetString() ?? "" : "";
            if (panel.TryGetProperty("targets", out var targets))
            {
                foreach (var target in targets.EnumerateArray())
                {
                    if (target.TryGetProperty("expr", out var expr) && expr.GetString() is { Length: > 0 } text)
                    {
                        yield return (title, text);
                    }
                }
            }

            foreach (var nested in Expressions(panel))
            {
                yield return nested;
            }
        }
    }

    /// <summary>
    /// Grafana's built-in intervals become fixed ranges (2 s scrapes: 30 s holds many samples); a
    /// template variable takes the first value its own <c>label_values</c> query finds, so that query is checked too.
    /// </summary>
    internal static string Substitute(string expr, IReadOnlyDictionary<string, string> variables)
    {
        var result = expr
            .Replace("$__rate_interval", "30s", StringComparison.Ordinal)
            .Replace("${__rate_interval}", "30s", StringComparison.Ordinal)
            .Replace("$__interval", "10s", StringComparison.Ordinal)
            .Replace("${__interval}", "10s", StringComparison.Ordinal)
            .Replace("$__range", "5m", StringComparison.Ordinal);
        return Regex.Replace(result, @"\$\{(\w+)(?::\w+)?\}|\$(\w+)", m =>
        {
            var name = m.Groups[1].Success ? m.Groups[1].Value : m.Groups[2].Value;
            return variables.TryGetValue(name, out var value) ? value : ".*";
        });
    }

    private static async Task<Dictionary<string, string>> VariablesAsync(HttpClient http, JsonElement dashboard, List<string> failures, string file)
    {
        var variables = new Dictionary<string, string>(StringComparer.Ordinal);
        if (!dashboard.TryGetProperty("templating", out var templating) || !templating.TryGetProperty("list", out var list))
        {
            return variables;
        }

        foreach (var variable in list.EnumerateArray())
        {
            var name = variable.GetProperty("name").GetString()!;
            var query = variable.TryGetProperty("query", out var q)
                ? q.ValueKind == JsonValueKind.Object && q.TryGetProperty("query", out var inner) ? inner.GetString() : q.ValueKind == JsonValueKind.String ? q.GetString() : null
                : null;
            var match = query is null ? null : Regex.Match(query, @"^label_values\((?:(.+),\s*)?(\w+)\)$");
            if (match is not { Success: true })
            {
                continue;
            }

            var url = $"api/v1/label/{match.Groups[2].Value}/values" + (match.Groups[1].Success ? $"?match[]={Uri.EscapeDataString(match.Groups[1].Value)}" : "");
            using var response = await http.GetAsync(new Uri(url, UriKind.Relative));
            using var body = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
            var values = body.RootElement.TryGetProperty("data", out var data) ? data.EnumerateArray().Select(v => v.GetString()!).ToList() : [];
            if (values.Count == 0)
            {
                failures.Add($"{file}: variable ${name} ({query}) has no values");
                continue;
            }

            variables[name] = values[0];
        }

        return variables;
    }

    private static async Task<(bool Ok, string Detail)> EvaluateAsync(HttpClient http, string query, DateTimeOffset start, DateTimeOffset end)
    {
        var url = string.Create(
            CultureInfo.InvariantCulture,
            $"api/v1/query_range?query={Uri.EscapeDataString(query)}&start={start.ToUnixTimeSeconds()}&end={end.ToUnixTimeSeconds()}&step=5");
        using var response = await http.GetAsync(new Uri(url, UriKind.Relative));
        var text = await response.Content.ReadAsStringAsync();
        using var body = JsonDocument.Parse(text);
        if (body.RootElement.GetProperty("status").GetString() != "success")
        {
            return (false, "invalid: " + (body.RootElement.TryGetProperty("error", out var error) ? error.GetString() : text));
        }

        var series = body.RootElement.GetProperty("data").GetProperty("result").GetArrayLength();
        return series > 0 ? (true, "") : (false, NoData);
    }
}
