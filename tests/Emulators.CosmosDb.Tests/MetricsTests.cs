using System.Net.Http.Json;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>The model's metrics as the lab reads them: JSON on /_emulator/metrics, Prometheus text on /metrics.</summary>
public sealed class MetricsTests : IAsyncLifetime
{
    // The SDK signs requests with the real time, so the fake clock starts there.
    private readonly FakeTimeProvider _time = new(DateTimeOffset.UtcNow);
    private CosmosEmulator _emulator = null!;
    private CosmosClient _client = null!;
    private HttpClient _http = null!;

    public async Task InitializeAsync()
    {
        _emulator = await CosmosTestHost.StartAsync(o =>
        {
            o.DefaultPhysicalPartitions = ScenarioA.Partitions;
            o.TimeProvider = _time;
        });
        _client = CosmosTestHost.Client(_emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);
        _http = new HttpClient { BaseAddress = _emulator.Endpoint };
    }

    public async Task DisposeAsync()
    {
        _http.Dispose();
        _client.Dispose();
        await _emulator.DisposeAsync();
    }

    [Fact]
    public async Task Health_answers_200()
    {
        var response = await _http.GetAsync("/_emulator/health");

        Assert.True(response.IsSuccessStatusCode);
    }

    [Fact]
    public async Task Json_metrics_show_ru_per_partition_against_provisioned_throttles_and_requests()
    {
        var container = await ScenarioA.CreateAsync(_emulator, _client, "utilization", "/partitionKey", 900, _time);
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
        Assert.Contains(utilization.Requests, r => r.Operation == CosmosEmulatorOperations.Query && r.StatusCode == 200 && r.Count > 0);
        Assert.Contains(utilization.Requests, r => r.Operation == CosmosEmulatorOperations.Query && r.StatusCode == 429 && r.Count == utilization.ThrottledRequests);
        Assert.Contains(utilization.Requests, r => r.Operation == CosmosEmulatorOperations.CreateItem && r.StatusCode == 201 && r.Count == 600);
        var queryCharges = Assert.Single(utilization.RequestCharges, d => d.Operation == CosmosEmulatorOperations.Query);
        Assert.Equal(queryCharges.Count, queryCharges.Buckets[^1].Count);
        // The per-second series: RU consumed in some second exceeded what one partition is provisioned for.
        var seconds = utilization.Partitions.SelectMany(p => p.Seconds).ToList();
        Assert.NotEmpty(seconds);
        Assert.Contains(seconds, s => s.ThrottledRequests > 0 && s.ProvisionedThroughput == 100);
        Assert.Equal(600, snapshot.Containers.Sum(c => c.Partitions.Sum(p => p.Documents)));
    }

    [Fact]
    public async Task Prometheus_text_uses_the_published_metric_names()
    {
        var container = await CosmosTestHost.ContainerAsync(_client, "/pk", throughput: 1800);
        await container.CreateItemAsync(new { id = "1", pk = "a" }, new PartitionKey("a"));

        var text = await _http.GetStringAsync("/metrics");

        foreach (var name in typeof(CosmosEmulatorMetricNames).GetFields().Select(f => (string)f.GetValue(null)!))
        {
            Assert.Contains($"# TYPE {name} ", text);
        }

        Assert.Contains($"{CosmosEmulatorMetricNames.ProvisionedThroughput}{{database=\"test\",container=\"items\",partition=\"0\"}} 200", text);
        Assert.Contains($"{CosmosEmulatorMetricNames.RequestsTotal}{{database=\"test\",container=\"items\",operation=\"CreateItem\",status_code=\"201\"}} 1", text);
        Assert.Contains($"{CosmosEmulatorMetricNames.RequestCharge}_bucket{{database=\"test\",container=\"items\",operation=\"CreateItem\",le=\"+Inf\"}} 1", text);
    }

    [Fact]
    public async Task Request_timings_are_served_over_http()
    {
        var container = await CosmosTestHost.ContainerAsync(_client, "/pk");
        await container.CreateItemAsync(new { id = "1", pk = "a" }, new PartitionKey("a"));

        var requests = await _http.GetFromJsonAsync<List<EmulatorRequest>>("/_emulator/requests?after=0", new JsonSerializerOptions(JsonSerializerDefaults.Web));

        var create = Assert.Single(requests!, r => r.Operation == CosmosEmulatorOperations.CreateItem);
        Assert.Equal("items", create.Container);
        Assert.Equal(201, create.StatusCode);
        Assert.True(create.RequestCharge > 5);
        Assert.NotNull(create.PartitionKeyRangeId);
    }
}
