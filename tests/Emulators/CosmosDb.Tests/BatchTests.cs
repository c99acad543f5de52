using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// TransactionalBatch through the .NET SDK (Gateway mode): the SDK sends the operations as a binary
/// HybridRow/RecordIO body and reads the results in the same form.
/// </summary>
public sealed class BatchTests() : EmulatorTest("/pk")
{
    [Fact]
    public async Task Batch_of_every_operation_succeeds_with_its_status_codes_and_etags()
    {
        var pk = new PartitionKey("owner-1");
        await Container.CreateItemAsync(new BatchItem("existing", "owner-1", 1), pk);
        await Container.CreateItemAsync(new BatchItem("doomed", "owner-1", 1), pk);
        var existing = await Container.ReadItemAsync<BatchItem>("existing", pk);

        using var response = await Container.CreateTransactionalBatch(pk)
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

        Assert.Equal(7, (await Container.ReadItemAsync<BatchItem>("new", pk)).Resource.Weight);
        Assert.Equal(10, (await Container.ReadItemAsync<BatchItem>("existing", pk)).Resource.Weight);
        var gone = await Assert.ThrowsAsync<CosmosException>(() => Container.ReadItemAsync<BatchItem>("doomed", pk));
        Assert.Equal(HttpStatusCode.NotFound, gone.StatusCode);
    }

    [Fact]
    public async Task A_conflicting_create_fails_the_whole_batch_and_nothing_is_written()
    {
        // The service answers a failed transactional batch 207 Multi-Status; the SDK reports the failing
        // operation's status (409) as the batch's and 424 Failed Dependency for every other operation.
        var pk = new PartitionKey("owner-2");
        var taken = await Container.CreateItemAsync(new BatchItem("taken", "owner-2", 1), pk);

        using var response = await Container.CreateTransactionalBatch(pk)
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
        var after = await Container.ReadItemAsync<BatchItem>("taken", pk);
        Assert.Equal(1, after.Resource.Weight);
        Assert.Equal(taken.ETag, after.ETag);
    }

