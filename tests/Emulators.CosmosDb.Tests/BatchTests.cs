using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// TransactionalBatch through the .NET SDK (Gateway mode): the SDK sends the operations as a binary
/// HybridRow/RecordIO body and reads the results in the same form.
/// </summary>
public sealed class BatchTests : IAsyncLifetime
{
    private CosmosEmulator _emulator = null!;
    private CosmosClient _client = null!;
    private Container _container = null!;

    public async Task InitializeAsync()
    {
        _emulator = await CosmosTestHost.StartAsync(o => o.DefaultPhysicalPartitions = 4);
        _client = CosmosTestHost.Client(_emulator);
        _container = await CosmosTestHost.ContainerAsync(_client, "/pk");
    }

    public async Task DisposeAsync()
    {
        _client.Dispose();
        await _emulator.DisposeAsync();
    }

    [Fact]
    public async Task Batch_of_every_operation_succeeds_with_its_status_codes_and_etags()
    {
        var pk = new PartitionKey("owner-1");
        await _container.CreateItemAsync(new BatchItem("existing", "owner-1", 1), pk);
        await _container.CreateItemAsync(new BatchItem("doomed", "owner-1", 1), pk);
        var existing = await _container.ReadItemAsync<BatchItem>("existing", pk);

        using var response = await _container.CreateTransactionalBatch(pk)
            .CreateItem(new BatchItem("new", "owner-1", 2))
            .UpsertItem(new BatchItem("upserted", "owner-1", 3))
            .ReadItem("new")
            .ReplaceItem("existing", new BatchItem("existing", "owner-1", 10), new TransactionalBatchItemRequestOptions { IfMatchEtag = existing.ETag })
            .PatchItem("new", [PatchOperation.Increment("/weight", 5)])
            .DeleteItem("doomed")
            .ExecuteAsync();

        Assert.True(response.IsSuccessStatusCode, response.ErrorMessage);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(6, response.Count);
        Assert.Equal(
            [HttpStatusCode.Created, HttpStatusCode.Created, HttpStatusCode.OK, HttpStatusCode.OK, HttpStatusCode.OK, HttpStatusCode.NoContent],
            response.Select(r => r.StatusCode));
        Assert.All(response.Take(5), r => Assert.False(string.IsNullOrEmpty(r.ETag)));
        Assert.Equal(2, response.GetOperationResultAtIndex<BatchItem>(2).Resource.Weight);
        Assert.Equal(7, response.GetOperationResultAtIndex<BatchItem>(4).Resource.Weight);
        Assert.True(response.RequestCharge > 5 * 5, "the batch is charged for each of its writes");

        Assert.Equal(7, (await _container.ReadItemAsync<BatchItem>("new", pk)).Resource.Weight);
        Assert.Equal(10, (await _container.ReadItemAsync<BatchItem>("existing", pk)).Resource.Weight);
        var gone = await Assert.ThrowsAsync<CosmosException>(() => _container.ReadItemAsync<BatchItem>("doomed", pk));
        Assert.Equal(HttpStatusCode.NotFound, gone.StatusCode);
    }

    [Fact]
    public async Task A_conflicting_create_fails_the_whole_batch_and_nothing_is_written()
    {
        // The service answers a failed transactional batch 207 Multi-Status; the SDK reports the failing
        // operation's status (409) as the batch's and 424 Failed Dependency for every other operation.
        var pk = new PartitionKey("owner-2");
        var taken = await _container.CreateItemAsync(new BatchItem("taken", "owner-2", 1), pk);

        using var response = await _container.CreateTransactionalBatch(pk)
            .CreateItem(new BatchItem("first", "owner-2", 1))
            .ReplaceItem("taken", new BatchItem("taken", "owner-2", 99))
            .CreateItem(new BatchItem("taken", "owner-2", 1))
            .CreateItem(new BatchItem("last", "owner-2", 1))
            .ExecuteAsync();

        Assert.False(response.IsSuccessStatusCode);
        Assert.Equal(HttpStatusCode.Conflict, response.StatusCode);
        Assert.Equal(
            [(HttpStatusCode)424, (HttpStatusCode)424, HttpStatusCode.Conflict, (HttpStatusCode)424],
            response.Select(r => r.StatusCode));
        Assert.Equal(1, await CountAsync("owner-2"));
        var after = await _container.ReadItemAsync<BatchItem>("taken", pk);
        Assert.Equal(1, after.Resource.Weight);
        Assert.Equal(taken.ETag, after.ETag);
    }

