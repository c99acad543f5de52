using System.Net.Http.Json;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Lab.Measurement;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>The model's metrics as the lab reads them (JSON on /_emulator/metrics) and as Prometheus scrapes them (/metrics).</summary>
public sealed class MetricsTests() : EmulatorTest(physicalPartitions: ScenarioA.Partitions)
{
    // The SDK signs requests with the real time, so the fake clock starts there.
    private readonly FakeTimeProvider _time = new(DateTimeOffset.UtcNow);
    private HttpClient _http = null!;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        _http = new HttpClient { BaseAddress = Emulator.Endpoint };
    }

    public override async Task DisposeAsync()
    {
        _http.Dispose();
        await base.DisposeAsync();
    }

    protected override void Configure(Configuration.CosmosEmulatorOptions options) => options.TimeProvider = _time;

    protected override CosmosClient CreateClient(CosmosEmulator emulator) => CosmosTestHost.Client(emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);

    [Fact]
    public async Task Health_answers_200()
    {
        var response = await _http.GetAsync("/_emulator/health");

        Assert.True(response.IsSuccessStatusCode);
    }

    [Fact]
    public async Task Json_metrics_show_ru_per_partition_against_provisioned_throttles_and_requests()
    {
        var container = await ScenarioA.CreateAsync(Emulator, Client, "utilization", "/partitionKey", 900, _time);
        await ScenarioA.RunAsync(container, "owner-1");
        await Assert.ThrowsAnyAsync<CosmosException>(() => ScenarioA.AtRateAsync(container, _time, 60, 180));

        var snapshot = await _http.GetFromJsonAsync<EmulatorMetricsSnapshot>("/_emulator/metrics?seconds=30", new JsonSerializerOptions(JsonSerializerDefaults.Web));

        var utilization = snapshot!.Container("invoicing", "utilization")!;
        Assert.Equal(900, utilization.ProvisionedThroughput);
        Assert.Equal(ScenarioA.Partitions, utilization.Partitions.Count);
        Assert.All(utilization.Partitions, p => Assert.Equal(100, p.ProvisionedThroughput));
        Assert.All(utilization.Partitions, p => Assert.True(p.RequestCharge > 0));
        Assert.True(utilization.ThrottledRequests > 0);
        Assert.Equal(utilization.ThrottledRequests, utilization.Partitions.Sum(p => p.ThrottledRequests));
        // The per-second series: RU consumed in some second exceeded what one partition is provisioned for.
        var seconds = utilization.Partitions.SelectMany(p => p.Seconds).ToList();
        Assert.NotEmpty(seconds);
        Assert.Contains(seconds, s => s.ThrottledRequests > 0 && s.ProvisionedThroughput == 100);
        Assert.Equal(600, snapshot.Containers.Sum(c => c.Partitions.Sum(p => p.Documents)));
    }

    /// <summary>
    /// What Prometheus, the dashboards (charts/dronedelivery/dashboards) and the lab's Prometheus read:
    /// a real scrape after real SDK traffic (loading, fan-out queries, then throttling), in the classic
    /// text format, with each published name, the labels the dashboards group by, and values that agree
    /// with the model's own snapshot.
    /// </summary>
    [Fact]
    public async Task Scrape_after_real_requests_has_the_names_labels_and_values_the_dashboards_read()
    {
        var container = await ScenarioA.CreateAsync(Emulator, Client, "utilization", "/partitionKey", 900, _time);
        await ScenarioA.RunAsync(container, "owner-1");
        await Assert.ThrowsAnyAsync<CosmosException>(() => ScenarioA.AtRateAsync(container, _time, 60, 180));
        var model = Emulator.GetMetrics().Container("invoicing", "utilization")!;

        using var response = await _http.GetAsync("/metrics");
        var text = await response.Content.ReadAsStringAsync();
        var samples = PrometheusText.Parse(text);

        Assert.Equal("text/plain", response.Content.Headers.ContentType!.MediaType);
        foreach (var name in typeof(CosmosEmulatorMetricNames).GetFields().Select(f => (string)f.GetValue(null)!))
        {
            Assert.Contains(samples, s => s.Name == name || s.Name == name + "_count");
        }

        Assert.DoesNotContain(samples, s => s.Labels.Keys.Any(label => label.StartsWith("otel_scope", StringComparison.Ordinal)));
        var utilization = samples.Where(s => s.Label("database") == "invoicing" && s.Label("container") == "utilization").ToList();
        double Sum(string name, Func<PrometheusSample, bool>? where = null) =>
            utilization.Where(s => s.Name == name && (where is null || where(s))).Sum(s => s.Value);

        // Per physical partition, as the RU panels group them.
        var provisioned = utilization.Where(s => s.Name == CosmosEmulatorMetricNames.ProvisionedThroughput).ToList();
        Assert.Equal(ScenarioA.Partitions, provisioned.Select(s => s.Label("partition")).Distinct().Count());
        Assert.All(provisioned, s => Assert.Equal(100, s.Value));
        Assert.True(model.ThrottledRequests > 0);
        Assert.Equal(model.ThrottledRequests, Sum(CosmosEmulatorMetricNames.ThrottledRequestsTotal));
        Assert.Equal(model.RequestCharge, Sum(CosmosEmulatorMetricNames.RequestChargeTotal), 3);
        Assert.Equal(model.Partitions.Sum(p => p.Requests), Sum(CosmosEmulatorMetricNames.PartitionRequestsTotal));
        Assert.Equal(600, Sum(CosmosEmulatorMetricNames.Documents));
        Assert.Equal(ScenarioA.Partitions, utilization.Count(s => s.Name == CosmosEmulatorMetricNames.ConsumedThroughput));
        Assert.Equal(ScenarioA.Partitions, utilization.Count(s => s.Name == CosmosEmulatorMetricNames.AvailableRequestUnits));

        // By operation and status: the 429s beside the 200s.
        bool Status(PrometheusSample s, string operation, string code) => s.Label("operation") == operation && s.Label("status_code") == code;
        Assert.Equal(model.ThrottledRequests, Sum(CosmosEmulatorMetricNames.RequestsTotal, s => Status(s, CosmosEmulatorOperations.Query, "429")));
        Assert.True(Sum(CosmosEmulatorMetricNames.RequestsTotal, s => Status(s, CosmosEmulatorOperations.Query, "200")) > 0);
        Assert.Equal(600, Sum(CosmosEmulatorMetricNames.RequestsTotal, s => Status(s, CosmosEmulatorOperations.CreateItem, "201")));
        Assert.Contains(samples, s => s.Name == CosmosEmulatorMetricNames.RequestsTotal && s.Label("operation") == CosmosEmulatorOperations.ReadAccount
            && s.Label("database") == string.Empty && s.Value > 0);

        // The charge histogram: cumulative buckets over the charge bounds, ending at +Inf with the count.
        bool Query(PrometheusSample s) => s.Label("operation") == CosmosEmulatorOperations.Query;
        var buckets = utilization.Where(s => s.Name == CosmosEmulatorMetricNames.RequestCharge + "_bucket" && Query(s)).ToList();
        Assert.Equal([.. EmulatorInstruments.ChargeBounds.Select(b => b.ToString(System.Globalization.CultureInfo.InvariantCulture)), "+Inf"], buckets.Select(b => b.Label("le")));
        Assert.Equal(buckets.Select(b => b.Value).Order(), buckets.Select(b => b.Value));
        var count = Sum(CosmosEmulatorMetricNames.RequestCharge + "_count", Query);
        Assert.Equal(count, buckets[^1].Value);
        Assert.Equal(Sum(CosmosEmulatorMetricNames.RequestsTotal, Query), count);
        Assert.True(Sum(CosmosEmulatorMetricNames.RequestCharge + "_sum", Query) > count, "A fan-out query costs more than 1 RU.");

        // Every emulator metric a dashboard reads is there with the labels it groups by.
        foreach (var (metric, labels) in DashboardReads.Of("cosmos_emulator_"))
        {
            Assert.Contains(samples, s => s.Name == metric && labels.All(s.Labels.ContainsKey));
        }
    }

    /// <summary>
    /// Every scrape is collected anew (the exporter would otherwise answer from a 300 ms cache): a
    /// reader that scrapes right before and after a step sees the step's requests.
    /// </summary>
    [Fact]
    public async Task A_scrape_right_after_another_sees_the_requests_in_between()
    {
        var container = await CosmosTestHost.ContainerAsync(Client, "/pk", throughput: 1800);
        await container.CreateItemAsync(new { id = "1", pk = "a" }, new PartitionKey("a"));
        double Created(string text) => PrometheusText.Parse(text).Single(s => s.Name == CosmosEmulatorMetricNames.RequestsTotal
            && s.Label("container") == "items" && s.Label("operation") == CosmosEmulatorOperations.CreateItem).Value;

        var before = await _http.GetStringAsync("/metrics");
        await container.CreateItemAsync(new { id = "2", pk = "a" }, new PartitionKey("a"));
        var after = await _http.GetStringAsync("/metrics");

        Assert.Equal((1, 2), (Created(before), Created(after)));
    }

    [Fact]
    public async Task Request_timings_are_served_over_http()
    {
        var container = await CosmosTestHost.ContainerAsync(Client, "/pk");
        await container.CreateItemAsync(new { id = "1", pk = "a" }, new PartitionKey("a"));

        var requests = await _http.GetFromJsonAsync<List<EmulatorRequest>>("/_emulator/requests?after=0", new JsonSerializerOptions(JsonSerializerDefaults.Web));

        var create = Assert.Single(requests!, r => r.Operation == CosmosEmulatorOperations.CreateItem);
        Assert.Equal("items", create.Container);
        Assert.Equal(201, create.StatusCode);
        Assert.True(create.RequestCharge > 5);
        Assert.NotNull(create.PartitionKeyRangeId);
    }
}
