using System.Net;
using DroneDelivery.Emulators.CosmosDb.Capacity;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// RU budgets, the latency model and per-second metrics follow the emulator's injected clock, so a
/// test moves time instead of waiting for it and a slow machine changes nothing.
/// </summary>
public sealed class ClockTests
{
    [Fact]
    public void A_partition_in_debt_is_admitted_again_once_the_clock_has_repaid_it()
    {
        var time = new FakeTimeProvider();
        var pool = new ThroughputPool(throughput: 100, partitionCount: 1, burstSeconds: 1, time);

        Assert.True(pool.TryAdmit(0, out _));
        pool.Charge(0, 150);
        Assert.Equal(-50, pool.Available(0), precision: 6);

        // 50 RU of debt at 100 RU/s, plus one average request (15.9 RU after one 150 RU charge).
        Assert.False(pool.TryAdmit(0, out var retryAfter));
        Assert.InRange(retryAfter, 659, 660);

        time.Advance(TimeSpan.FromMilliseconds(499));
        Assert.False(pool.TryAdmit(0, out _));
        time.Advance(TimeSpan.FromMilliseconds(2));
        Assert.True(pool.TryAdmit(0, out _));

        // The bucket banks at most BurstSeconds of the rate, however long the partition idles.
        time.Advance(TimeSpan.FromHours(1));
        Assert.Equal(100, pool.Available(0), precision: 6);
    }

    [Fact]
    public async Task A_throttled_partition_serves_the_sdk_again_after_the_clock_moves_and_not_before()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var emulator = await CosmosTestHost.StartAsync(o =>
        {
            o.TimeProvider = time;
            o.DefaultPhysicalPartitions = 1;
        });
        using var client = CosmosTestHost.Client(emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk", throughput: 400);

        var written = 0;
        CosmosException? throttled = null;
        while (throttled is null)
        {
            try
            {
                await container.CreateItemAsync(new { id = $"item-{written}", pk = "a", payload = new string('x', 2_000) }, new PartitionKey("a"));
                written++;
            }
            catch (CosmosException e) when (e.StatusCode == HttpStatusCode.TooManyRequests)
            {
                throttled = e;
            }

            Assert.True(written < 1_000, "400 RU/s never throttled: the budget is not being spent.");
        }

        // The clock has not moved, so the debt is still owed: the next write is refused too.
        var again = await Assert.ThrowsAsync<CosmosException>(() => container.CreateItemAsync(new { id = "next", pk = "a" }, new PartitionKey("a")));
        Assert.Equal(HttpStatusCode.TooManyRequests, again.StatusCode);
        Assert.True(emulator.GetMetrics(1).Container("test", "items")!.Partitions.Single().AvailableRequestUnits <= 0);

        time.Advance(TimeSpan.FromSeconds(1));
        var response = await container.CreateItemAsync(new { id = "next", pk = "a" }, new PartitionKey("a"));
        Assert.Equal(HttpStatusCode.Created, response.StatusCode);

        var partition = emulator.GetMetrics(5).Container("test", "items")!.Partitions.Single();
        var second = Assert.Single(partition.Seconds, s => s.UnixSeconds == time.GetUtcNow().ToUnixTimeSeconds());
        Assert.Equal(1, second.Requests);
    }

    [Fact]
    public async Task The_modelled_latency_is_waited_on_the_emulator_s_clock()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        var latency = new CosmosDb.Configuration.LatencyOptions { FixedMilliseconds = 0, PerDocumentMilliseconds = 0, ThrottledMilliseconds = 0 };
        await using var emulator = await CosmosTestHost.StartAsync(o =>
        {
            o.TimeProvider = time;
            o.Latency = latency;
        });
        using var client = CosmosTestHost.Client(emulator, o => o.RequestTimeout = TimeSpan.FromSeconds(30));
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        await container.CreateItemAsync(new { id = "1", pk = "a" }, new PartitionKey("a"));
        latency.FixedMilliseconds = TimeSpan.FromMinutes(10).TotalMilliseconds;
        var before = emulator.LastRequestSequence;

        // Ten modelled minutes pass in moments of real time: only the emulator's clock is moved.
        var read = container.ReadItemAsync<object>("1", new PartitionKey("a"));
        while (!read.IsCompleted)
        {
            time.Advance(TimeSpan.FromMinutes(1));
            await Task.WhenAny(read, Task.Delay(TimeSpan.FromMilliseconds(20)));
        }

        Assert.Equal(HttpStatusCode.OK, (await read).StatusCode);
        var request = Assert.Single(emulator.GetRequests(before), r => r.Operation == CosmosEmulatorOperations.ReadItem);
        Assert.Equal(TimeSpan.FromMinutes(10).TotalMilliseconds, request.ModelledLatencyMilliseconds);
    }
}
