using System.Net;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// DISTINCT through the .NET SDK: the query plan says <c>distinctType: Unordered</c>, every partition
/// returns its own distinct rows and the SDK removes duplicates across partitions, as on the service.
/// </summary>
public sealed class DistinctTests() : EmulatorTest("/ownerId")
{
    private const int Count = 40;
    private static readonly string[] Colours = ["red", "green", "blue"];

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        for (var i = 0; i < Count; i++)
        {
            await Container.CreateItemAsync(new Row($"d-{i:00}", $"owner-{i % 11}", Colours[i % 3], i % 4));
        }
    }

    [Fact]
    public async Task Distinct_values_across_partitions_are_returned_once()
    {
        var colours = await Container.GetItemQueryIterator<string>("SELECT DISTINCT VALUE c.colour FROM c",
            requestOptions: new QueryRequestOptions { MaxItemCount = 1 }).ToListAsync();

        Assert.Equal(["blue", "green", "red"], colours.Order());
    }

    [Fact]
    public async Task Distinct_objects_compare_by_value()
    {
        var pairs = await Container.GetItemQueryIterator<JObject>("SELECT DISTINCT c.colour, c.size FROM c WHERE c.size < 2").ToListAsync();

        var expected = Enumerable.Range(0, Count).Where(i => i % 4 < 2).Select(i => $"{Colours[i % 3]}/{i % 4}").Distinct().Order();
        Assert.Equal(expected, pairs.Select(p => $"{p["colour"]}/{p["size"]}").Order());
    }

    [Fact]
    public async Task Distinct_in_one_logical_partition_pages_without_repeating()
    {
        var options = new QueryRequestOptions { PartitionKey = new PartitionKey("owner-1"), MaxItemCount = 1 };

        var sizes = await Container.GetItemQueryIterator<int>("SELECT DISTINCT VALUE c.size FROM c", requestOptions: options).ToListAsync();

        Assert.Equal(Enumerable.Range(0, Count).Where(i => i % 11 == 1).Select(i => i % 4).Distinct().Order(), sizes.Order());
    }

    [Fact]
    public async Task Distinct_with_top_takes_distinct_rows()
    {
        var colours = await Container.GetItemQueryIterator<string>("SELECT DISTINCT TOP 2 VALUE c.colour FROM c").ToListAsync();

        Assert.Equal(2, colours.Count);
        Assert.Equal(2, colours.Distinct().Count());
    }

    [Fact]
    public async Task Distinct_values_include_zero_across_partitions()
    {
        var container = await CosmosTestHost.ContainerAsync(Client, "/pk", id: "numbers");
        foreach (var chunk in Enumerable.Range(0, 1500).Chunk(100))
        {
            await Task.WhenAll(chunk.Select(n => container.CreateItemAsync(new { id = $"n-{n}", pk = $"p-{n % 37}", n, j = n % 10 })));
        }

        var values = await container.GetItemQueryIterator<int>("SELECT DISTINCT VALUE c.j FROM c WHERE c.n < 1400").ToListAsync();

        Assert.Equal(Enumerable.Range(0, 10), values.Order());
    }

    [Fact]
    public async Task Distinct_keeps_zero_false_empty_string_and_null_across_partitions()
    {
        var container = await CosmosTestHost.ContainerAsync(Client, "/pk", id: "falsy");
        JToken[] values = [0, false, string.Empty, JValue.CreateNull(), 1, true, "a"];
        for (var n = 0; n < 70; n++)
        {
            await container.CreateItemAsync(new JObject { ["id"] = $"f-{n}", ["pk"] = $"p-{n % 13}", ["v"] = values[n % values.Length] });
        }

        var distinct = await container.GetItemQueryIterator<JToken>("SELECT DISTINCT VALUE c.v FROM c",
            requestOptions: new QueryRequestOptions { MaxItemCount = 2 }).ToListAsync();

        Assert.Equal(values.Select(v => v.ToString(Newtonsoft.Json.Formatting.None)).Order(), distinct.Select(v => v.ToString(Newtonsoft.Json.Formatting.None)).Order());
    }

    [Fact]
    public async Task Distinct_with_order_by_is_400_naming_it()
    {
        var error = await Assert.ThrowsAsync<CosmosException>(() =>
            Container.GetItemQueryIterator<string>("SELECT DISTINCT VALUE c.colour FROM c ORDER BY c.colour").ToListAsync());

        Assert.Equal(HttpStatusCode.BadRequest, error.StatusCode);
        Assert.Contains("DISTINCT together with ORDER BY", error.Message, StringComparison.Ordinal);
    }

    public sealed record Row(string Id, string OwnerId, string Colour, int Size);
}
