using System.Text.Json.Nodes;
using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The Grafana dashboards (charts/dronedelivery/dashboards) are well-formed dashboard JSON, and
/// every metric they query is one our services or emulators actually emit.
/// </summary>
public sealed partial class DashboardTests
{
    private static readonly string Folder = Path.Combine(Chart.Directory, "dashboards");

    private static readonly HashSet<string> PanelTypes = new(StringComparer.Ordinal) { "row", "timeseries", "stat", "gauge", "bargauge", "table", "text", "heatmap" };

    public static TheoryData<string> Dashboards => new(DashboardFiles);

    private static IEnumerable<string> DashboardFiles => Directory.GetFiles(Folder, "*.json").Select(f => Path.GetFileName(f)).Order(StringComparer.Ordinal);

    [Fact]
    public void There_is_a_dashboard_for_each_scenario()
    {
        Assert.Equal(["scenario-a-gateway-aggregation.json", "scenario-b-distributed-transaction.json"], DashboardFiles);
    }

    [Theory]
    [MemberData(nameof(Dashboards))]
    public void Dashboard_is_valid_Grafana_json(string file)
    {
        var dashboard = Load(file);

        Assert.False(string.IsNullOrWhiteSpace((string?)dashboard["uid"]), "uid");
        Assert.True(((string)dashboard["uid"]!).Length <= 40, "Grafana uids are at most 40 characters");
        Assert.False(string.IsNullOrWhiteSpace((string?)dashboard["title"]), "title");
        Assert.True((int)dashboard["schemaVersion"]! >= 36, "schemaVersion");
        var variables = dashboard["templating"]!["list"]!.AsArray().Select(v => (string)v!["name"]!).ToList();
        Assert.Contains("datasource", variables);
        Assert.Contains("namespace", variables);

        var panels = dashboard["panels"]!.AsArray().Select(p => p!.AsObject()).ToList();
        Assert.NotEmpty(panels);
        Assert.Equal(panels.Count, panels.Select(p => (int)p["id"]!).Distinct().Count());
        var occupied = new HashSet<(int, int)>();
        foreach (var panel in panels)
        {
            var title = (string)panel["title"]!;
            Assert.Contains((string)panel["type"]!, PanelTypes);
            var grid = panel["gridPos"]!;
            var (x, y, w, h) = ((int)grid["x"]!, (int)grid["y"]!, (int)grid["w"]!, (int)grid["h"]!);
            Assert.True(x >= 0 && w > 0 && x + w <= 24 && y >= 0 && h > 0, $"'{title}' is outside the 24-column grid");
            for (var cx = x; cx < x + w; cx++)
            {
                for (var cy = y; cy < y + h; cy++)
                {
                    Assert.True(occupied.Add((cx, cy)), $"'{title}' overlaps another panel");
                }
            }

            if ((string)panel["type"]! == "row")
            {
                continue;
            }

            Assert.False(string.IsNullOrWhiteSpace((string?)panel["description"]), $"'{title}' says nothing about what to look for");
            Assert.Equal("${datasource}", (string?)panel["datasource"]?["uid"]);
            var targets = panel["targets"]!.AsArray();
            Assert.NotEmpty(targets);
            Assert.All(targets, t => Assert.False(string.IsNullOrWhiteSpace((string?)t!["expr"]), $"'{title}' has an empty query"));
            Assert.Equal(targets.Count, targets.Select(t => (string)t!["refId"]!).Distinct().Count());
        }
    }

    [Theory]
    [MemberData(nameof(Dashboards))]
    public async Task Every_metric_a_dashboard_queries_is_emitted_by_our_code(string file)
    {
        var emitted = await EmittedMetrics.NamesAsync();
        var queried = Expressions(Load(file)).SelectMany(e => PromQl.MetricNames(e).Select(name => (name, e))).ToList();

        Assert.NotEmpty(queried);
        foreach (var (name, expression) in queried)
        {
            Assert.True(emitted.Contains(name), $"{file} queries {name}, which nothing in the system emits (in: {expression})");
        }
    }

    [Fact]
    public async Task The_KEDA_trigger_queries_a_metric_the_Service_Bus_emulator_emits()
    {
        var emitted = await EmittedMetrics.NamesAsync();
        var query = Chart.Template(Chart.EverythingOn).Get("ScaledObject", "workflow").Body.List("spec", "triggers").Single().Text("metadata", "query")!;

        Assert.All(PromQl.MetricNames(query), name => Assert.Contains(name, emitted));
    }

