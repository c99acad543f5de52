using System.Net;
using System.Text;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

public sealed class ItemTests() : EmulatorTest("/pk")
{
    [Fact]
    public async Task Created_item_reads_back_with_system_properties()
    {
        var created = await Container.CreateItemAsync(new Parcel("p1", "owner-1", 2.5), new PartitionKey("owner-1"));
        var read = await Container.ReadItemAsync<Parcel>("p1", new PartitionKey("owner-1"));

        Assert.Equal(HttpStatusCode.Created, created.StatusCode);
        Assert.Equal(new Parcel("p1", "owner-1", 2.5), read.Resource);
        Assert.Equal(created.ETag, read.ETag);
        Assert.True(read.RequestCharge >= 1);
        using var stream = await Container.ReadItemStreamAsync("p1", new PartitionKey("owner-1"));
        var json = await new StreamReader(stream.Content).ReadToEndAsync();
        Assert.Contains("\"_rid\"", json);
        Assert.Contains("\"_ts\"", json);
        Assert.Contains("\"_etag\"", json);
    }

    [Fact]
    public async Task Creating_an_existing_id_in_the_same_partition_conflicts()
    {
        await Container.CreateItemAsync(new Parcel("p2", "owner-1", 1), new PartitionKey("owner-1"));

        var error = await Assert.ThrowsAsync<CosmosException>(() => Container.CreateItemAsync(new Parcel("p2", "owner-1", 1), new PartitionKey("owner-1")));

        Assert.Equal(HttpStatusCode.Conflict, error.StatusCode);
        // The same id under another partition key is a different item.
        var other = await Container.CreateItemAsync(new Parcel("p2", "owner-2", 1), new PartitionKey("owner-2"));
        Assert.Equal(HttpStatusCode.Created, other.StatusCode);
    }

    [Fact]
    public async Task Upsert_creates_then_replaces()
    {
        var first = await Container.UpsertItemAsync(new Parcel("p3", "owner-1", 1), new PartitionKey("owner-1"));
        var second = await Container.UpsertItemAsync(new Parcel("p3", "owner-1", 7), new PartitionKey("owner-1"));

        Assert.Equal(HttpStatusCode.Created, first.StatusCode);
        Assert.Equal(HttpStatusCode.OK, second.StatusCode);
        Assert.Equal(7, (await Container.ReadItemAsync<Parcel>("p3", new PartitionKey("owner-1"))).Resource.Weight);
    }

    [Fact]
    public async Task Replace_honours_if_match()
    {
        var created = await Container.CreateItemAsync(new Parcel("p4", "owner-1", 1), new PartitionKey("owner-1"));
        var replaced = await Container.ReplaceItemAsync(new Parcel("p4", "owner-1", 2), "p4", new PartitionKey("owner-1"),
            new ItemRequestOptions { IfMatchEtag = created.ETag });

        var stale = await Assert.ThrowsAsync<CosmosException>(() => Container.ReplaceItemAsync(new Parcel("p4", "owner-1", 3), "p4",
            new PartitionKey("owner-1"), new ItemRequestOptions { IfMatchEtag = created.ETag }));

        Assert.Equal(HttpStatusCode.OK, replaced.StatusCode);
        Assert.NotEqual(created.ETag, replaced.ETag);
        Assert.Equal(HttpStatusCode.PreconditionFailed, stale.StatusCode);
        Assert.Equal(2, (await Container.ReadItemAsync<Parcel>("p4", new PartitionKey("owner-1"))).Resource.Weight);
    }

