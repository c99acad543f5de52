using System.Net;
using Microsoft.Azure.Cosmos;
using Microsoft.Azure.Cosmos.Linq;
using Newtonsoft.Json.Linq;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>Query results through the SDK's own cross-partition pipeline over nine physical partitions.</summary>
public sealed class QueryTests(QueryTests.Deliveries data) : IClassFixture<QueryTests.Deliveries>
{
    private readonly IReadOnlyList<Delivery> _items = data.Items;
    private readonly Container _container = data.Container;

    [Fact]
    public async Task Filters_match_linq_over_the_same_data()
    {
        await AssertIds("SELECT * FROM c WHERE c.year = 2021", d => d.Year == 2021);
        await AssertIds("SELECT * FROM c WHERE c.year <> 2021", d => d.Year != 2021);
        await AssertIds("SELECT * FROM c WHERE c.weight > 25 AND c.month < 4", d => d.Weight > 25 && d.Month < 4);
        await AssertIds("SELECT * FROM c WHERE c.month = 1 OR c.month = 12", d => d.Month is 1 or 12);
        await AssertIds("SELECT * FROM c WHERE NOT (c.year = 2020)", d => d.Year != 2020);
        await AssertIds("SELECT * FROM c WHERE c.ownerId IN ('owner-1', 'owner-5', 'owner-9')", d => d.OwnerId is "owner-1" or "owner-5" or "owner-9");
        await AssertIds("SELECT * FROM c WHERE c.weight >= 10 AND c.weight <= 20", d => d.Weight is >= 10 and <= 20);
        // Undefined and null never satisfy a comparison: items without a drone are excluded, not matched.
        await AssertIds("SELECT * FROM c WHERE c.droneId <> 'drone-1'", d => d.DroneId is not null && d.DroneId != "drone-1");
        await AssertIds("SELECT * FROM c WHERE IS_NULL(c.droneId)", d => d.DroneId is null);
        await AssertIds("SELECT * FROM c WHERE c.droneId = null", d => d.DroneId is null);
        // Equality never converts types: a number property does not equal the same digits as a string.
        await AssertIds("SELECT * FROM c WHERE c.year = '2021'", _ => false);
        await AssertIds("SELECT * FROM c WHERE c.year = 2021.0 AND c.droneId = 'drone-3'", d => d.Year == 2021 && d.DroneId == "drone-3");
    }

    [Fact]
    public async Task Parameterised_query_binds_values()
    {
        var query = new QueryDefinition("SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month")
            .WithParameter("@ownerId", "owner-3").WithParameter("@year", 2020).WithParameter("@month", 4);

        var results = await _container.GetItemQueryIterator<Delivery>(query).ToListAsync();

        Assert.Equal(Expected(d => d.OwnerId == "owner-3" && d.Year == 2020 && d.Month == 4), results.Select(r => r.Id).Order());
        Assert.NotEmpty(results);
    }

    [Fact]
    public async Task Select_value_and_projections()
    {
        var ids = await _container.GetItemQueryIterator<string>("SELECT VALUE c.id FROM c WHERE c.month = 2").ToListAsync();
        var projected = await _container.GetItemQueryIterator<JObject>("SELECT c.id, c.weight AS w FROM c WHERE c.id = 'd001'").ToListAsync();

        Assert.Equal(Expected(d => d.Month == 2), ids.Order());
        var row = Assert.Single(projected);
        Assert.Equal("d001", (string?)row["id"]);
        Assert.Equal(_items[1].Weight, (double)row["w"]!);
        Assert.Equal(2, row.Count);
    }

    [Fact]
    public async Task Aggregates_combine_across_partitions()
    {
        var count = await Single<long>("SELECT VALUE COUNT(1) FROM c WHERE c.year = 2022");
        var sum = await Single<double>("SELECT VALUE SUM(c.weight) FROM c WHERE c.year = 2022");
        var min = await Single<double>("SELECT VALUE MIN(c.weight) FROM c");
        var max = await Single<double>("SELECT VALUE MAX(c.weight) FROM c");
        var average = await Single<double>("SELECT VALUE AVG(c.weight) FROM c");
        var summary = await Single<JObject>("SELECT COUNT(1) AS deliveries, SUM(c.weight) AS weight FROM c WHERE c.ownerId = 'owner-4'");

        var year2022 = _items.Where(d => d.Year == 2022).ToList();
        Assert.Equal(year2022.Count, count);
        Assert.Equal(year2022.Sum(d => d.Weight), sum, 6);
        Assert.Equal(_items.Min(d => d.Weight), min);
        Assert.Equal(_items.Max(d => d.Weight), max);
        Assert.Equal(_items.Average(d => d.Weight), average, 6);
        var owner4 = _items.Where(d => d.OwnerId == "owner-4").ToList();
        Assert.Equal(owner4.Count, (long)summary["deliveries"]!);
        Assert.Equal(owner4.Sum(d => d.Weight), (double)summary["weight"]!, 6);
    }

