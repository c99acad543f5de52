using System.Globalization;
using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Cross-partition queries sent without a partition key range or partition key — what the JavaScript
/// SDK (and every SDK but .NET's) sends first. The service's gateway serves filters and projections
/// itself and answers queries that need a client-side merge with 400, sub-status 1004
/// (CrossPartitionQueryNotServable) and the query plan in <c>additionalErrorInfo</c>. The .NET SDK
/// never sends such a request (it asks for the query plan first and names a range on every page), so
/// these tests send it the way the JavaScript SDK does, and check the .NET SDK still gets the same
/// results through its own pipeline.
/// </summary>
public sealed class CrossPartitionGatewayTests() : EmulatorTest("/ownerId", Partitions)
{
    private const int Partitions = 4;
    private const int Count = 41;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        for (var i = 0; i < Count; i++)
        {
            await Container.CreateItemAsync(new Row($"q-{i:00}", $"owner-{i % 13}", i, (i * 7) % 10));
        }
    }

    [Fact]
    public async Task Gateway_serves_a_filter_across_every_partition_with_a_resumable_continuation()
    {
        using var http = new HttpClient();
        var ids = new List<string>();
        string? continuation = null;
        var pages = 0;
        do
        {
            using var response = await http.SendAsync(Query("SELECT c.id FROM c WHERE c.n >= 5", maxItemCount: 4, continuation));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            using var body = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
            var documents = body.RootElement.GetProperty("Documents");
            Assert.True(documents.GetArrayLength() <= 4);
            ids.AddRange(documents.EnumerateArray().Select(d => d.GetProperty("id").GetString()!));
            continuation = response.Headers.TryGetValues("x-ms-continuation", out var values) ? values.Single() : null;
            pages++;
        }
        while (continuation is not null);

        Assert.Equal(Enumerable.Range(5, Count - 5).Select(i => $"q-{i:00}"), ids.Order());
        Assert.True(pages >= 9, $"{pages} pages");
    }

    [Fact]
    public async Task Gateway_served_query_is_charged_per_partition_visited()
    {
        using var http = new HttpClient();
        var before = Emulator.LastRequestSequence;

        using var response = await http.SendAsync(Query("SELECT * FROM c WHERE c.weight = 3", maxItemCount: -1, null));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.False(response.Headers.Contains("x-ms-continuation"), "one page holds everything: no continuation");
        var matched = Enumerable.Range(0, Count).Count(i => (i * 7) % 10 == 3);
        var charge = double.Parse(response.Headers.GetValues("x-ms-request-charge").Single(), CultureInfo.InvariantCulture);
        // QueryPerPartition (3.2) for each of the four partitions read, QueryPerDocument (0.02) per item.
        Assert.Equal((Partitions * 3.2) + (matched * 0.02), charge, 2);
        var request = Assert.Single(Emulator.GetRequests(before), r => r.Operation == "Query");
        Assert.Null(request.PartitionKeyRangeId);
        Assert.Equal(matched, request.DocumentCount);
        var metrics = Emulator.GetMetrics(60).Containers.Single(c => c.Container == "items");
        Assert.All(metrics.Partitions, p => Assert.True(p.Requests >= 1));
    }

    [Fact]
    public async Task Partition_key_equality_narrows_the_gateway_served_query_to_its_partition()
    {
        using var http = new HttpClient();

        using var response = await http.SendAsync(Query("SELECT * FROM c WHERE c.ownerId = 'owner-3' AND c.n >= 0", maxItemCount: -1, null));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        using var body = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        var matched = Enumerable.Range(0, Count).Count(i => i % 13 == 3);
        Assert.Equal(matched, body.RootElement.GetProperty("_count").GetInt32());
        var charge = double.Parse(response.Headers.GetValues("x-ms-request-charge").Single(), CultureInfo.InvariantCulture);
        Assert.Equal(3.2 + (matched * 0.02), charge, 2);
    }

    [Theory]
    [InlineData("SELECT * FROM c ORDER BY c.n DESC", "orderBy", "Descending")]
    [InlineData("SELECT VALUE COUNT(1) FROM c", "aggregates", "Count")]
    [InlineData("SELECT TOP 3 * FROM c", "top", "3")]
    [InlineData("SELECT * FROM c OFFSET 2 LIMIT 3", "limit", "3")]
    [InlineData("SELECT DISTINCT VALUE c.weight FROM c", "distinctType", "Unordered")]
    [InlineData("SELECT c.weight, COUNT(1) AS n FROM c GROUP BY c.weight", "groupByExpressions", "c.weight")]
    public async Task Query_that_needs_a_merge_is_400_1004_with_the_query_plan(string query, string field, string expected)
    {
        using var http = new HttpClient();

        using var response = await http.SendAsync(Query(query, maxItemCount: 10, null));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal("1004", response.Headers.GetValues("x-ms-substatus").Single());
        using var body = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        using var plan = JsonDocument.Parse(body.RootElement.GetProperty("additionalErrorInfo").GetString()!);
        Assert.Equal(2, plan.RootElement.GetProperty("partitionedQueryExecutionInfoVersion").GetInt32());
        var info = plan.RootElement.GetProperty("queryInfo");
        var value = info.GetProperty(field);
        Assert.Equal(expected, value.ValueKind == JsonValueKind.Array ? value[0].GetString() : value.ToString());
        foreach (var name in new[] { "distinctType", "offset", "orderByExpressions", "groupByExpressions", "groupByAliases", "groupByAliasToAggregateType", "rewrittenQuery", "hasSelectValue" })
        {
            Assert.True(info.TryGetProperty(name, out _), name);
        }

        Assert.Equal(JsonValueKind.Array, plan.RootElement.GetProperty("queryRanges").ValueKind);
    }

    [Fact]
    public async Task Cross_partition_query_without_the_enable_header_is_400()
    {
        using var http = new HttpClient();

        using var response = await http.SendAsync(Query("SELECT * FROM c", maxItemCount: 10, null, enableCrossPartition: false));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Contains("x-ms-documentdb-query-enablecrosspartition", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Foreign_continuation_token_is_400()
    {
        using var http = new HttpClient();

        using var response = await http.SendAsync(Query("SELECT * FROM c", maxItemCount: 10, "xp.bm90LWEtdG9rZW4"));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
    }

    // The .NET SDK fans out itself (one request per partition key range, from the query plan); the
    // results and its own continuation tokens must agree with what the gateway serves the JS SDK.
    [Fact]
    public async Task Dotnet_sdk_pages_a_cross_partition_filter_and_resumes_from_its_continuation_token()
    {
        var query = new QueryDefinition("SELECT * FROM c WHERE c.weight < @w").WithParameter("@w", 8);
        var options = new QueryRequestOptions { MaxItemCount = 5 };
        var first = Container.GetItemQueryIterator<Row>(query, requestOptions: options);
        var seen = new List<string>();
        string? token = null;
        for (var i = 0; i < 3; i++)
        {
            var page = await first.ReadNextAsync();
            Assert.True(page.Count <= 5);
            seen.AddRange(page.Select(r => r.Id));
            token = page.ContinuationToken;
        }

        Assert.NotNull(token);
        var rest = await Container.GetItemQueryIterator<Row>(query, token, options).ToListAsync();

        var all = seen.Concat(rest.Select(r => r.Id)).ToList();
        Assert.Equal(all.Count, all.Distinct().Count());
        Assert.Equal(Enumerable.Range(0, Count).Where(i => (i * 7) % 10 < 8).Select(i => $"q-{i:00}"), all.Order());
    }

    [Fact]
    public async Task Dotnet_sdk_merges_order_by_over_pages_and_resumes_it()
    {
        var options = new QueryRequestOptions { MaxItemCount = 4 };
        var ascending = await Container.GetItemQueryIterator<Row>("SELECT * FROM c ORDER BY c.n", requestOptions: options).ToListAsync();
        var descending = Container.GetItemQueryIterator<int>("SELECT VALUE c.n FROM c ORDER BY c.n DESC", requestOptions: options);
        var firstPage = await descending.ReadNextAsync();
        var resumed = await Container.GetItemQueryIterator<int>("SELECT VALUE c.n FROM c ORDER BY c.n DESC", firstPage.ContinuationToken, options).ToListAsync();

        Assert.Equal(Enumerable.Range(0, Count), ascending.Select(r => r.N));
        Assert.Equal(Enumerable.Range(0, Count).Reverse(), firstPage.Concat(resumed));
    }

    [Fact]
    public async Task Dotnet_sdk_combines_aggregates_top_and_offset_limit()
    {
        async Task<List<T>> All<T>(string text) => await Container.GetItemQueryIterator<T>(text).ToListAsync();

        Assert.Equal([Count], await All<int>("SELECT VALUE COUNT(1) FROM c"));
        Assert.Equal([Count * (Count - 1) / 2], await All<int>("SELECT VALUE SUM(c.n) FROM c"));
        Assert.Equal([4], await All<int>("SELECT VALUE MIN(c.n) FROM c WHERE c.n > 3"));
        Assert.Equal([9], await All<int>("SELECT VALUE MAX(c.weight) FROM c"));
        Assert.Equal([(Count - 1) / 2.0], await All<double>("SELECT VALUE AVG(c.n) FROM c"));
        Assert.Equal(5, (await All<Row>("SELECT TOP 5 * FROM c WHERE c.n >= 10")).Count);
        Assert.Equal([40, 39, 38], await All<int>("SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC"));
        Assert.Equal([3, 4, 5, 6], await All<int>("SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 3 LIMIT 4"));
    }

    /// <summary>A query as the JavaScript SDK sends it first: no range, no partition key.</summary>
    private HttpRequestMessage Query(string query, int maxItemCount, string? continuation, bool enableCrossPartition = true)
    {
        const string link = "dbs/test/colls/items";
        var request = CosmosTestHost.SignedRequest(Emulator, HttpMethod.Post, link + "/docs", "docs", link);
        request.Content = new StringContent(JsonSerializer.Serialize(new { query, parameters = Array.Empty<object>() }), Encoding.UTF8);
        request.Content.Headers.ContentType = new MediaTypeHeaderValue("application/query+json");
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-isquery", "True");
        request.Headers.TryAddWithoutValidation("x-ms-max-item-count", maxItemCount.ToString(CultureInfo.InvariantCulture));
        if (enableCrossPartition)
        {
            request.Headers.TryAddWithoutValidation("x-ms-documentdb-query-enablecrosspartition", "true");
        }

        if (continuation is not null)
        {
            request.Headers.TryAddWithoutValidation("x-ms-continuation", continuation);
        }

        return request;
    }

    public sealed record Row(string Id, string OwnerId, int N, int Weight);
}
