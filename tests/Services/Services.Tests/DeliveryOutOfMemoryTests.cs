using System.Diagnostics;
using System.Net;
using DroneDelivery.Delivery;
using DroneDelivery.LocalProcesses;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Logging;
using StackExchange.Redis;

namespace DroneDelivery.Services.Tests;

/// <summary>Step B1: Redis reaches maxmemory with noeviction and refuses writes.</summary>
public sealed class DeliveryOutOfMemoryTests
{
    [Fact]
    public async Task A_full_redis_makes_scheduling_a_503_that_names_the_out_of_memory_cause()
    {
        await using var server = await RedisServer.StartAsync(new RedisServerOptions { MaxMemory = "4mb", MaxMemoryPolicy = "noeviction" });
        await FillAsync(server.ConnectionString);
        await using var service = await DeliveryTests.StartAsync(server.ConnectionString);
        using var metrics = new MetricRecorder(DeliveryTelemetry.RedisOutOfMemoryErrors, DeliveryTelemetry.RedisCalls);
        using var trace = new TraceRecorder();

        var response = await service.Client.PutJsonAsync(
            $"api/deliveries/{Guid.NewGuid():N}", DeliveryTests.Schedule("owner-oom", DateTimeOffset.UtcNow));
        trace.StopRoot();

        Assert.Equal(HttpStatusCode.ServiceUnavailable, response.StatusCode);
        var problem = await response.ProblemAsync();
        Assert.Equal("Redis is out of memory", problem.GetProperty("title").GetString());
        Assert.Contains("OOM command not allowed", problem.GetProperty("detail").GetString());

        var log = Assert.Single(service.Logs.Entries, e => e.EventName == "RedisOutOfMemory");
        Assert.Equal(LogLevel.Error, log.Level);
        Assert.Contains("OOM command not allowed", log.Message);

        Assert.True(await Eventually.TrueAsync(() => trace.Spans.Any(s => s.Kind == ActivityKind.Server), TimeSpan.FromSeconds(5)));
        var redisSpan = Assert.Single(trace.Spans, s => s.Source.Name == DeliveryTelemetry.SourceName);
        Assert.Equal(ActivityStatusCode.Error, redisSpan.Status);
        Assert.Equal(DeliveryTelemetry.OutOfMemoryErrorType, redisSpan.GetTagItem("error.type"));
        var request = Assert.Single(trace.Spans, s => s.Kind == ActivityKind.Server);
        Assert.Equal(DeliveryTelemetry.OutOfMemoryErrorType, request.GetTagItem("error.type"));
        Assert.Equal(ActivityStatusCode.Error, request.Status);

        Assert.Equal(1, metrics.Sum(DeliveryTelemetry.RedisOutOfMemoryErrors, ("db.operation.name", "EVAL")));
        Assert.Equal(1, metrics.Sum(DeliveryTelemetry.RedisCalls, ("db.operation.name", "EVAL"), ("outcome", DeliveryTelemetry.Outcomes.OutOfMemory)));
    }

    [Fact]
    public async Task Reads_still_work_when_redis_is_full()
    {
        await using var server = await RedisServer.StartAsync(new RedisServerOptions { MaxMemory = "4mb", MaxMemoryPolicy = "noeviction" });
        await using var service = await DeliveryTests.StartAsync(server.ConnectionString);
        var id = Guid.NewGuid().ToString("N");
        Assert.Equal(HttpStatusCode.Created, (await service.Client.PutJsonAsync($"api/deliveries/{id}", DeliveryTests.Schedule("owner-full", DateTimeOffset.UtcNow))).StatusCode);
        await FillAsync(server.ConnectionString);

        var status = await service.Client.GetAsync($"api/deliveries/{id}/status");

        Assert.Equal(HttpStatusCode.OK, status.StatusCode);
    }

    /// <summary>
    /// Writes values until Redis refuses with OOM, then lowers maxmemory below what is used, so that
    /// freed client buffers cannot bring it back under the limit while the test runs.
    /// </summary>
    private static async Task FillAsync(string connectionString)
    {
        using var client = await ConnectionMultiplexer.ConnectAsync(connectionString + ",allowAdmin=true");
        var db = client.GetDatabase();
        var value = new string('x', 64 * 1024);
        for (var i = 0; i < 10_000; i++)
        {
            try
            {
                await db.StringSetAsync($"filler:{i}", value);
            }
            catch (RedisServerException e) when (e.Message.StartsWith("OOM", StringComparison.Ordinal))
            {
                await client.GetServer(client.GetEndPoints()[0]).ConfigSetAsync("maxmemory", "2mb");
                return;
            }
        }

        Assert.Fail("Redis never reported OOM.");
    }
}
