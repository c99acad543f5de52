using System.Collections.Concurrent;
using System.Diagnostics;
using System.IO.Compression;
using System.Text.Json;
using DroneDelivery.TestSupport;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using OpenTelemetry.Logs;
using OpenTelemetry.Trace;

namespace DroneDelivery.ServiceDefaults.Tests;

public class ApplicationInsightsExportTests
{
    private static readonly ActivitySource Source = new("DroneDelivery.TestService");

    static ApplicationInsightsExportTests()
    {
        // The exporter's own usage statistics would go to Microsoft's endpoints: a test stays on loopback.
        Environment.SetEnvironmentVariable("APPLICATIONINSIGHTS_STATSBEAT_DISABLED", "true");
        Environment.SetEnvironmentVariable("APPLICATIONINSIGHTS_SDKSTATS_DISABLED_ALL", "true");
    }

    [Fact]
    public async Task Spans_reach_application_insights_as_requests_and_typed_dependencies_of_one_operation()
    {
        var ingestion = new ConcurrentQueue<JsonElement>();
        await using var collector = await TestService.StartAsync(map: app =>
        {
            app.MapPost("/v2/track", TrackAsync);
            app.MapPost("/v2.1/track", TrackAsync);
        });

        async Task<IResult> TrackAsync(HttpRequest request)
        {
            Stream body = request.Body;
            if (request.Headers.ContentEncoding.ToString().Contains("gzip", StringComparison.OrdinalIgnoreCase))
            {
                body = new GZipStream(body, CompressionMode.Decompress);
            }

            using var reader = new StreamReader(body);
            var lines = (await reader.ReadToEndAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries);
            foreach (var line in lines)
            {
                ingestion.Enqueue(JsonDocument.Parse(line).RootElement.Clone());
            }

            return Results.Ok(new { itemsReceived = lines.Length, itemsAccepted = lines.Length, errors = Array.Empty<object>() });
        }

        // Live metrics, which the exporter turns on, also go to the collector rather than to Azure.
        var connectionString = $"InstrumentationKey=00000000-0000-0000-0000-000000000001;IngestionEndpoint={collector.BaseAddress};LiveEndpoint={collector.BaseAddress}";

        var service = await TestService.StartAsync(
            new() { ["APPLICATIONINSIGHTS_CONNECTION_STRING"] = connectionString },
            map: app => app.MapGet("/api/invoices/{ownerId}", async (string ownerId, IHttpClientFactory clients) =>
            {
                using (var query = Source.StartActivity("GetDroneUtilization", ActivityKind.Client))
                {
                    query?.SetTag("db.system.name", "cosmosdb");
                    query?.SetTag("server.address", "127.0.0.1");
                }

                using (var redis = Source.StartActivity("HGET", ActivityKind.Client))
                {
                    redis?.SetTag("db.system.name", "redis");
                    redis?.SetTag("server.address", "127.0.0.1");
                }

                using (var settle = Source.StartActivity("ServiceBusReceiver.Complete", ActivityKind.Client))
                {
                    settle?.SetTag("messaging.system", "servicebus");
                    settle?.SetTag("messaging.destination.name", "deliveryrequests");
                    settle?.SetTag("messaging.operation.name", "settle");
                    settle?.SetTag("server.address", "127.0.0.1");
                }

                await clients.CreateClient("backend").GetAsync(new Uri(collector.BaseAddress, "/health/live"));
                return Results.Ok(ownerId);
            }));
        Assert.True((await service.Client.GetAsync("/api/invoices/owner-7")).IsSuccessStatusCode);

        // A flush transmits; stopping only writes to the exporter's offline storage and uploads later.
        service.App.Services.GetRequiredService<TracerProvider>().ForceFlush();
        service.App.Services.GetRequiredService<LoggerProvider>().ForceFlush();
        Assert.True(await Eventually.TrueAsync(() => ingestion.Any(i => BaseType(i) == "RequestData"), TimeSpan.FromSeconds(30)));
        await service.DisposeAsync();

        var items = ingestion.ToArray();
        var dump = string.Join('\n', items.Select(i => i.ToString()));
        var request = Assert.Single(items, i => BaseType(i) == "RequestData" && BaseData(i).GetProperty("name").GetString() == "GET /api/invoices/{ownerId}");
        // The health probe the handler called is not traced; every traced request carries its route.
        Assert.DoesNotContain(items, i => BaseType(i) == "RequestData" && !BaseData(i).GetProperty("name").GetString()!.Contains(' '));
        var operation = request.GetProperty("tags").GetProperty("ai.operation.id").GetString();
        // The exporter names the role [service.namespace]/service.name, brackets included.
        Assert.Equal("[dronedelivery]/test-service", request.GetProperty("tags").GetProperty("ai.cloud.role").GetString());
        Assert.Equal("200", BaseData(request).GetProperty("responseCode").GetString());

        var dependencies = items.Where(i => BaseType(i) == "RemoteDependencyData" && i.GetProperty("tags").GetProperty("ai.operation.id").GetString() == operation).ToArray();
        var cosmos = Assert.Single(dependencies, d => BaseData(d).GetProperty("name").GetString() == "GetDroneUtilization");
        Assert.True(CosmosDependencyType == BaseData(cosmos).GetProperty("type").GetString(), dump);
        var redis = Assert.Single(dependencies, d => BaseData(d).GetProperty("name").GetString() == "HGET");
        Assert.True(RedisDependencyType == BaseData(redis).GetProperty("type").GetString(), dump);
        var settle = Assert.Single(dependencies, d => BaseData(d).GetProperty("name").GetString() == "ServiceBusReceiver.Complete");
        Assert.True(ServiceBusDependencyType == BaseData(settle).GetProperty("type").GetString(), dump);
        Assert.Single(dependencies, d => BaseData(d).GetProperty("type").GetString() == "Http" && BaseData(d).GetProperty("data").GetString()!.EndsWith("/health/live", StringComparison.Ordinal));
        Assert.Equal(BaseData(request).GetProperty("id").GetString(), cosmos.GetProperty("tags").GetProperty("ai.operation.parentId").GetString());
    }

    /// <summary>The dependency type the exporter gives a span with <c>db.system.name=cosmosdb</c> (docs/observability.md).</summary>
    private const string CosmosDependencyType = "cosmosdb";

    /// <summary>... with <c>db.system.name=redis</c>.</summary>
    private const string RedisDependencyType = "redis";

    /// <summary>... with <c>messaging.system=servicebus</c>.</summary>
    private const string ServiceBusDependencyType = "servicebus";

    private static string BaseType(JsonElement item) =>
        item.TryGetProperty("data", out var data) && data.TryGetProperty("baseType", out var type) ? type.GetString() ?? string.Empty : string.Empty;

    private static JsonElement BaseData(JsonElement item) => item.GetProperty("data").GetProperty("baseData");
}