    [Fact]
    public async Task Emitted_metrics_include_the_framework_series_the_dashboards_rely_on()
    {
        // Guards the collector itself: an empty scrape would make the test above vacuous.
        var emitted = await EmittedMetrics.NamesAsync();

        Assert.Contains("http_server_request_duration_seconds_bucket", emitted);
        Assert.Contains("http_client_request_duration_seconds_bucket", emitted);
        Assert.Contains("dotnet_process_cpu_time_seconds_total", emitted);
        Assert.Contains("dotnet_thread_pool_queue_length_total", emitted);
        Assert.Contains("dronedelivery_gateway_backend_duration_seconds_bucket", emitted);
        Assert.Contains("servicebus_client_messages_completed_total", emitted);
        Assert.Contains("resilience_polly_strategy_events_total", emitted);
        Assert.DoesNotContain("dronedelivery_gateway_backend_duration", emitted);
    }

    [Theory]
    [InlineData("sum by (service_name, pod) (rate(dotnet_process_cpu_time_seconds_total{namespace=\"$namespace\"}[$__rate_interval]))", "dotnet_process_cpu_time_seconds_total")]
    [InlineData("histogram_quantile(0.95, sum by (le, backend) (rate(a_b_bucket{x=\"y\"}[5m])))", "a_b_bucket")]
    [InlineData("sum(rate(x_total[1m])) / sum(rate(y_count{code=\"200\"}[1m])) * 5", "x_total,y_count")]
    [InlineData("max(up) or vector(0)", "up")]
    public void PromQL_metric_names_are_found_and_functions_labels_and_keywords_are_not(string expression, string expected)
    {
        Assert.Equal(expected.Split(',').Order(StringComparer.Ordinal), PromQl.MetricNames(expression).Order(StringComparer.Ordinal));
    }

    [Fact]
    public void Chart_ships_every_dashboard_as_a_ConfigMap_for_the_Grafana_sidecar()
    {
        var render = Chart.Template(Chart.EverythingOn);
        foreach (var file in DashboardFiles)
        {
            var map = render.Get("ConfigMap", "dashboard-" + Path.GetFileNameWithoutExtension(file));
            Assert.Equal("1", map.Body.Text("metadata", "labels", "grafana_dashboard"));
            Assert.Equal(JsonNode.Parse(File.ReadAllText(Path.Combine(Folder, file)))!.ToJsonString(), JsonNode.Parse(map.Body.Text("data", file)!)!.ToJsonString());
        }
    }

    [Fact]
    public void Labels_the_dashboards_filter_on_survive_the_Prometheus_Operator_scrape()
    {
        // The operator sets these target labels itself; a scraped series' own label of the same
        // name is renamed exported_<name> unless the endpoint honours scraped labels.
        string[] operatorTargetLabels = ["container", "endpoint", "instance", "job", "namespace", "pod", "service"];
        var endpoint = Chart.Template(Chart.EverythingOn).Get("ServiceMonitor", "dronedelivery").Body.List("spec", "endpoints").Single();
        var relabelled = endpoint.List("relabelings").Select(r => r.Text("targetLabel")).OfType<string>().ToHashSet(StringComparer.Ordinal);
        var filtered = DashboardFiles.SelectMany(f => Expressions(Load(f)))
            .SelectMany(e => LabelMatcher().Matches(e).Select(m => m.Groups[1].Value))
            .ToHashSet(StringComparer.Ordinal);

        var ownLabelsAtRisk = operatorTargetLabels.Where(filtered.Contains).Where(l => !relabelled.Contains(l)).ToList();

        Assert.Contains("container", ownLabelsAtRisk);
        Assert.True(endpoint.Text("honorLabels") == "true",
            $"the dashboards filter on {string.Join(", ", ownLabelsAtRisk)}, which the ServiceMonitor would rename exported_*: set honorLabels");
    }

    [System.Text.RegularExpressions.GeneratedRegex(@"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*""")]
    private static partial System.Text.RegularExpressions.Regex LabelMatcher();

    private static JsonObject Load(string file) => JsonNode.Parse(File.ReadAllText(Path.Combine(Folder, file)))!.AsObject();

    private static IEnumerable<string> Expressions(JsonObject dashboard) =>
        dashboard["panels"]!.AsArray()
            .SelectMany(p => p!["targets"]?.AsArray() ?? [])
            .Select(t => (string)t!["expr"]!)
            .Concat(dashboard["templating"]!["list"]!.AsArray().Select(v => (string?)v!["definition"]).OfType<string>()
                .Select(d => d.Replace("label_values(", "", StringComparison.Ordinal).Split(',')[0]));
}
