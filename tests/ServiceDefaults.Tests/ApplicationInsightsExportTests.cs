using System.Collections.Concurrent;
using System.Diagnostics;
using System.IO.Compression;
using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace DroneDelivery.ServiceDefaults.Tests;

public class ApplicationInsightsExportTests
{
    private static readonly ActivitySource Source = new("DroneDelivery.TestService");

    [Fact]
    public async Task Spans_reach_application_insights_as_requests_and_typed_dependencies_of_one_operation()
    {
        var ingestion = new ConcurrentQueue<JsonElement>();
        await using var collector = await TestService.StartAsync(map: app => app.MapPost("/v2/track", async (HttpRequest request) =>
        {
            Stream body = request.Body;
            if (request.Headers.ContentEncoding.ToString().Contains("gzip", StringComparison.OrdinalIgnoreCase))
            {
                body = new GZipStream(body, CompressionMode.Decompress);
            }

            using var reader = new StreamReader(body);
            foreach (var line in (await reader.ReadToEndAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries))
            {
                ingestion.Enqueue(JsonDocument.Parse(line).RootElement.Clone());
            }

            return Results.Ok(new { itemsReceived = 1, itemsAccepted = 1, errors = Array.Empty<object>() });
        }));
        var connectionString = $"InstrumentationKey=00000000-0000-0000-0000-000000000001;IngestionEndpoint={collector.BaseAddress}";

        var service = await TestService.StartAsync(
            new() { ["APPLICATIONINSIGHTS_CONNECTION_STRING"] = connectionString },
            map: app => app.MapGet("/api/invoices/{ownerId}", async (string ownerId, IHttpClientFactory clients) =>
            {
                using (var query = Source.StartActivity("GetDroneUtilization", ActivityKind.Client))
                {
                    query?.SetTag("db.system.name", "cosmosdb");
                    query?.SetTag("server.address", "127.0.0.1");
                }

                await clients.CreateClient("backend").GetAsync(new Uri(collector.BaseAddress, "/health/live"));
                return Results.Ok(ownerId);
            }));
        Assert.True((await service.Client.GetAsync("/api/invoices/owner-7")).IsSuccessStatusCode);
        await service.DisposeAsync(); // stopping flushes the exporters

        var items = ingestion.ToArray();
        var request = Assert.Single(items, i => Name(i) == "AppRequests" && BaseData(i).GetProperty("name").GetString() == "GET /api/invoices/{ownerId}");
        // The health probe the handler called is not traced; every traced request carries its route.
        Assert.DoesNotContain(items, i => Name(i) == "AppRequests" && !BaseData(i).GetProperty("name").GetString()!.Contains(' '));
        var operation = request.GetProperty("tags").GetProperty("ai.operation.id").GetString();
        Assert.Equal("test-service", request.GetProperty("tags").GetProperty("ai.cloud.role").GetString());
        Assert.Equal("200", BaseData(request).GetProperty("responseCode").GetString());

        var dependencies = items.Where(i => Name(i) == "AppDependencies" && i.GetProperty("tags").GetProperty("ai.operation.id").GetString() == operation).ToArray();
        var cosmos = Assert.Single(dependencies, d => BaseData(d).GetProperty("type").GetString() == "Azure DocumentDB");
        Assert.Equal("GetDroneUtilization", BaseData(cosmos).GetProperty("name").GetString());
        var http = Assert.Single(dependencies, d => BaseData(d).GetProperty("type").GetString() == "Http" && BaseData(d).GetProperty("data").GetString()!.EndsWith("/health/live", StringComparison.Ordinal));
        Assert.Equal(BaseData(request).GetProperty("id").GetString(), cosmos.GetProperty("tags").GetProperty("ai.operation.parentId").GetString());
    }

    private static string Name(JsonElement item) => item.GetProperty("name").GetString() ?? string.Empty;

    private static JsonElement BaseData(JsonElement item) => item.GetProperty("data").GetProperty("baseData");
}
