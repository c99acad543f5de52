using System.Diagnostics;
using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.DroneScheduler;
using DroneDelivery.DroneScheduler.Seeding;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Services.Tests;

[Collection(CosmosCollection.Name)]
public sealed class DroneSchedulerTests(CosmosFixture cosmos)
{
    private const string Owner = "owner-0001";

    private static readonly Dictionary<string, string?> Tuned = new()
    {
        ["Utilization:ContainerId"] = CosmosFixture.ByOwnerContainer,
        ["Utilization:PartitionKeyPath"] = "/ownerId",
        ["Utilization:QueryWithPartitionKey"] = "true",
        ["Utilization:MaxConcurrency"] = "-1",
    };

    [Fact]
    public async Task Utilization_is_the_sum_of_the_owners_documents_of_the_month_baseline_and_tuned_alike()
    {
        var expected = UtilizationDataSet.Generate(CosmosFixture.Seed).Where(d => d.OwnerId == Owner && d.Year == 2025 && d.Month == 2).ToList();
        await using var baseline = await StartAsync();
        await using var tuned = await StartAsync(Tuned);

        var fromBaseline = await UtilizationAsync(baseline, Owner, 2025, 2);
        var fromTuned = await UtilizationAsync(tuned, Owner, 2025, 2);

        Assert.Equal(CosmosFixture.Seed.DeliveriesPerOwnerMonth, expected.Count);
        Assert.Equal(Math.Round(expected.Sum(d => d.TraveledMiles), 3), fromBaseline.TraveledMiles);
        Assert.Equal(Math.Round(expected.Sum(d => d.AssignedHours), 3), fromBaseline.AssignedHours);
        Assert.Equal(fromBaseline, fromTuned);
    }

    [Fact]
    public async Task The_baseline_query_fans_out_to_every_physical_partition_one_after_the_other()
    {
        await using var service = await StartAsync();
        using var metrics = new MetricRecorder(CosmosTelemetry.OperationCalls);
        using var trace = new TraceRecorder();
        var before = cosmos.Emulator.LastRequestSequence;

        await UtilizationAsync(service, Owner, 2025, 1);
        trace.StopRoot();

        var queries = QueryRequests(before, CosmosFixture.ByDeliveryContainer);
        Assert.Equal(CosmosFixture.PhysicalPartitions, queries.Select(q => q.PartitionKeyRangeId).Distinct().Count());
        Assert.True(IsSerial(queries), "MaxConcurrency 0 must read the partitions one after the other");
        var operation = await OperationSpanAsync(trace);
        Assert.Equal(CosmosFixture.PhysicalPartitions, operation.GetTagItem(CosmosTelemetry.CallCountAttribute));
        Assert.Equal(queries.Sum(q => q.RequestCharge), (double)operation.GetTagItem(CosmosTelemetry.RequestChargeAttribute)!, 6);
        Assert.Contains(metrics.Of(CosmosTelemetry.OperationCalls, ("operation", "GetDroneUtilization")), m => m.Value == CosmosFixture.PhysicalPartitions);
    }

    [Fact]
    public async Task MaxConcurrency_minus_one_reads_the_partitions_in_parallel()
    {
        await using var service = await StartAsync(new() { ["Utilization:MaxConcurrency"] = "-1" });
        var before = cosmos.Emulator.LastRequestSequence;

        await UtilizationAsync(service, Owner, 2025, 1);

        var queries = QueryRequests(before, CosmosFixture.ByDeliveryContainer);
        Assert.Equal(CosmosFixture.PhysicalPartitions, queries.Select(q => q.PartitionKeyRangeId).Distinct().Count());
        Assert.False(IsSerial(queries), "MaxConcurrency -1 must overlap the partitions' requests");
    }

    [Fact]
    public async Task The_owner_partition_key_makes_the_query_read_one_partition_for_far_fewer_RUs()
    {
        await using var baseline = await StartAsync();
        await using var tuned = await StartAsync(Tuned);
        using var baselineTrace = new TraceRecorder();
        await UtilizationAsync(baseline, Owner, 2025, 1);
        baselineTrace.StopRoot();
        var baselineCharge = (double)(await OperationSpanAsync(baselineTrace)).GetTagItem(CosmosTelemetry.RequestChargeAttribute)!;
        using var trace = new TraceRecorder();

        await UtilizationAsync(tuned, Owner, 2025, 1);
        trace.StopRoot();

        var operation = await OperationSpanAsync(trace);
        var tunedCharge = (double)operation.GetTagItem(CosmosTelemetry.RequestChargeAttribute)!;
        Assert.Equal(1, operation.GetTagItem(CosmosTelemetry.CallCountAttribute));
        Assert.True(tunedCharge * 4 < baselineCharge, $"scoped {tunedCharge} RU vs fanned out {baselineCharge} RU");
        Assert.Equal(Owner, operation.GetTagItem(DroneSchedulerTelemetry.QueryPartitionKeyAttribute));
        Assert.Equal(-1, operation.GetTagItem(DroneSchedulerTelemetry.MaxConcurrencyAttribute));
        var query = Assert.Single(trace.Spans, s => s.ParentSpanId == operation.SpanId && (string?)s.GetTagItem("db.operation.name") == "query");
        Assert.Equal("cosmosdb", query.GetTagItem("db.system.name"));
        Assert.Equal(CosmosFixture.ByOwnerContainer, query.GetTagItem("db.collection.name"));
        Assert.Equal(ActivityKind.Client, query.Kind);
    }

