using System.Reflection;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The emulator places items by effective partition key exactly as the SDK computes it, and routes
/// partition-key-scoped requests to one physical partition.
/// </summary>
public sealed class PartitioningTests() : EmulatorTest(physicalPartitions: Partitions)
{
    private const int Partitions = 9;

    [Theory]
    [InlineData(PartitionKeyDefinitionVersion.V2, 3000)]
    [InlineData(PartitionKeyDefinitionVersion.V1, 600)]
    public async Task Every_item_lives_in_the_physical_partition_the_sdk_hashes_it_to(PartitionKeyDefinitionVersion version, int count)
    {
        var database = (await Client.CreateDatabaseIfNotExistsAsync("test")).Database;
        var container = (await database.CreateContainerAsync(
            new ContainerProperties($"hash-{version}", "/pk") { PartitionKeyDefinitionVersion = version }, 100_000)).Container;
        var properties = (await container.ReadContainerAsync()).Resource;
        var random = new Random(42);
        var keys = new Dictionary<string, (PartitionKey Key, JToken Value)>();
        for (var i = 0; i < count; i++)
        {
            JToken value = (i % 10) switch
            {
                0 => random.Next(-1_000_000, 1_000_000),
                1 => Math.Round((random.NextDouble() - 0.5) * 1e6, 3),
                2 => "ключ-" + random.Next() + "-ü-漢字",
                3 => new string('k', 90 + random.Next(30)) + i,
                _ => Guid.NewGuid().ToString(),
            };
            var key = value.Type == JTokenType.String ? new PartitionKey((string)value!) : new PartitionKey((double)value);
            keys[$"item-{i}"] = (key, value);
        }

        keys["item-true"] = (new PartitionKey(true), true);
        keys["item-null"] = (PartitionKey.Null, JValue.CreateNull());
        foreach (var batch in keys.Chunk(200))
        {
            await Task.WhenAll(batch.Select(k => container.CreateItemAsync(new JObject { ["id"] = k.Key, ["pk"] = k.Value.Value }, k.Value.Key)));
        }

        var feedRanges = await container.GetFeedRangesAsync();
        Assert.Equal(Partitions, feedRanges.Count);
        var placed = 0;
        var populated = 0;
        foreach (var feedRange in feedRanges)
        {
            var range = JObject.Parse(feedRange.ToJsonString())["Range"]!;
            var (min, max) = ((string)range["min"]!, (string)range["max"]!);
            var ids = await container.GetItemQueryIterator<string>(feedRange, new QueryDefinition("SELECT VALUE c.id FROM c")).ToListAsync();
            populated += ids.Count > 0 ? 1 : 0;
            foreach (var id in ids)
            {
                var epk = SdkEffectivePartitionKey(keys[id].Key, properties);
                Assert.True(string.CompareOrdinal(epk, min) >= 0 && string.CompareOrdinal(epk, max) < 0,
                    $"{id} (pk {keys[id].Value}) hashes to {epk} in the SDK but the emulator stored it in [{min}, {max}).");
                placed++;
            }
        }

        Assert.Equal(keys.Count, placed);
        Assert.Equal(Partitions, populated);
    }

    [Fact]
    public async Task Partition_key_scoped_query_reads_one_physical_partition_and_a_fan_out_reads_all()
    {
        var container = await CosmosTestHost.ContainerAsync(Client, "/ownerId", id: "utilization");
        for (var i = 0; i < 90; i++)
        {
            await container.CreateItemAsync(new DroneUtilization($"u{i}", $"u{i}", $"owner-{i % 10}", 2025, 1 + (i % 3), 10, 1), new PartitionKey($"owner-{i % 10}"));
        }

        var query = new QueryDefinition("SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month")
            .WithParameter("@ownerId", "owner-3").WithParameter("@year", 2025).WithParameter("@month", 1);
        var scoped = await Requests(() => container.GetItemQueryIterator<DroneUtilization>(query,
            requestOptions: new QueryRequestOptions { PartitionKey = new PartitionKey("owner-3") }).ToListAsync());
        var fanOut = await Requests(() => container.GetItemQueryIterator<DroneUtilization>(
            new QueryDefinition("SELECT * FROM c WHERE c.year = @year AND c.month = @month").WithParameter("@year", 2025).WithParameter("@month", 1)).ToListAsync());
        // Without the option, the partition key equality in the WHERE clause still narrows the query plan to one range.
        var planned = await Requests(() => container.GetItemQueryIterator<DroneUtilization>(query).ToListAsync());

        var scopedQueries = scoped.Where(r => r.Operation == "Query").ToList();
        var home = Assert.Single(scopedQueries).PartitionKeyRangeId;
        Assert.Equal(Enumerable.Range(0, Partitions).Select(i => i.ToString()), fanOut.Where(r => r.Operation == "Query").Select(r => r.PartitionKeyRangeId).Order());
        Assert.Equal(home, Assert.Single(planned, r => r.Operation == "Query").PartitionKeyRangeId);
    }

    private async Task<IReadOnlyList<EmulatorRequest>> Requests(Func<Task> action)
    {
        var before = Emulator.LastRequestSequence;
        await action();
        return Emulator.GetRequests(before);
    }

    // The SDK's own effective partition key computation (internal API, reached by reflection) for comparison.
    private static string SdkEffectivePartitionKey(PartitionKey key, ContainerProperties container)
    {
        const BindingFlags flags = BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic;
        var definition = typeof(ContainerProperties).GetProperty("PartitionKey", flags)!.GetValue(container)!;
        var internalKey = typeof(PartitionKey).GetProperty("InternalKey", flags)!.GetValue(key)!;
        var method = internalKey.GetType().GetMethods(flags).Single(m => m.Name == "GetEffectivePartitionKeyString" && m.GetParameters().Length == 2);
        return (string)method.Invoke(internalKey, [definition, true])!;
    }
}
