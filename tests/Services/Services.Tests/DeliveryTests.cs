using System.Diagnostics;
using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.Delivery;
using DroneDelivery.Delivery.Store;
using DroneDelivery.LocalProcesses;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using StackExchange.Redis;

namespace DroneDelivery.Services.Tests;

[Collection(RedisCollection.Name)]
public sealed class DeliveryTests(RedisFixture redis) : IAsyncLifetime
{
    private ServiceApp _service = null!;

    public async Task InitializeAsync() => _service = await StartAsync(redis.ConnectionString);

    public async Task DisposeAsync() => await _service.DisposeAsync();

    [Fact]
    public async Task A_scheduled_delivery_can_be_read_and_its_status_polled()
    {
        var id = NewId();
        var schedule = Schedule("owner-a", new DateTimeOffset(2025, 3, 4, 10, 0, 0, TimeSpan.Zero));

        var before = await _service.Client.GetAsync($"api/deliveries/{id}/status");
        var put = await _service.Client.PutJsonAsync($"api/deliveries/{id}", schedule);
        var status = await _service.Client.GetAsync($"api/deliveries/{id}/status");
        var delivery = await (await _service.Client.GetAsync($"api/deliveries/{id}")).ReadAsync<DeliveryRecord>();

        Assert.Equal(HttpStatusCode.NotFound, before.StatusCode);
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        Assert.Equal($"/api/deliveries/{id}", put.Headers.Location?.OriginalString);
        Assert.Equal(HttpStatusCode.OK, status.StatusCode);
        var body = await status.ReadAsync<DeliveryStatus>();
        Assert.Equal((id, DeliveryStage.Created, "drone-0007"), (body.DeliveryId, body.Stage, body.DroneId));
        Assert.Equal(("owner-a", schedule.PackageId, schedule.PickupTime), (delivery.OwnerId, delivery.PackageId, delivery.PickupTime));
    }

    [Fact]
    public async Task Putting_the_same_delivery_again_changes_nothing()
    {
        var id = NewId();
        var owner = NewId();
        var schedule = Schedule(owner, new DateTimeOffset(2025, 5, 1, 8, 0, 0, TimeSpan.Zero));

        var first = await _service.Client.PutJsonAsync($"api/deliveries/{id}", schedule);
        var second = await _service.Client.PutJsonAsync($"api/deliveries/{id}", schedule);

        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        Assert.Equal(HttpStatusCode.OK, second.StatusCode);
        var events = await (await _service.Client.GetAsync($"api/deliveries/{id}/events")).ReadAsync<TrackingEvent[]>();
        Assert.Equal([DeliveryStage.Created], events.Select(e => e.Stage));
        Assert.Equal(1, await CountAsync(owner, 2025, 5));
    }

    [Fact]
    public async Task The_summary_counts_an_owners_deliveries_of_one_month_and_drops_cancelled_ones()
    {
        var owner = NewId();
        var march = new DateTimeOffset(2025, 3, 31, 23, 30, 0, TimeSpan.Zero);
        var ids = new List<string>();
        for (var i = 0; i < 3; i++)
        {
            ids.Add(NewId());
            Assert.Equal(HttpStatusCode.Created, (await _service.Client.PutJsonAsync($"api/deliveries/{ids[^1]}", Schedule(owner, march))).StatusCode);
        }

        // 00:30 on 1 April in UTC+2 is still 31 March in UTC: billed in March.
        await _service.Client.PutJsonAsync($"api/deliveries/{NewId()}", Schedule(owner, new DateTimeOffset(2025, 4, 1, 0, 30, 0, TimeSpan.FromHours(2))));
        await _service.Client.PutJsonAsync($"api/deliveries/{NewId()}", Schedule(owner, new DateTimeOffset(2025, 4, 2, 0, 0, 0, TimeSpan.Zero)));
        await _service.Client.PutJsonAsync($"api/deliveries/{NewId()}", Schedule(NewId(), march));
        var cancel = await _service.Client.DeleteAsync($"api/deliveries/{ids[0]}");

        Assert.Equal(HttpStatusCode.OK, cancel.StatusCode);
        Assert.Equal(DeliveryStage.Cancelled, (await cancel.ReadAsync<DeliveryRecord>()).Stage);
        Assert.Equal(3, await CountAsync(owner, 2025, 3));
        Assert.Equal(1, await CountAsync(owner, 2025, 4));
        Assert.Equal(0, await CountAsync(owner, 2025, 5));
    }