    [Fact]
    public async Task Throttled_queries_are_retried_by_the_client_and_their_429s_counted()
    {
        await using var service = await StartAsync(new() { ["Utilization:ContainerId"] = CosmosFixture.ThrottledContainer, ["Utilization:MaxConcurrency"] = "-1" });
        using var metrics = new MetricRecorder(CosmosTelemetry.Calls);
        using var trace = new TraceRecorder();

        // Bursts of 40 fan-out queries (about 3.2 RU per partition each) against 50 RU/s per partition,
        // until one is throttled: how fast a burst arrives depends on how busy the machine is.
        var queries = 0;
        for (var burst = 0; burst < 5 && !trace.Spans.Any(IsThrottled); burst++)
        {
            var responses = await Task.WhenAll(Enumerable.Range(0, 40).Select(_ =>
                service.Client.GetAsync($"api/dronedeliveries/utilization?ownerId={Owner}&year=2025&month=1")));
            queries += responses.Length;
            Assert.All(responses, r => Assert.Equal(HttpStatusCode.OK, r.StatusCode));
        }

        trace.StopRoot();
        Assert.True(await Eventually.TrueAsync(() => trace.Spans.Count(s => s.DisplayName == "GetDroneUtilization") == queries, TimeSpan.FromSeconds(5)));
        var spans = trace.Spans;
        var throttled = spans.Count(IsThrottled);
        Assert.True(throttled > 0, "no burst was throttled");
        Assert.Equal(queries * 8 + throttled, spans.Where(s => s.DisplayName == "GetDroneUtilization").Sum(s => (int)s.GetTagItem(CosmosTelemetry.CallCountAttribute)!));
        Assert.True(metrics.Sum(CosmosTelemetry.Calls, ("operation", "GetDroneUtilization"), ("http.response.status_code", "429")) >= throttled);

        static bool IsThrottled(Activity span) =>
            span.Source.Name == CosmosTelemetry.SourceName && span.Kind == ActivityKind.Client && (int?)span.GetTagItem("http.response.status_code") == 429;
    }

    [Fact]
    public async Task MaxItemCount_pages_the_query()
    {
        await using var service = await StartAsync(new(Tuned) { ["Utilization:MaxItemCount"] = "2" });
        using var trace = new TraceRecorder();

        await UtilizationAsync(service, Owner, 2025, 1);
        trace.StopRoot();

        // Six documents of the owner's month in one partition, two per page.
        Assert.Equal(3, (await OperationSpanAsync(trace)).GetTagItem(CosmosTelemetry.CallCountAttribute));
    }

    [Fact]
    public async Task The_query_settings_reach_the_query_request_options()
    {
        await using var service = await StartAsync(new(Tuned) { ["Utilization:MaxItemCount"] = "250", ["Utilization:MaxBufferedItemCount"] = "5000" });
        var settings = service.Services.GetRequiredService<IOptions<UtilizationSettings>>().Value;

        var options = UtilizationQuery.Options(settings, "owner-0042");
        var baseline = UtilizationQuery.Options(new UtilizationSettings(), "owner-0042");

        Assert.Equal((-1, 250, 5000), (options.MaxConcurrency, options.MaxItemCount, options.MaxBufferedItemCount));
        Assert.Equal(new PartitionKey("owner-0042"), options.PartitionKey);
        Assert.Equal((0, null, null, null), (baseline.MaxConcurrency, baseline.MaxItemCount, baseline.MaxBufferedItemCount, baseline.PartitionKey));
    }