    [Fact]
    public async Task If_none_match_makes_a_read_not_modified_and_fails_a_write_of_the_unchanged_item()
    {
        var pk = new PartitionKey("owner-1");
        var created = await Container.CreateItemAsync(new Parcel("p9", "owner-1", 1), pk);

        using var notModified = await Container.ReadItemStreamAsync("p9", pk, new ItemRequestOptions { IfNoneMatchEtag = created.ETag });
        using var anyVersion = await Container.ReadItemStreamAsync("p9", pk, new ItemRequestOptions { IfNoneMatchEtag = "*" });
        var unchanged = await Assert.ThrowsAsync<CosmosException>(() => Container.ReplaceItemAsync(new Parcel("p9", "owner-1", 2), "p9", pk,
            new ItemRequestOptions { IfNoneMatchEtag = created.ETag }));
        var changed = await Container.ReplaceItemAsync(new Parcel("p9", "owner-1", 3), "p9", pk, new ItemRequestOptions { IfNoneMatchEtag = "\"an-older-etag\"" });

        Assert.Equal(HttpStatusCode.NotModified, notModified.StatusCode);
        Assert.Equal(HttpStatusCode.NotModified, anyVersion.StatusCode);
        Assert.Equal(HttpStatusCode.PreconditionFailed, unchanged.StatusCode);
        Assert.Equal(HttpStatusCode.OK, changed.StatusCode);
        Assert.Equal(3, (await Container.ReadItemAsync<Parcel>("p9", pk)).Resource.Weight);
    }

    [Fact]
    public async Task Deleted_item_is_gone()
    {
        await Container.CreateItemAsync(new Parcel("p5", "owner-1", 1), new PartitionKey("owner-1"));

        var deleted = await Container.DeleteItemAsync<Parcel>("p5", new PartitionKey("owner-1"));
        var read = await Assert.ThrowsAsync<CosmosException>(() => Container.ReadItemAsync<Parcel>("p5", new PartitionKey("owner-1")));
        var again = await Assert.ThrowsAsync<CosmosException>(() => Container.DeleteItemAsync<Parcel>("p5", new PartitionKey("owner-1")));

        Assert.Equal(HttpStatusCode.NoContent, deleted.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, read.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, again.StatusCode);
    }

    [Fact]
    public async Task Reading_with_the_wrong_partition_key_finds_nothing()
    {
        await Container.CreateItemAsync(new Parcel("p6", "owner-1", 1), new PartitionKey("owner-1"));

        var error = await Assert.ThrowsAsync<CosmosException>(() => Container.ReadItemAsync<Parcel>("p6", new PartitionKey("owner-9")));

        Assert.Equal(HttpStatusCode.NotFound, error.StatusCode);
    }

    [Fact]
    public async Task Partition_key_header_that_disagrees_with_the_item_is_400_1001()
    {
        var error = await Assert.ThrowsAsync<CosmosException>(() => Container.CreateItemAsync(new Parcel("p7", "owner-1", 1), new PartitionKey("owner-2")));

        Assert.Equal(HttpStatusCode.BadRequest, error.StatusCode);
        Assert.Equal(1001, error.SubStatusCode);
    }

    [Fact]
    public async Task Patch_sets_increments_and_respects_its_condition()
    {
        await Container.CreateItemAsync(new Parcel("p8", "owner-1", 1), new PartitionKey("owner-1"));

        var patched = await Container.PatchItemAsync<Parcel>("p8", new PartitionKey("owner-1"),
            [PatchOperation.Increment("/weight", 2.5), PatchOperation.Set("/label", "fragile")]);
        var refused = await Assert.ThrowsAsync<CosmosException>(() => Container.PatchItemAsync<Parcel>("p8", new PartitionKey("owner-1"),
            [PatchOperation.Set("/weight", 100)], new PatchItemRequestOptions { FilterPredicate = "FROM c WHERE c.weight > 50" }));

        Assert.Equal(3.5, patched.Resource.Weight);
        Assert.Equal(HttpStatusCode.PreconditionFailed, refused.StatusCode);
        using var stream = await Container.ReadItemStreamAsync("p8", new PartitionKey("owner-1"));
        Assert.Contains("\"label\":\"fragile\"", await new StreamReader(stream.Content).ReadToEndAsync());
    }