    [Fact]
    public async Task Rescheduling_into_another_month_moves_the_delivery_between_monthly_counts()
    {
        var id = NewId();
        var owner = NewId();
        await _service.Client.PutJsonAsync($"api/deliveries/{id}", Schedule(owner, new DateTimeOffset(2025, 6, 10, 9, 0, 0, TimeSpan.Zero)));

        var patch = await _service.Client.PatchJsonAsync($"api/deliveries/{id}", new RescheduleRequest
        {
            PickupTime = new DateTimeOffset(2025, 7, 2, 9, 0, 0, TimeSpan.Zero),
            Deadline = new DateTimeOffset(2025, 7, 2, 18, 0, 0, TimeSpan.Zero),
        });

        Assert.Equal(HttpStatusCode.OK, patch.StatusCode);
        Assert.Equal(DeliveryStage.Rescheduled, (await patch.ReadAsync<DeliveryRecord>()).Stage);
        Assert.Equal((0, 1), (await CountAsync(owner, 2025, 6), await CountAsync(owner, 2025, 7)));
        var events = await (await _service.Client.GetAsync($"api/deliveries/{id}/events")).ReadAsync<TrackingEvent[]>();
        Assert.Equal([DeliveryStage.Created, DeliveryStage.Rescheduled], events.Select(e => e.Stage));
    }

    [Fact]
    public async Task A_cancelled_delivery_cannot_be_scheduled_or_rescheduled_again()
    {
        var id = NewId();
        var schedule = Schedule("owner-c", new DateTimeOffset(2025, 6, 10, 9, 0, 0, TimeSpan.Zero));
        await _service.Client.PutJsonAsync($"api/deliveries/{id}", schedule);
        await _service.Client.DeleteAsync($"api/deliveries/{id}");

        var put = await _service.Client.PutJsonAsync($"api/deliveries/{id}", schedule);
        var patch = await _service.Client.PatchJsonAsync($"api/deliveries/{id}", new RescheduleRequest { PickupLocation = "47.6,-122.3" });
        var cancelAgain = await _service.Client.DeleteAsync($"api/deliveries/{id}");

        Assert.Equal(HttpStatusCode.Conflict, put.StatusCode);
        Assert.Equal(HttpStatusCode.Conflict, patch.StatusCode);
        Assert.Equal(HttpStatusCode.OK, cancelAgain.StatusCode);
    }

    [Fact]
    public async Task Unknown_deliveries_are_404_everywhere()
    {
        var id = NewId();
        foreach (var response in new[]
                 {
                     await _service.Client.GetAsync($"api/deliveries/{id}"),
                     await _service.Client.GetAsync($"api/deliveries/{id}/status"),
                     await _service.Client.GetAsync($"api/deliveries/{id}/events"),
                     await _service.Client.DeleteAsync($"api/deliveries/{id}"),
                     await _service.Client.PatchJsonAsync($"api/deliveries/{id}", new RescheduleRequest { PickupLocation = "1,1" }),
                 })
        {
            Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
            Assert.Contains(id, (await response.ProblemAsync()).GetProperty("detail").GetString());
        }
    }

    [Fact]
    public async Task Keys_get_no_expiry_by_default_the_baseline()
    {
        var id = NewId();
        await _service.Client.PutJsonAsync($"api/deliveries/{id}", Schedule("owner-ttl", DateTimeOffset.UtcNow));

        Assert.Null(await redis.Database.KeyTimeToLiveAsync(DeliveryStore.DeliveryKey(id)));
        Assert.Null(await redis.Database.KeyTimeToLiveAsync(DeliveryStore.EventsKey(id)));
    }