    [Fact]
    public async Task The_cosmos_settings_reach_the_cosmos_client()
    {
        await using var service = await StartAsync(new()
        {
            ["Cosmos:ConnectionMode"] = "Direct",
            ["Cosmos:MaxRetryAttemptsOnRateLimitedRequests"] = "3",
            ["Cosmos:MaxRetryWaitTimeOnRateLimitedRequests"] = "00:00:07",
            ["Cosmos:GatewayModeMaxConnectionLimit"] = "17",
            ["Cosmos:LimitToEndpoint"] = "false",
        });

        var client = service.Services.GetRequiredService<CosmosClient>();
        var handler = service.Services.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler(CosmosClients.HttpClientName);

        Assert.Equal(ConnectionMode.Direct, client.ClientOptions.ConnectionMode);
        Assert.Equal(3, client.ClientOptions.MaxRetryAttemptsOnRateLimitedRequests);
        Assert.Equal(TimeSpan.FromSeconds(7), client.ClientOptions.MaxRetryWaitTimeOnRateLimitedRequests);
        Assert.False(client.ClientOptions.LimitToEndpoint);
        var chain = new List<HttpMessageHandler>();
        for (HttpMessageHandler? h = handler; h is not null; h = (h as DelegatingHandler)?.InnerHandler)
        {
            chain.Add(h);
        }

        Assert.Contains(chain, h => h is CosmosCallHandler);
        Assert.Equal(17, Assert.IsType<SocketsHttpHandler>(chain[^1]).MaxConnectionsPerServer);
        Assert.DoesNotContain(chain, h => h.GetType().Name == "ResilienceHandler");
    }

    [Fact]
    public async Task Assigning_a_drone_is_idempotent_and_bills_the_flight()
    {
        await using var service = await StartAsync();
        var deliveryId = NewId();
        var owner = NewId();
        var request = Request(owner, new DateTimeOffset(2025, 5, 20, 8, 0, 0, TimeSpan.Zero));

        var first = await service.Client.PutJsonAsync($"api/dronedeliveries/{deliveryId}", request);
        var repeat = await service.Client.PutJsonAsync($"api/dronedeliveries/{deliveryId}", request);

        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        Assert.Equal(HttpStatusCode.OK, repeat.StatusCode);
        var assignment = await first.ReadAsync<DroneAssignment>();
        Assert.Equal(assignment, await repeat.ReadAsync<DroneAssignment>());
        Assert.Equal(DroneFleet.DroneFor(deliveryId, new DronesSettings().FleetSize), assignment.DroneId);
        var plan = FlightPlan.For(Location(request.PickupLocation), Location(request.DropoffLocation), expedited: false);
        Assert.Equal((plan.Miles, plan.Hours), (assignment.TraveledMiles, assignment.AssignedHours));
        Assert.InRange(assignment.TraveledMiles, 3.8, 3.9); // 0.03° of latitude and 0.07° of longitude at 47.6° N

        var utilization = await UtilizationAsync(service, owner, 2025, 5);
        Assert.Equal((plan.Miles, plan.Hours), (utilization.TraveledMiles, utilization.AssignedHours));
        Assert.Equal(1, await CountDocumentsAsync(CosmosFixture.ByDeliveryContainer, deliveryId));
    }

    [Fact]
    public async Task Releasing_a_drone_removes_the_assignment_and_its_utilization()
    {
        await using var service = await StartAsync(Tuned);
        var deliveryId = NewId();
        var owner = NewId();
        await service.Client.PutJsonAsync($"api/dronedeliveries/{deliveryId}", Request(owner, new DateTimeOffset(2025, 5, 20, 8, 0, 0, TimeSpan.Zero)));
        Assert.Equal(1, await CountDocumentsAsync(CosmosFixture.ByOwnerContainer, deliveryId));

        var release = await service.Client.DeleteAsync($"api/dronedeliveries/{deliveryId}");
        var read = await service.Client.GetAsync($"api/dronedeliveries/{deliveryId}");
        var releaseAgain = await service.Client.DeleteAsync($"api/dronedeliveries/{deliveryId}");

        Assert.Equal(HttpStatusCode.NoContent, release.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, read.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, releaseAgain.StatusCode);
        Assert.Equal(0, await CountDocumentsAsync(CosmosFixture.ByOwnerContainer, deliveryId));
        Assert.Equal(new DroneUtilization(owner, 2025, 5, 0, 0), await UtilizationAsync(service, owner, 2025, 5));
    }

    [Fact]
    public async Task Readiness_reports_a_container_partitioned_otherwise_than_configured()
    {
        await using var service = await StartAsync(new() { ["Utilization:PartitionKeyPath"] = "/ownerId" });

        var ready = await service.Client.GetAsync("health/ready");

        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        Assert.Contains("partitioned by /partitionKey, not by the configured /ownerId", await ready.Content.ReadAsStringAsync());
    }

