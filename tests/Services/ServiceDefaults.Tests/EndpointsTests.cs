using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using System.Text.Json;
using DroneDelivery.ServiceDefaults.Health;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace DroneDelivery.ServiceDefaults.Tests;

public record Parcel(string Id, double Weight);

public class EndpointsTests
{
    [Fact]
    public async Task Metrics_endpoint_serves_framework_runtime_and_own_meters_as_prometheus_text()
    {
        using var meter = new Meter("DroneDelivery.TestService");
        var deliveries = meter.CreateCounter<long>("dronedelivery.test.deliveries", "{delivery}");
        await using var service = await TestService.StartAsync(map: app => app.MapGet("/api/ping", () =>
        {
            deliveries.Add(3, new KeyValuePair<string, object?>("owner", "owner-1"));
            return "pong";
        }));

        Assert.Equal("pong", await service.Client.GetStringAsync("/api/ping"));
        var response = await service.Client.GetAsync("/metrics");
        var text = await response.Content.ReadAsStringAsync();

        Assert.Equal("text/plain", response.Content.Headers.ContentType?.MediaType);
        Assert.Contains("# TYPE http_server_request_duration_seconds histogram", text);
        Assert.Contains("http_server_request_duration_seconds_bucket{", text);
        Assert.Contains("http_route=\"/api/ping\"", text);
        Assert.Contains("le=\"+Inf\"", text);
        Assert.Contains("dotnet_thread_pool_queue_length", text);
        Assert.Contains("dotnet_process_cpu_time_seconds_total", text);
        Assert.Contains("dronedelivery_test_deliveries_total{owner=\"owner-1\"} 3", text);
    }

    [Fact]
    public async Task Health_endpoints_exist_outside_development_and_ready_reflects_dependencies()
    {
        var dependencyUp = true;
        await using var service = await TestService.StartAsync(configure: builder => builder.Services.AddHealthChecks()
            .AddCheck("backing-store", () => dependencyUp ? HealthCheckResult.Healthy() : HealthCheckResult.Unhealthy("backing store unreachable"), [HealthTags.Ready]));

        Assert.Equal(HttpStatusCode.OK, (await service.Client.GetAsync("/health/live")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await service.Client.GetAsync("/health/ready")).StatusCode);

        dependencyUp = false;
        var ready = await service.Client.GetAsync("/health/ready");
        var live = await service.Client.GetAsync("/health/live");

        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        Assert.Contains("backing store unreachable", await ready.Content.ReadAsStringAsync());
        Assert.Equal(HttpStatusCode.OK, live.StatusCode);
    }

    [Fact]
    public async Task Malformed_json_gets_a_400_problem_saying_what_is_wrong()
    {
        await using var service = await TestService.StartAsync(map: MapParcels);

        var response = await service.Client.PostAsync("/api/parcels", new StringContent("{\"id\": \"p1\", \"weight\": ", Encoding.UTF8, "application/json"));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        using var problem = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        Assert.Equal(400, problem.RootElement.GetProperty("status").GetInt32());
        Assert.Contains("JSON", problem.RootElement.GetProperty("detail").GetString());
        Assert.True(problem.RootElement.TryGetProperty("traceId", out _));
    }

    [Fact]
    public async Task A_body_naming_a_property_twice_gets_a_400_problem_naming_it_and_where()
    {
        // Every service's request bodies are read with these options (the gateway maps no body of its own).
        await using var service = await TestService.StartAsync(map: MapParcels);

        var once = await service.Client.PostAsync("/api/parcels", new StringContent("{\"id\": \"p1\", \"weight\": 2}", Encoding.UTF8, "application/json"));
        var twice = await service.Client.PostAsync("/api/parcels", new StringContent("{\"id\": \"p1\", \"weight\": 2, \"Weight\": 200}", Encoding.UTF8, "application/json"));

        Assert.True(once.IsSuccessStatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, twice.StatusCode);
        using var problem = JsonDocument.Parse(await twice.Content.ReadAsStringAsync());
        var detail = problem.RootElement.GetProperty("detail").GetString();
        Assert.Contains("Duplicate property 'weight'", detail, StringComparison.Ordinal);
        Assert.Contains("$.Weight", detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_oversized_body_gets_413_not_500()
    {
        await using var service = await TestService.StartAsync(
            new() { ["Hosting:MaxRequestBodySize"] = "2048" },
            map: MapParcels);

        var body = JsonSerializer.Serialize(new Parcel(new string('x', 10_000), 1));
        var response = await service.Client.PostAsync("/api/parcels", new StringContent(body, Encoding.UTF8, "application/json"));

        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
    }

    [Fact]
    public async Task Unknown_routes_get_a_404_problem()
    {
        await using var service = await TestService.StartAsync();

        var response = await service.Client.GetAsync("/api/nothing-here");

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
    }

    private static void MapParcels(WebApplication app) =>
        app.MapPost("/api/parcels", (Parcel parcel) => Results.Ok(parcel));
}
