using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The .NET side of what the JavaScript conformance suite (tests/conformance/cosmos) checks for items
/// and single-partition queries. Where the SDKs differ it is the SDK, not the service: a point read
/// of a missing item is 404 for both, which the .NET SDK throws and the JavaScript SDK returns.
/// </summary>
public sealed class SdkParityTests() : EmulatorTest("/ownerId")
{
    [Fact]
    public async Task Point_read_of_a_missing_item_is_404()
    {
        var error = await Assert.ThrowsAsync<CosmosException>(() => Container.ReadItemAsync<Row>("no-such-item", new PartitionKey("owner-x")));

        Assert.Equal(HttpStatusCode.NotFound, error.StatusCode);
    }

    [Fact]
    public async Task Read_with_the_current_etag_in_if_none_match_is_304_and_stale_writes_are_412()
    {
        var created = await Container.CreateItemAsync(new Row("e1", "owner-e", 1));
        var replaced = await Container.ReplaceItemAsync(new Row("e1", "owner-e", 2), "e1", new PartitionKey("owner-e"),
            new ItemRequestOptions { IfMatchEtag = created.ETag });

        var notModified = await Container.ReadItemStreamAsync("e1", new PartitionKey("owner-e"), new ItemRequestOptions { IfNoneMatchEtag = replaced.ETag });
        var staleReplace = await Assert.ThrowsAsync<CosmosException>(() => Container.ReplaceItemAsync(new Row("e1", "owner-e", 3), "e1",
            new PartitionKey("owner-e"), new ItemRequestOptions { IfMatchEtag = created.ETag }));
        var staleDelete = await Assert.ThrowsAsync<CosmosException>(() => Container.DeleteItemAsync<Row>("e1", new PartitionKey("owner-e"),
            new ItemRequestOptions { IfMatchEtag = created.ETag }));
        var current = await Container.ReadItemAsync<Row>("e1", new PartitionKey("owner-e"));

        Assert.Equal(HttpStatusCode.NotModified, notModified.StatusCode);
        Assert.Equal(HttpStatusCode.PreconditionFailed, staleReplace.StatusCode);
        Assert.Equal(HttpStatusCode.PreconditionFailed, staleDelete.StatusCode);
        Assert.Equal(2, current.Resource.N);
    }

    [Fact]
    public async Task Query_with_a_partition_key_pages_and_resumes_from_a_continuation_token()
    {
        for (var i = 0; i < 7; i++)
        {
            await Container.CreateItemAsync(new Row($"pk-{i}", "owner-pk", i));
        }

        await Container.CreateItemAsync(new Row("pk-other", "owner-other", 100));
        var query = new QueryDefinition("SELECT * FROM c WHERE c.n >= @min").WithParameter("@min", 0);
        var options = new QueryRequestOptions { PartitionKey = new PartitionKey("owner-pk"), MaxItemCount = 3 };

        var first = await Container.GetItemQueryIterator<Row>(query, requestOptions: options).ReadNextAsync();
        var rest = await Container.GetItemQueryIterator<Row>(query, first.ContinuationToken, options).ToListAsync();

        Assert.Equal(3, first.Count);
        Assert.NotNull(first.ContinuationToken);
        Assert.Equal(Enumerable.Range(0, 7).Select(i => $"pk-{i}"), first.Concat(rest).Select(r => r.Id).Order());
    }

    [Fact]
    public async Task Aggregates_without_value_are_combined_across_partitions()
    {
        for (var i = 0; i < 20; i++)
        {
            await Container.CreateItemAsync(new Row($"a-{i}", $"owner-{i % 7}", i));
        }

        var row = Assert.Single(await Container.GetItemQueryIterator<Newtonsoft.Json.Linq.JObject>(
            "SELECT COUNT(1) AS n, SUM(c.n) AS total, MAX(c.n) AS highest FROM c").ToListAsync());

        Assert.Equal(20, (int)row["n"]!);
        Assert.Equal(190, (int)row["total"]!);
        Assert.Equal(19, (int)row["highest"]!);
    }

    public sealed record Row(string Id, string OwnerId, int N);
}