    [Fact]
    public async Task Count_of_nothing_is_zero()
    {
        Assert.Equal(0, await Single<long>("SELECT VALUE COUNT(1) FROM c WHERE c.year = 1999"));
    }

    [Fact]
    public async Task Order_by_sorts_across_partitions_both_ways()
    {
        var ascending = await _container.GetItemQueryIterator<Delivery>("SELECT * FROM c ORDER BY c.weight").ToListAsync();
        var descending = await _container.GetItemQueryIterator<Delivery>("SELECT * FROM c WHERE c.year = 2020 ORDER BY c.weight DESC",
            requestOptions: new QueryRequestOptions { MaxItemCount = 7 }).ToListAsync();

        Assert.Equal(_items.OrderBy(d => d.Weight).Select(d => d.Weight), ascending.Select(d => d.Weight));
        Assert.Equal(_items.Where(d => d.Year == 2020).OrderByDescending(d => d.Weight).Select(d => d.Weight), descending.Select(d => d.Weight));
    }

    [Fact]
    public async Task Top_and_offset_limit_take_the_right_rows()
    {
        var top = await _container.GetItemQueryIterator<Delivery>("SELECT TOP 5 * FROM c ORDER BY c.weight DESC").ToListAsync();
        var unordered = await _container.GetItemQueryIterator<Delivery>("SELECT TOP 12 * FROM c WHERE c.year = 2021").ToListAsync();
        var page = await _container.GetItemQueryIterator<Delivery>("SELECT * FROM c ORDER BY c.id OFFSET 10 LIMIT 5").ToListAsync();

        Assert.Equal(_items.OrderByDescending(d => d.Weight).Take(5).Select(d => d.Id), top.Select(d => d.Id));
        Assert.Equal(12, unordered.Count);
        Assert.All(unordered, d => Assert.Equal(2021, d.Year));
        Assert.Equal(_items.OrderBy(d => d.Id, StringComparer.Ordinal).Skip(10).Take(5).Select(d => d.Id), page.Select(d => d.Id));
    }

    [Fact]
    public async Task Paging_with_continuation_tokens_returns_every_item_once()
    {
        var options = new QueryRequestOptions { MaxItemCount = 11 };
        var seen = new List<string>();
        string? continuation = null;
        var pages = 0;
        do
        {
            // A fresh iterator per page: the continuation token alone must carry the position.
            using var iterator = _container.GetItemQueryIterator<Delivery>("SELECT * FROM c WHERE c.year >= 2021", continuation, options);
            var page = await iterator.ReadNextAsync();
            Assert.True(page.Count <= 11);
            seen.AddRange(page.Select(d => d.Id));
            continuation = page.ContinuationToken;
            pages++;
        }
        while (continuation is not null);

        Assert.Equal(Expected(d => d.Year >= 2021), seen.Order());
        Assert.Equal(seen.Count, seen.Distinct().Count());
        Assert.True(pages > 10);
    }

    [Fact]
    public async Task Order_by_paging_resumes_from_a_continuation_token()
    {
        var options = new QueryRequestOptions { MaxItemCount = 25 };
        var weights = new List<double>();
        string? continuation = null;
        do
        {
            using var iterator = _container.GetItemQueryIterator<Delivery>("SELECT * FROM c ORDER BY c.weight", continuation, options);
            var page = await iterator.ReadNextAsync();
            weights.AddRange(page.Select(d => d.Weight));
            continuation = page.ContinuationToken;
        }
        while (continuation is not null);

        Assert.Equal(_items.OrderBy(d => d.Weight).Select(d => d.Weight), weights);
    }

    [Fact]
    public async Task Partition_key_scoped_query_returns_only_that_partition()
    {
        var results = await _container.GetItemQueryIterator<Delivery>("SELECT * FROM c WHERE c.year = 2020",
            requestOptions: new QueryRequestOptions { PartitionKey = new PartitionKey("owner-7") }).ToListAsync();

        Assert.Equal(Expected(d => d.OwnerId == "owner-7" && d.Year == 2020), results.Select(d => d.Id).Order());
    }

    [Fact]
    public async Task Linq_queries_run_as_the_sdk_translates_them()
    {
        var queryable = _container.GetItemLinqQueryable<Delivery>();

        var filtered = await queryable.Where(d => d.OwnerId == "owner-2" && d.Month > 6).ToFeedIterator().ToListAsync();
        var heaviest = await queryable.Where(d => d.Year == 2020).OrderByDescending(d => d.Weight).Take(3).Select(d => d.Id).ToFeedIterator().ToListAsync();
        var count = await CosmosLinqExtensions.CountAsync(queryable.Where(d => d.Year == 2021));
        var total = await CosmosLinqExtensions.SumAsync(queryable.Where(d => d.OwnerId == "owner-5").Select(d => d.Weight));

        Assert.Equal(Expected(d => d.OwnerId == "owner-2" && d.Month > 6), filtered.Select(d => d.Id).Order());
        Assert.Equal(_items.Where(d => d.Year == 2020).OrderByDescending(d => d.Weight).Take(3).Select(d => d.Id), heaviest);
        Assert.Equal(_items.Count(d => d.Year == 2021), count.Resource);
        Assert.Equal(_items.Where(d => d.OwnerId == "owner-5").Sum(d => d.Weight), total.Resource, 6);
    }