    [Fact]
    public async Task The_configured_ttls_are_set_on_the_keys()
    {
        await using var service = await StartAsync(redis.ConnectionString, new()
        {
            ["Redis:DeliveryTtl"] = "02:00:00",
            ["Redis:TrackingEventTtl"] = "00:30:00",
        });
        var id = NewId();
        var owner = NewId();
        var pickup = new DateTimeOffset(2025, 9, 1, 9, 0, 0, TimeSpan.Zero);

        await service.Client.PutJsonAsync($"api/deliveries/{id}", Schedule(owner, pickup));

        AssertTtl(TimeSpan.FromHours(2), await redis.Database.KeyTimeToLiveAsync(DeliveryStore.DeliveryKey(id)));
        AssertTtl(TimeSpan.FromMinutes(30), await redis.Database.KeyTimeToLiveAsync(DeliveryStore.EventsKey(id)));
        AssertTtl(TimeSpan.FromHours(2), await redis.Database.KeyTimeToLiveAsync(DeliveryStore.MonthKey(owner, BillingPeriod.Of(pickup))));

        static void AssertTtl(TimeSpan expected, TimeSpan? actual)
        {
            Assert.NotNull(actual);
            Assert.InRange(actual.Value, expected - TimeSpan.FromMinutes(1), expected);
        }
    }

    [Fact]
    public async Task Every_redis_call_is_a_traced_and_counted_dependency()
    {
        using var metrics = new MetricRecorder(DeliveryTelemetry.RedisCalls);
        using var trace = new TraceRecorder();
        var id = NewId();

        await _service.Client.PutJsonAsync($"api/deliveries/{id}", Schedule("owner-t", DateTimeOffset.UtcNow));
        await _service.Client.GetAsync($"api/deliveries/{id}/status");
        trace.StopRoot();

        Assert.True(await Eventually.TrueAsync(() => trace.Spans.Count(s => s.Kind == ActivityKind.Server) == 2, TimeSpan.FromSeconds(5)));
        var redisSpans = trace.Spans.Where(s => s.Source.Name == DeliveryTelemetry.SourceName).ToList();
        Assert.Equal(["EVAL create-delivery", "GET"], redisSpans.Select(s => s.DisplayName).Order());
        Assert.All(redisSpans, span =>
        {
            Assert.Equal(ActivityKind.Client, span.Kind);
            Assert.Equal("redis", span.GetTagItem("db.system.name"));
            Assert.Equal("127.0.0.1", span.GetTagItem("server.address"));
            Assert.Equal(ActivityKind.Server, trace.Spans.Single(s => s.SpanId == span.ParentSpanId).Kind);
        });
        Assert.True(metrics.Sum(DeliveryTelemetry.RedisCalls, ("db.operation.name", "EVAL"), ("outcome", "success")) >= 1);
        Assert.True(metrics.Sum(DeliveryTelemetry.RedisCalls, ("db.operation.name", "GET"), ("outcome", "success")) >= 1);
    }

    [Fact]
    public async Task Invalid_or_missing_fields_are_listed_in_one_400()
    {
        var response = await _service.Client.PutJsonAsync($"api/deliveries/{NewId()}", new DeliverySchedule
        {
            OwnerId = "owner/with/slashes",
            PickupLocation = "north pole",
            PickupTime = new DateTimeOffset(2025, 1, 2, 0, 0, 0, TimeSpan.Zero),
            Deadline = new DateTimeOffset(2025, 1, 1, 0, 0, 0, TimeSpan.Zero),
            DroneId = "drone-1",
        });

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(["deadline", "dropoffLocation", "ownerId", "packageId", "pickupLocation"], await response.InvalidFieldsAsync());
    }

    [Theory]
    [InlineData("ownerId=o&year=2025", "month")]
    [InlineData("ownerId=o&year=1999&month=13", "month,year")]
    [InlineData("year=x&month=1", "ownerId,year")]
    public async Task A_bad_summary_query_is_a_400_naming_each_parameter(string query, string fields)
    {
        var response = await _service.Client.GetAsync($"api/deliveries/summary?{query}");

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(fields.Split(','), await response.InvalidFieldsAsync());
    }