    [Fact]
    public async Task Patch_adds_removes_replaces_and_moves()
    {
        await Container.CreateItemStreamAsync(
            new MemoryStream(Encoding.UTF8.GetBytes("""{"id":"p10","pk":"owner-1","weight":1,"tags":["a","c"],"note":"x"}""")), new PartitionKey("owner-1"));

        await Container.PatchItemAsync<Parcel>("p10", new PartitionKey("owner-1"),
        [
            PatchOperation.Add("/tags/1", "b"),
            PatchOperation.Remove("/note"),
            PatchOperation.Replace("/weight", 9),
            PatchOperation.Move("/tags", "/labels"),
        ]);
        var missing = await Assert.ThrowsAsync<CosmosException>(() => Container.PatchItemAsync<Parcel>("p10", new PartitionKey("owner-1"),
            [PatchOperation.Replace("/nothing", 1)]));

        using var stream = await Container.ReadItemStreamAsync("p10", new PartitionKey("owner-1"));
        var item = System.Text.Json.JsonDocument.Parse(await new StreamReader(stream.Content).ReadToEndAsync()).RootElement;
        Assert.Equal(["a", "b", "c"], item.GetProperty("labels").EnumerateArray().Select(t => t.GetString()));
        Assert.False(item.TryGetProperty("note", out _));
        Assert.False(item.TryGetProperty("tags", out _));
        Assert.Equal(9, item.GetProperty("weight").GetDouble());
        Assert.Equal(HttpStatusCode.BadRequest, missing.StatusCode);
    }

    [Fact]
    public async Task Reading_the_item_feed_returns_every_item()
    {
        for (var i = 0; i < 25; i++)
        {
            await Container.CreateItemAsync(new Parcel($"f{i}", $"feed-{i % 5}", i), new PartitionKey($"feed-{i % 5}"));
        }

        var items = await Container.GetItemQueryIterator<Parcel>(requestOptions: new QueryRequestOptions { MaxItemCount = 4 }).ToListAsync();

        Assert.Equal(Enumerable.Range(0, 25).Select(i => $"f{i}").Order(), items.Where(p => p.Id.StartsWith('f')).Select(p => p.Id).Order());
    }

    [Fact]
    public async Task Unsupported_features_are_refused_with_400()
    {
        var ttl = await Assert.ThrowsAsync<CosmosException>(() => Client.GetDatabase("test").CreateContainerAsync(new ContainerProperties("ttl", "/pk") { DefaultTimeToLive = 60 }));
        var procedure = await Assert.ThrowsAsync<CosmosException>(() => Container.Scripts.CreateStoredProcedureAsync(
            new Microsoft.Azure.Cosmos.Scripts.StoredProcedureProperties("sp", "function () {}")));

        Assert.Equal(HttpStatusCode.BadRequest, ttl.StatusCode);
        Assert.Contains("defaultTtl", ttl.Message);
        Assert.Equal(HttpStatusCode.BadRequest, procedure.StatusCode);
        Assert.Contains("sprocs", procedure.Message);
    }

    [Fact]
    public async Task Container_replace_keeps_the_partition_key()
    {
        var properties = (await Container.ReadContainerAsync()).Resource;
        properties.IndexingPolicy.IndexingMode = IndexingMode.Consistent;

        var replaced = await Container.ReplaceContainerAsync(properties);
        properties.PartitionKeyPath = "/other";
        var changed = await Assert.ThrowsAsync<CosmosException>(() => Container.ReplaceContainerAsync(properties));

        Assert.Equal(HttpStatusCode.OK, replaced.StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, changed.StatusCode);
    }

    [Fact]
    public async Task Malformed_json_is_400_and_the_emulator_keeps_serving()
    {
        using var response = await Container.CreateItemStreamAsync(new MemoryStream(Encoding.UTF8.GetBytes("{\"id\": \"x\", \"pk\": ")), new PartitionKey("owner-1"));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Contains("not valid JSON", response.ErrorMessage);
        Assert.Equal(HttpStatusCode.Created, (await Container.CreateItemAsync(new Parcel("p9", "owner-1", 1), new PartitionKey("owner-1"))).StatusCode);
    }

    [Fact]
    public async Task Item_over_2_MB_is_413()
    {
        var large = new string('x', (2 * 1024 * 1024) + 10);

        using var response = await Container.CreateItemStreamAsync(
            new MemoryStream(Encoding.UTF8.GetBytes($"{{\"id\":\"big\",\"pk\":\"owner-1\",\"blob\":\"{large}\"}}")), new PartitionKey("owner-1"));

        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
    }