    [Fact]
    public async Task Read_many_returns_the_requested_items_across_partitions()
    {
        var wanted = _items.Where((_, i) => i % 37 == 0).ToList();

        var response = await _container.ReadManyItemsAsync<Delivery>([.. wanted.Select(d => (d.Id, new PartitionKey(d.OwnerId)))]);

        Assert.Equal(wanted.Select(d => d.Id).Order(), response.Select(d => d.Id).Order());
    }

    [Theory]
    [InlineData("SELECT c.ownerId, COUNT(1) FROM c GROUP BY c.ownerId ORDER BY c.ownerId", "GROUP BY together with")]
    [InlineData("SELECT c.ownerId, c.year FROM c GROUP BY c.ownerId", "GROUP BY expression")]
    [InlineData("SELECT DISTINCT c.ownerId FROM c ORDER BY c.ownerId", "DISTINCT together with ORDER BY")]
    [InlineData("SELECT * FROM c JOIN t IN c.tags", "JOIN")]
    [InlineData("SELECT * FROM c WHERE c.droneId LIKE 'drone%'", "LIKE")]
    [InlineData("SELECT * FROM c WHERE ST_DISTANCE(c.a, c.b) > 1", "ST_DISTANCE")]
    [InlineData("SELECT * FROM c ORDER BY c.year, c.month", "more than one property")]
    public async Task Unsupported_feature_is_400_naming_it(string query, string feature)
    {
        var error = await Assert.ThrowsAsync<CosmosException>(() => _container.GetItemQueryIterator<JObject>(query).ToListAsync());

        Assert.Equal(HttpStatusCode.BadRequest, error.StatusCode);
        Assert.Contains(feature, error.Message);
    }

    [Fact]
    public async Task Undefined_parameter_is_400()
    {
        var error = await Assert.ThrowsAsync<CosmosException>(() => _container.GetItemQueryIterator<JObject>(
            new QueryDefinition("SELECT * FROM c WHERE c.ownerId = @missing")).ToListAsync());

        Assert.Equal(HttpStatusCode.BadRequest, error.StatusCode);
        Assert.Contains("@missing", error.Message);
    }

    [Fact]
    public async Task Malformed_query_is_400()
    {
        var error = await Assert.ThrowsAsync<CosmosException>(() => _container.GetItemQueryIterator<JObject>("SELECT * FROM c WHERE").ToListAsync());

        Assert.Equal(HttpStatusCode.BadRequest, error.StatusCode);
        Assert.Contains("Syntax error", error.Message);
    }

    private async Task AssertIds(string query, Func<Delivery, bool> expected)
    {
        var results = await _container.GetItemQueryIterator<Delivery>(query).ToListAsync();
        Assert.Equal(Expected(expected), results.Select(d => d.Id).Order());
    }

    private IEnumerable<string> Expected(Func<Delivery, bool> predicate) =>
        _items.Where(predicate).Select(d => d.Id).Order();

    private async Task<T> Single<T>(string query) =>
        Assert.Single(await _container.GetItemQueryIterator<T>(query).ToListAsync());

    public sealed record Delivery(string Id, string OwnerId, int Year, int Month, double Weight, string? DroneId);

    /// <summary>300 deliveries of 23 owners over nine physical partitions, loaded once for all the (read-only) tests.</summary>
    public sealed class Deliveries : IAsyncLifetime
    {
        private CosmosEmulator _emulator = null!;
        private CosmosClient _client = null!;

        public List<Delivery> Items { get; } = [];

        public Container Container { get; private set; } = null!;

        public async Task InitializeAsync()
        {
            _emulator = await CosmosTestHost.StartAsync(o => o.DefaultPhysicalPartitions = 9);
            _client = CosmosTestHost.Client(_emulator);
            Container = await CosmosTestHost.ContainerAsync(_client, "/ownerId");
            var random = new Random(7);
            for (var i = 0; i < 300; i++)
            {
                Items.Add(new Delivery(
                    $"d{i:000}",
                    $"owner-{i % 23}",
                    2020 + (i % 3),
                    1 + (i % 12),
                    Math.Round(random.NextDouble() * 50, 2),
                    i % 10 == 0 ? null : $"drone-{i % 7}"));
            }

            await Task.WhenAll(Items.Select(d => Container.CreateItemAsync(d, new PartitionKey(d.OwnerId))));
        }

        public async Task DisposeAsync()
        {
            _client.Dispose();
            await _emulator.DisposeAsync();
        }
    }
}
