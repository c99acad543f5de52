using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// GROUP BY through the .NET SDK: the query plan carries the service's rewrite (groupByItems and a
/// payload of partial aggregates), every partition groups its own items and the SDK merges the groups.
/// </summary>
public sealed class GroupByTests() : EmulatorTest("/ownerId")
{
    private const int Count = 41;
    private static readonly string[] Colours = ["red", "green", "blue"];
    private readonly List<Row> _rows = [];

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        for (var i = 0; i < Count; i++)
        {
            var row = new Row($"g-{i:00}", $"owner-{i % 13}", i, (i * 7) % 10, Colours[i % 3]);
            _rows.Add(row);
            await Container.CreateItemAsync(row);
        }
    }

    [Fact]
    public async Task Groups_with_aggregates_are_merged_across_partitions()
    {
        var groups = await Container.GetItemQueryIterator<JObject>(
            "SELECT c.colour, COUNT(1) AS n, SUM(c.n) AS total, MIN(c.weight) AS lightest, MAX(c.weight) AS heaviest, AVG(c.n) AS mean FROM c GROUP BY c.colour",
            requestOptions: new QueryRequestOptions { MaxItemCount = 2 }).ToListAsync();

        var expected = _rows.GroupBy(r => r.Colour).Select(g =>
            $"{g.Key}:{g.Count()}:{g.Sum(r => r.N)}:{g.Min(r => r.Weight)}:{g.Max(r => r.Weight)}:{g.Average(r => r.N)}").Order();
        Assert.Equal(expected, groups.Select(g =>
            $"{g["colour"]}:{g["n"]}:{g["total"]}:{g["lightest"]}:{g["heaviest"]}:{(double)g["mean"]!}").Order());
    }

    [Fact]
    public async Task Group_by_several_expressions_with_a_filter()
    {
        var groups = await Container.GetItemQueryIterator<JObject>(
            "SELECT c.colour, c.weight, COUNT(1) AS n FROM c WHERE c.n >= 5 GROUP BY c.colour, c.weight").ToListAsync();

        var expected = _rows.Where(r => r.N >= 5).GroupBy(r => (r.Colour, r.Weight)).Select(g => $"{g.Key.Colour}/{g.Key.Weight}:{g.Count()}").Order();
        Assert.Equal(expected, groups.Select(g => $"{g["colour"]}/{g["weight"]}:{g["n"]}").Order());
    }

    [Fact]
    public async Task Select_value_group_keys_and_value_aggregates()
    {
        var keys = await Container.GetItemQueryIterator<string>("SELECT VALUE c.colour FROM c GROUP BY c.colour").ToListAsync();
        var counts = await Container.GetItemQueryIterator<int>("SELECT VALUE COUNT(1) FROM c GROUP BY c.weight").ToListAsync();

        Assert.Equal(Colours.Order(), keys.Order());
        Assert.Equal(_rows.GroupBy(r => r.Weight).Select(g => g.Count()).Order(), counts.Order());
    }

    [Fact]
    public async Task Group_by_in_one_logical_partition()
    {
        var groups = await Container.GetItemQueryIterator<JObject>("SELECT c.colour, COUNT(1) AS n FROM c GROUP BY c.colour",
            requestOptions: new QueryRequestOptions { PartitionKey = new PartitionKey("owner-2"), MaxItemCount = 1 }).ToListAsync();

        var expected = _rows.Where(r => r.OwnerId == "owner-2").GroupBy(r => r.Colour).Select(g => $"{g.Key}:{g.Count()}").Order();
        Assert.Equal(expected, groups.Select(g => $"{g["colour"]}:{g["n"]}").Order());
    }

    public sealed record Row(string Id, string OwnerId, int N, int Weight, string Colour);
}
