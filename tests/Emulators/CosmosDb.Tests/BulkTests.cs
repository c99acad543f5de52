using System.Net;
using System.Text;
using System.Text.Json;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Bulk execution through the .NET SDK (<c>AllowBulkExecution</c>): the SDK groups concurrent point
/// operations per partition key range into non-atomic batch requests; each operation succeeds or
/// fails on its own and throttled operations are retried on their own.
/// </summary>
public sealed class BulkTests() : EmulatorTest(physicalPartitions: 4)
{
    protected override CosmosClient CreateClient(CosmosEmulator emulator) => CosmosTestHost.Client(emulator, o => o.AllowBulkExecution = true);

    [Fact]
    public async Task Bulk_of_500_creates_into_a_throttled_container_writes_every_item_once()
    {
        // 400 RU/s over four partitions: 500 creates of ~5.7 RU need about seven seconds of budget, so
        // the emulator answers the operations it has no budget for 429 with a retry-after and the SDK
        // waits and retries only those (at most 9 times each, as against the service).
        var container = await CosmosTestHost.ContainerAsync(Client, "/pk", throughput: 400, id: "bulk");
        var before = Emulator.LastRequestSequence;

        var responses = await Task.WhenAll(Enumerable.Range(0, 500).Select(i =>
            container.CreateItemAsync(new BatchItem($"bulk-{i}", $"owner-{i % 20}", i), new PartitionKey($"owner-{i % 20}"))));

        Assert.All(responses, r => Assert.Equal(HttpStatusCode.Created, r.StatusCode));
        var ids = await container.GetItemQueryIterator<string>("SELECT VALUE c.id FROM c").ToListAsync();
        Assert.Equal(500, ids.Count);
        Assert.Equal(500, ids.Distinct().Count());
        var bulk = Emulator.GetRequests(before).Where(r => r.Operation == "Bulk").ToList();
        Assert.NotEmpty(bulk);
        Assert.True(bulk.Count < 500, "operations were grouped into batch requests");
        Assert.Contains(bulk, r => r.StatusCode is 207 or 429);
    }