    [Fact]
    public async Task A_stale_if_match_fails_the_batch_with_412()
    {
        var pk = new PartitionKey("owner-3");
        var created = await _container.CreateItemAsync(new BatchItem("b3", "owner-3", 1), pk);
        await _container.ReplaceItemAsync(new BatchItem("b3", "owner-3", 2), "b3", pk);

        using var response = await _container.CreateTransactionalBatch(pk)
            .UpsertItem(new BatchItem("other", "owner-3", 1))
            .ReplaceItem("b3", new BatchItem("b3", "owner-3", 3), new TransactionalBatchItemRequestOptions { IfMatchEtag = created.ETag })
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.PreconditionFailed, response.StatusCode);
        Assert.Equal([(HttpStatusCode)424, HttpStatusCode.PreconditionFailed], response.Select(r => r.StatusCode));
        Assert.Equal(1, await CountAsync("owner-3"));
    }

    [Fact]
    public async Task A_batch_of_101_operations_is_refused()
    {
        var batch = _container.CreateTransactionalBatch(new PartitionKey("owner-4"));
        for (var i = 0; i < 101; i++)
        {
            batch.CreateItem(new BatchItem($"b4-{i}", "owner-4", i));
        }

        using var response = await batch.ExecuteAsync();

        // The service's limit is 100 operations; the SDK refuses more with 400 before sending (the
        // emulator answers a request with more 400 too, see the JavaScript suite).
        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(0, await CountAsync("owner-4"));
    }

    [Fact]
    public async Task A_batch_spanning_two_logical_partitions_is_refused_and_writes_nothing()
    {
        // A transactional batch is scoped to one logical partition: an item of another partition key
        // is answered 400 (sub-status 1001, partition key mismatch) and fails the batch.
        using var response = await _container.CreateTransactionalBatch(new PartitionKey("owner-5a"))
            .CreateItem(new BatchItem("b5-a", "owner-5a", 1))
            .CreateItem(new BatchItem("b5-b", "owner-5b", 1))
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal([(HttpStatusCode)424, HttpStatusCode.BadRequest], response.Select(r => r.StatusCode));
        Assert.Equal(0, await CountAsync("owner-5a"));
        Assert.Equal(0, await CountAsync("owner-5b"));
    }

    [Fact]
    public async Task A_throttled_batch_is_answered_429_as_a_whole()
    {
        using var impatient = CosmosTestHost.Client(_emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);
        var container = await CosmosTestHost.ContainerAsync(impatient, "/pk", throughput: 400, id: "throttled");
        var pk = new PartitionKey("owner-6");
        TransactionalBatchResponse? throttled = null;
        for (var round = 0; round < 20 && throttled is null; round++)
        {
            var batch = container.CreateTransactionalBatch(pk);
            for (var i = 0; i < 20; i++)
            {
                batch.UpsertItem(new BatchItem($"b6-{i}", "owner-6", round));
            }

            var response = await batch.ExecuteAsync();
            if (response.StatusCode == HttpStatusCode.TooManyRequests)
            {
                throttled = response;
            }
            else
            {
                Assert.True(response.IsSuccessStatusCode, response.ErrorMessage);
                response.Dispose();
            }
        }

        Assert.NotNull(throttled);
        Assert.True(throttled.RetryAfter > TimeSpan.Zero);
        Assert.All(throttled, r => Assert.Equal(HttpStatusCode.TooManyRequests, r.StatusCode));
        throttled.Dispose();
    }

    private async Task<int> CountAsync(string owner) =>
        (await _container.GetItemQueryIterator<int>(
            new QueryDefinition("SELECT VALUE COUNT(1) FROM c"),
            requestOptions: new QueryRequestOptions { PartitionKey = new PartitionKey(owner) }).ToListAsync()).Single();
}

public sealed record BatchItem(string Id, string Pk, double Weight);
