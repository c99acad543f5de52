using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Bulk execution through the .NET SDK (<c>AllowBulkExecution</c>): the SDK groups concurrent point
/// operations per partition key range into non-atomic batch requests; each operation succeeds or
/// fails on its own and throttled operations are retried on their own.
/// </summary>
public sealed class BulkTests : IAsyncLifetime
{
    private CosmosEmulator _emulator = null!;
    private CosmosClient _client = null!;

    public async Task InitializeAsync()
    {
        _emulator = await CosmosTestHost.StartAsync(o => o.DefaultPhysicalPartitions = 4);
        _client = CosmosTestHost.Client(_emulator, o => o.AllowBulkExecution = true);
    }

    public async Task DisposeAsync()
    {
        _client.Dispose();
        await _emulator.DisposeAsync();
    }

    [Fact]
    public async Task Bulk_of_500_creates_into_a_throttled_container_writes_every_item_once()
    {
        // 400 RU/s over four partitions: 500 creates of ~5.7 RU need about seven seconds of budget, so
        // the emulator answers the operations it has no budget for 429 with a retry-after and the SDK
        // waits and retries only those (at most 9 times each, as against the service).
        var container = await CosmosTestHost.ContainerAsync(_client, "/pk", throughput: 400, id: "bulk");
        var before = _emulator.LastRequestSequence;

        var responses = await Task.WhenAll(Enumerable.Range(0, 500).Select(i =>
            container.CreateItemAsync(new BatchItem($"bulk-{i}", $"owner-{i % 20}", i), new PartitionKey($"owner-{i % 20}"))));

        Assert.All(responses, r => Assert.Equal(HttpStatusCode.Created, r.StatusCode));
        var ids = await container.GetItemQueryIterator<string>("SELECT VALUE c.id FROM c").ToListAsync();
        Assert.Equal(500, ids.Count);
        Assert.Equal(500, ids.Distinct().Count());
        var bulk = _emulator.GetRequests(before).Where(r => r.Operation == "Bulk").ToList();
        Assert.NotEmpty(bulk);
        Assert.True(bulk.Count < 500, "operations were grouped into batch requests");
        Assert.Contains(bulk, r => r.StatusCode is 207 or 429);
    }

    [Fact]
    public async Task Bulk_operations_succeed_or_fail_on_their_own()
    {
        var container = await CosmosTestHost.ContainerAsync(_client, "/pk");
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
}