    [Fact]
    public async Task Bulk_operations_succeed_or_fail_on_their_own()
    {
        var container = await CosmosTestHost.ContainerAsync(Client, "/pk");
        await container.CreateItemAsync(new BatchItem("taken", "owner-1", 1), new PartitionKey("owner-1"));

        var tasks = new List<Task<ItemResponse<BatchItem>>>
        {
            container.CreateItemAsync(new BatchItem("taken", "owner-1", 2), new PartitionKey("owner-1")),
            container.CreateItemAsync(new BatchItem("free", "owner-1", 2), new PartitionKey("owner-1")),
            container.UpsertItemAsync(new BatchItem("taken", "owner-1", 3), new PartitionKey("owner-1")),
            container.ReadItemAsync<BatchItem>("missing", new PartitionKey("owner-1")),
        };
        await Task.WhenAll(tasks.Select(t => t.ContinueWith(_ => { }, TaskScheduler.Default)));

        Assert.Equal(HttpStatusCode.Conflict, Assert.IsType<CosmosException>(tasks[0].Exception!.InnerException).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await tasks[1]).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await tasks[2]).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, Assert.IsType<CosmosException>(tasks[3].Exception!.InnerException).StatusCode);
        Assert.Equal(3, (await container.ReadItemAsync<BatchItem>("taken", new PartitionKey("owner-1"))).Resource.Weight);
    }

    [Fact]
    public async Task Concurrent_bulk_requests_to_one_partition_share_its_budget()
    {
        // A clock that does not move: one partition of 400 RU/s holds 400 RU (one second of burst) and never
        // refills, so it can admit about 400 / 5.7 = 71 creates in all. Each operation is admitted while
        // the partition has budget left and pays at once, so twenty concurrent bulk requests of 100 creates
        // share those 400 RU; each request may overshoot by the one operation it admitted last.
        await using var emulator = await OnePartitionAsync(new FakeTimeProvider(DateTimeOffset.UtcNow));
        using var client = CosmosTestHost.Client(emulator);
        await CosmosTestHost.ContainerAsync(client, "/pk", throughput: 400, id: "shared");
        const int requests = 20;
        using var http = new HttpClient();

        var answers = await Task.WhenAll(Enumerable.Range(0, requests).Select(async r =>
        {
            using var request = BulkRequest(emulator, Enumerable.Range(0, 100).Select(i => new BatchItem($"r{r}-{i}", $"owner-{i % 10}", i)));
            using var response = await http.SendAsync(request);
            return (response.StatusCode, Body: await response.Content.ReadAsStringAsync());
        }));

        var created = answers.Where(a => a.StatusCode != HttpStatusCode.TooManyRequests)
            .Sum(a => JsonDocument.Parse(a.Body).RootElement.EnumerateArray().Count(r => r.GetProperty("statusCode").GetInt32() == 201));
        // Counted from the metrics: a query would need budget the frozen partition no longer has.
        Assert.Equal(created, emulator.GetMetrics().Container("test", "shared")!.Partitions.Single().Documents);
        Assert.InRange(created, (int)(400 / 5.7), (int)Math.Ceiling(400 / 5.7) + requests);
    }

    [Fact]
    public async Task Throttled_bulk_operations_queue_on_the_emulators_clock()
    {
        // In the .NET SDK's form, the n-th throttled operation still waiting is told to come back after the
        // debt and the n - 1 writes before it are paid. The queue runs on the emulator's clock: once the fake
        // clock passes an operation's time, it no longer counts, however little real time went by.
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var emulator = await OnePartitionAsync(time);
        using var client = CosmosTestHost.Client(emulator);
        using var bulk = CosmosTestHost.Client(emulator, o =>
        {
            o.AllowBulkExecution = true;
            o.MaxRetryAttemptsOnRateLimitedRequests = 0;
        });
        var container = await CosmosTestHost.ContainerAsync(client, "/pk", throughput: 400, id: "queued");
        var bulkContainer = bulk.GetContainer("test", "queued");
        var large = new string('x', 300 * 1024);
        double Available() => emulator.GetMetrics().Container("test", "queued")!.Partitions.Single().AvailableRequestUnits;
        async Task<TimeSpan> ThrottledAsync(string id)
        {
            var error = await Assert.ThrowsAsync<CosmosException>(() => bulkContainer.CreateItemAsync(new BatchItem(id, "owner-1", 1), new PartitionKey("owner-1")));
            Assert.Equal(HttpStatusCode.TooManyRequests, error.StatusCode);
            return error.RetryAfter!.Value;
        }

        static TimeSpan Expected(double debt, int writes) => TimeSpan.FromMilliseconds(Math.Ceiling((debt + (writes * 5.7)) / 400 * 1000));

        // A 300 KB write puts the partition about 1,300 RU in debt; a bulk create then waits for it and for itself.
        await container.UpsertItemAsync(new { id = "large", pk = "owner-1", large }, new PartitionKey("owner-1"));
        var debt = -Available();
        Assert.InRange((await ThrottledAsync("a")) - Expected(debt, 1), TimeSpan.FromMilliseconds(-1), TimeSpan.FromMilliseconds(1));
        Assert.InRange((await ThrottledAsync("b")) - Expected(debt, 2), TimeSpan.FromMilliseconds(-1), TimeSpan.FromMilliseconds(1));

        // Past both operations' times the debt is repaid; a second large write makes a new one. The queue is
        // empty again: the next operation waits for the new debt and itself only.
        time.Advance(TimeSpan.FromSeconds(5));
        await container.UpsertItemAsync(new { id = "large", pk = "owner-1", large }, new PartitionKey("owner-1"));
        debt = -Available();
        Assert.InRange((await ThrottledAsync("c")) - Expected(debt, 1), TimeSpan.FromMilliseconds(-1), TimeSpan.FromMilliseconds(1));
    }

    /// <summary>An emulator whose containers have one physical partition, on a fake clock (the SDK signs with the real time, so it starts there).</summary>
    private static Task<CosmosEmulator> OnePartitionAsync(FakeTimeProvider time) => CosmosTestHost.StartAsync(o =>
    {
        o.DefaultPhysicalPartitions = 1;
        o.TimeProvider = time;
    });

    /// <summary>A bulk (non-atomic batch) request in the JSON form, every operation with its own partition key.</summary>
    private static HttpRequestMessage BulkRequest(CosmosEmulator emulator, IEnumerable<BatchItem> items)
    {
        const string link = "dbs/test/colls/shared";
        var request = CosmosTestHost.SignedRequest(emulator, HttpMethod.Post, link + "/docs", "docs", link);
        var operations = items.Select(item => new
        {
            operationType = "Create",
            partitionKey = JsonSerializer.Serialize(new[] { item.Pk }),
            resourceBody = new { id = item.Id, pk = item.Pk, weight = item.Weight },
        });
        request.Content = new StringContent(JsonSerializer.Serialize(operations), Encoding.UTF8, "application/json");
        request.Headers.TryAddWithoutValidation("x-ms-cosmos-is-batch-request", "True");
        request.Headers.TryAddWithoutValidation("x-ms-cosmos-batch-atomic", "False");
        return request;
    }
}