    [Theory]
    [InlineData("api/dronedeliveries/utilization?ownerId=o&year=2025&month=0", "month")]
    [InlineData("api/dronedeliveries/utilization?year=2025&month=1", "ownerId")]
    public async Task A_bad_utilization_query_is_a_400(string path, string fields)
    {
        await using var service = await StartAsync();

        var response = await service.Client.GetAsync(path);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(fields.Split(','), await response.InvalidFieldsAsync());
    }

    [Fact]
    public async Task An_invalid_assignment_request_is_a_400_listing_its_fields()
    {
        await using var service = await StartAsync();

        var response = await service.Client.PutJsonAsync($"api/dronedeliveries/{NewId()}", new DroneAssignmentRequest { PickupLocation = "91,0", PackageId = "p" });

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(["dropoffLocation", "ownerId", "pickupLocation", "pickupTime"], await response.InvalidFieldsAsync());
    }

    [Theory]
    [InlineData("Utilization:QueryWithPartitionKey", "true", "QueryWithPartitionKey requires PartitionKeyPath /ownerId")]
    [InlineData("Utilization:PartitionKeyPath", "/id", "PartitionKeyPath must be /partitionKey or /ownerId")]
    [InlineData("Utilization:MaxConcurrency", "-2", "Setting 'Utilization:MaxConcurrency' = '-2' is invalid")]
    [InlineData("Utilization:MaxItemCount", "0", "MaxItemCount must not be 0")]
    [InlineData("Drones:FleetSize", "0", "Setting 'Drones:FleetSize' = '0' is invalid")]
    [InlineData("Utilization:MaxParallelism", "-1", "MaxParallelism")]
    public Task DroneScheduler_refuses_a_bad_setting(string key, string value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.DroneScheduler, cosmos.Settings(new() { [key] = value }), expected);

    internal static DroneAssignmentRequest Request(string owner, DateTimeOffset pickup) => new()
    {
        OwnerId = owner,
        PickupLocation = "47.64,-122.13",
        DropoffLocation = "47.61,-122.20",
        PickupTime = pickup,
        Expedited = false,
        PackageId = "pkg-" + owner,
    };

    private Task<ServiceApp> StartAsync(Dictionary<string, string?>? settings = null) =>
        ServiceApp.StartAsync(Definitions.DroneScheduler, cosmos.Settings(settings));

    private static async Task<DroneUtilization> UtilizationAsync(ServiceApp service, string owner, int year, int month)
    {
        var response = await service.Client.GetAsync($"api/dronedeliveries/utilization?ownerId={owner}&year={year}&month={month}");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return await response.ReadAsync<DroneUtilization>();
    }

    /// <summary>The trace's one GetDroneUtilization span (its attributes carry the operation's calls and RU).</summary>
    private static async Task<Activity> OperationSpanAsync(TraceRecorder trace)
    {
        Assert.True(await Eventually.TrueAsync(() => trace.Spans.Any(s => s.DisplayName == "GetDroneUtilization"), TimeSpan.FromSeconds(5)));
        return trace.Spans.Single(s => s.DisplayName == "GetDroneUtilization");
    }

    private List<Emulators.CosmosDb.Metrics.EmulatorRequest> QueryRequests(long after, string container) =>
        [.. cosmos.Emulator.GetRequests(after).Where(r => r.Container == container && r.Operation.Contains("query", StringComparison.OrdinalIgnoreCase) && r.PartitionKeyRangeId is not null)];

    /// <summary>No request started before the previous one ended (as the emulator timed them).</summary>
    private static bool IsSerial(IReadOnlyList<Emulators.CosmosDb.Metrics.EmulatorRequest> requests) =>
        requests.OrderBy(r => r.StartMilliseconds).Zip(requests.OrderBy(r => r.StartMilliseconds).Skip(1))
            .All(pair => pair.Second.StartMilliseconds >= pair.First.EndMilliseconds - 0.01);

    private async Task<int> CountDocumentsAsync(string container, string deliveryId)
    {
        var query = new QueryDefinition("SELECT VALUE COUNT(1) FROM c WHERE c.deliveryId = @id").WithParameter("@id", deliveryId);
        using var iterator = cosmos.Client.GetContainer(CosmosFixture.DatabaseId, container).GetItemQueryIterator<int>(query);
        var count = 0;
        while (iterator.HasMoreResults)
        {
            foreach (var value in await iterator.ReadNextAsync())
            {
                count += value;
            }
        }

        return count;
    }

    private static GeoLocation Location(string? text) => GeoLocation.TryParse(text, out var location) ? location : throw new ArgumentException(text);

    private static string NewId() => Guid.NewGuid().ToString("N");
}