    [Theory]
    [InlineData("{\"ownerId\": ")]
    [InlineData("{\"ownerId\": \"o\", \"expedited\": \"sometimes\"}")]
    [InlineData("{\"ownerId\": \"o\", \"confirmationRequired\": \"Telepathy\"}")]
    public async Task Unreadable_json_is_a_400(string json)
    {
        var response = await _service.Client.SendRawAsync(HttpMethod.Put, $"api/deliveries/{NewId()}", json);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        await response.ProblemAsync();
    }

    [Fact]
    public async Task An_oversized_body_is_refused_with_413()
    {
        var huge = "{\"ownerId\": \"" + new string('x', 2 * 1024 * 1024) + "\"}";

        var response = await _service.Client.SendOversizedAsync(HttpMethod.Put, $"api/deliveries/{NewId()}", huge);

        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
    }

    [Fact]
    public async Task Ready_when_redis_answers()
    {
        var response = await _service.Client.GetAsync("health/ready");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Contains("\"redis\"", await response.Content.ReadAsStringAsync());
    }

    [Fact]
    public async Task Not_ready_and_503_while_redis_is_unreachable()
    {
        await using var service = await StartAsync($"127.0.0.1:{FreePort.Next()},connectTimeout=500,syncTimeout=1000");

        var ready = await service.Client.GetAsync("health/ready");
        var status = await service.Client.GetAsync($"api/deliveries/{NewId()}/status");

        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, status.StatusCode);
        Assert.Equal("Redis is unavailable", (await status.ProblemAsync()).GetProperty("title").GetString());
    }

    [Fact]
    public async Task Becomes_ready_once_a_redis_that_was_down_at_start_comes_up()
    {
        // On a cluster the pods start in any order: a Delivery pod that started first must not stay unready.
        var port = FreePort.Next();
        await using var service = await StartAsync($"127.0.0.1:{port},connectTimeout=500,syncTimeout=1000");
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await service.Client.GetAsync("health/ready")).StatusCode);

        await using var redis = await RedisServer.StartAsync(new RedisServerOptions { Port = port });

        Assert.True(
            await Eventually.TrueAsync(async () => (await service.Client.GetAsync("health/ready")).StatusCode == HttpStatusCode.OK, TimeSpan.FromSeconds(60), TimeSpan.FromMilliseconds(200)),
            "Delivery never became ready after Redis came up.");
        var id = NewId();
        Assert.Equal(HttpStatusCode.NotFound, (await service.Client.GetAsync($"api/deliveries/{id}/status")).StatusCode);
    }

    internal static DeliverySchedule Schedule(string ownerId, DateTimeOffset pickup) => new()
    {
        OwnerId = ownerId,
        PickupLocation = "47.64,-122.13",
        DropoffLocation = "47.61,-122.20",
        PickupTime = pickup,
        Deadline = pickup.AddHours(4),
        Expedited = false,
        ConfirmationRequired = ConfirmationType.Picture,
        PackageId = "pkg-" + NewIdFrom(ownerId, pickup),
        DroneId = "drone-0007",
    };

    internal static Task<ServiceApp> StartAsync(string redisConnection, Dictionary<string, string?>? settings = null) =>
        ServiceApp.StartAsync(Definitions.Delivery, new Dictionary<string, string?>(settings ?? []) { ["Redis:ConnectionString"] = redisConnection });

    private static string NewId() => Guid.NewGuid().ToString("N");

    // The package id only has to be a valid id; derive it so two schedules of one test are equal.
    private static string NewIdFrom(string ownerId, DateTimeOffset pickup) => $"{ownerId.GetHashCode():x8}{pickup.UtcTicks:x}";

    private async Task<long> CountAsync(string owner, int year, int month) =>
        (await (await _service.Client.GetAsync($"api/deliveries/summary?ownerId={owner}&year={year}&month={month}")).ReadAsync<DeliverySummary>()).Count;
}