    [Fact]
    public async Task A_stale_if_match_fails_the_batch_with_412()
    {
        var pk = new PartitionKey("owner-3");
        var created = await Container.CreateItemAsync(new BatchItem("b3", "owner-3", 1), pk);
        await Container.ReplaceItemAsync(new BatchItem("b3", "owner-3", 2), "b3", pk);

        using var response = await Container.CreateTransactionalBatch(pk)
            .UpsertItem(new BatchItem("other", "owner-3", 1))
            .ReplaceItem("b3", new BatchItem("b3", "owner-3", 3), new TransactionalBatchItemRequestOptions { IfMatchEtag = created.ETag })
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.PreconditionFailed, response.StatusCode);
        Assert.Equal([(HttpStatusCode)424, HttpStatusCode.PreconditionFailed], response.Select(r => r.StatusCode));
        Assert.Equal(1, await CountAsync("owner-3"));
    }

    [Fact]
    public async Task If_none_match_makes_a_read_not_modified_without_failing_the_batch()
    {
        // The service answers a read whose If-None-Match matches the item 304 Not Modified, and a 304 does
        // not fail a transactional batch: the other operations are committed.
        var pk = new PartitionKey("owner-7");
        var current = await Container.CreateItemAsync(new BatchItem("b7", "owner-7", 1), pk);

        using var response = await Container.CreateTransactionalBatch(pk)
            .ReadItem("b7", new TransactionalBatchItemRequestOptions { IfNoneMatchEtag = current.ETag })
            .ReadItem("b7", new TransactionalBatchItemRequestOptions { IfNoneMatchEtag = "\"an-older-etag\"" })
            .CreateItem(new BatchItem("b7-new", "owner-7", 1))
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal([HttpStatusCode.NotModified, HttpStatusCode.OK, HttpStatusCode.Created], response.Select(r => r.StatusCode));
        Assert.Equal(current.ETag, response[0].ETag);
        Assert.Equal(1, response.GetOperationResultAtIndex<BatchItem>(1).Resource.Weight);
        Assert.Equal(2, await CountAsync("owner-7"));
    }

    [Fact]
    public async Task If_none_match_on_a_write_fails_the_batch_with_412()
    {
        var pk = new PartitionKey("owner-8");
        var current = await Container.CreateItemAsync(new BatchItem("b8", "owner-8", 1), pk);

        using var replace = await Container.CreateTransactionalBatch(pk)
            .UpsertItem(new BatchItem("b8-other", "owner-8", 1))
            .ReplaceItem("b8", new BatchItem("b8", "owner-8", 5), new TransactionalBatchItemRequestOptions { IfNoneMatchEtag = current.ETag })
            .ExecuteAsync();
        using var upsert = await Container.CreateTransactionalBatch(pk)
            .UpsertItem(new BatchItem("b8", "owner-8", 6), new TransactionalBatchItemRequestOptions { IfNoneMatchEtag = "*" })
            .ExecuteAsync();
        using var changed = await Container.CreateTransactionalBatch(pk)
            .ReplaceItem("b8", new BatchItem("b8", "owner-8", 7), new TransactionalBatchItemRequestOptions { IfNoneMatchEtag = "\"an-older-etag\"" })
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.PreconditionFailed, replace.StatusCode);
        Assert.Equal([(HttpStatusCode)424, HttpStatusCode.PreconditionFailed], replace.Select(r => r.StatusCode));
        Assert.Equal(HttpStatusCode.PreconditionFailed, upsert.StatusCode);
        Assert.True(changed.IsSuccessStatusCode, changed.ErrorMessage);
        Assert.Equal(1, await CountAsync("owner-8"));
        Assert.Equal(7, (await Container.ReadItemAsync<BatchItem>("b8", pk)).Resource.Weight);
    }

    [Theory]
    [InlineData("timeToLiveInSeconds")]
    [InlineData("binaryId")]
    [InlineData("effectivePartitionKey")]
    public async Task A_batch_field_the_emulator_does_not_model_is_refused_with_a_400_naming_it(string field)
    {
        // The SDK writes these request properties into the operation's HybridRow; items that would expire
        // or be routed or identified another way are refused, never written as if the field were absent.
        var properties = field switch
        {
            "timeToLiveInSeconds" => new Dictionary<string, object> { ["x-ms-time-to-live-in-seconds"] = "60" },
            "binaryId" => new Dictionary<string, object> { ["x-ms-binary-id"] = new byte[] { 0x12, 0x34, 0x56, 0x78 } },
            _ => new Dictionary<string, object>
            {
                ["x-ms-effective-partition-key"] = new byte[] { 0x12, 0x34, 0x56, 0x78 },
                ["x-ms-effective-partition-key-string"] = "12345678",
            },
        };
        var options = new TransactionalBatchItemRequestOptions { Properties = properties };

        using var response = await Container.CreateTransactionalBatch(new PartitionKey("owner-9"))
            .CreateItem(new BatchItem("b9", "owner-9", 1), options)
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Contains(field, response.ErrorMessage, StringComparison.Ordinal);
        Assert.Equal(0, await CountAsync("owner-9"));
    }

    [Fact]
    public async Task An_indexing_directive_that_excludes_the_item_is_refused_in_a_batch_and_alone()
    {
        // Every item is indexed here, so an excluded item would show in queries the service leaves it out of.
        var exclude = new TransactionalBatchItemRequestOptions { IndexingDirective = IndexingDirective.Exclude };
        using var batch = await Container.CreateTransactionalBatch(new PartitionKey("owner-10"))
            .CreateItem(new BatchItem("b10", "owner-10", 1), exclude)
            .ExecuteAsync();
        var alone = await Assert.ThrowsAsync<CosmosException>(() => Container.CreateItemAsync(
            new BatchItem("b10", "owner-10", 1), new PartitionKey("owner-10"), new ItemRequestOptions { IndexingDirective = IndexingDirective.Exclude }));
        using var included = await Container.CreateTransactionalBatch(new PartitionKey("owner-10"))
            .CreateItem(new BatchItem("b10", "owner-10", 1), new TransactionalBatchItemRequestOptions { IndexingDirective = IndexingDirective.Include })
            .ExecuteAsync();

        Assert.Equal(HttpStatusCode.BadRequest, batch.StatusCode);
        Assert.Contains("indexingDirective", batch.ErrorMessage, StringComparison.Ordinal);
        Assert.Equal(HttpStatusCode.BadRequest, alone.StatusCode);
        Assert.True(included.IsSuccessStatusCode, included.ErrorMessage);
        Assert.Equal(1, await CountAsync("owner-10"));
    }

    [Fact]
    public async Task A_batch_spanning_two_logical_partitions_is_refused_and_writes_nothing()
    {
        // A transactional batch is scoped to one logical partition: an item of another partition key
        // is answered 400 (sub-status 1001, partition key mismatch) and fails the batch.
        using var response = await Container.CreateTransactionalBatch(new PartitionKey("owner-5a"))
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
        using var impatient = CosmosTestHost.Client(Emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);
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
        (await Container.GetItemQueryIterator<int>(
            new QueryDefinition("SELECT VALUE COUNT(1) FROM c"),
            requestOptions: new QueryRequestOptions { PartitionKey = new PartitionKey(owner) }).ToListAsync()).Single();
}

public sealed record BatchItem(string Id, string Pk, double Weight);