    [Fact]
    public async Task Queries_see_items_written_after_an_earlier_query()
    {
        var query = new QueryDefinition("SELECT VALUE c.id FROM c WHERE c.pk = @pk AND c.weight = 4").WithParameter("@pk", "owner-q");
        await Container.CreateItemAsync(new Parcel("q1", "owner-q", 4), new PartitionKey("owner-q"));
        var before = await Container.GetItemQueryIterator<string>(query).ToListAsync();

        await Container.CreateItemAsync(new Parcel("q2", "owner-q", 4), new PartitionKey("owner-q"));
        await Container.ReplaceItemAsync(new Parcel("q1", "owner-q", 5), "q1", new PartitionKey("owner-q"));
        var after = await Container.GetItemQueryIterator<string>(query).ToListAsync();

        Assert.Equal(["q1"], before);
        Assert.Equal(["q2"], after);
    }

    [Fact]
    public async Task Unknown_container_is_404()
    {
        var missing = Client.GetContainer("test", "missing");

        var error = await Assert.ThrowsAsync<CosmosException>(() => missing.ReadContainerAsync());

        Assert.Equal(HttpStatusCode.NotFound, error.StatusCode);
    }

    [Fact]
    public async Task Container_create_if_not_exists_returns_the_existing_one()
    {
        var database = Client.GetDatabase("test");

        var again = await database.CreateContainerIfNotExistsAsync(new ContainerProperties("items", "/pk"));
        var conflict = await Assert.ThrowsAsync<ArgumentException>(() => database.CreateContainerIfNotExistsAsync(new ContainerProperties("items", "/other")));

        Assert.Equal(HttpStatusCode.OK, again.StatusCode);
        Assert.Contains("/pk", conflict.Message);
    }

    [Fact]
    public async Task Database_throughput_is_shared_by_containers_created_without_their_own()
    {
        var database = (await Client.CreateDatabaseIfNotExistsAsync("shared", throughput: 1200)).Database;
        var container = (await database.CreateContainerIfNotExistsAsync(new ContainerProperties("a", "/pk"))).Container;
        var dedicated = (await database.CreateContainerIfNotExistsAsync(new ContainerProperties("b", "/pk"), throughput: 500)).Container;

        await database.ReplaceThroughputAsync(1800);

        Assert.Equal(1800, await database.ReadThroughputAsync());
        Assert.Null(await container.ReadThroughputAsync());
        Assert.Equal(500, await dedicated.ReadThroughputAsync());
        var metrics = Emulator.GetMetrics();
        Assert.Equal(1800, metrics.Container("shared", "a")!.ProvisionedThroughput);
        Assert.True(metrics.Container("shared", "a")!.SharedThroughput);
        Assert.Equal(500, metrics.Container("shared", "b")!.ProvisionedThroughput);
    }

    [Fact]
    public async Task Databases_and_containers_list_and_delete()
    {
        var database = (await Client.CreateDatabaseIfNotExistsAsync("second")).Database;
        await database.CreateContainerAsync(new ContainerProperties("a", "/pk"));
        await database.CreateContainerAsync(new ContainerProperties("b", "/pk"));

        var containers = await database.GetContainerQueryIterator<ContainerProperties>().ToListAsync();
        await database.GetContainer("a").DeleteContainerAsync();
        var remaining = await database.GetContainerQueryIterator<ContainerProperties>().ToListAsync();
        var databases = await Client.GetDatabaseQueryIterator<DatabaseProperties>().ToListAsync();
        await database.DeleteAsync();
        var afterDelete = await Client.GetDatabaseQueryIterator<DatabaseProperties>().ToListAsync();

        Assert.Equal(["a", "b"], containers.Select(c => c.Id).Order());
        Assert.Equal(["b"], remaining.Select(c => c.Id));
        Assert.Contains(databases, d => d.Id == "second");
        Assert.DoesNotContain(afterDelete, d => d.Id == "second");
    }

    public sealed record Parcel(string Id, string Pk, double Weight);
}
