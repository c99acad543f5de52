using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Optimistic direct execution, as the .NET SDK uses it when a client opts in: a query whose target is one
/// partition range goes straight to it and the answer is the same as through a query plan. (The SDK still asks
/// for a plan first when the query text has an aggregate, DISTINCT or GROUP BY, to check it; then it sends the
/// query itself, not the plan's rewrite.)
/// </summary>
public sealed class OptimisticDirectExecutionTests : IAsyncLifetime
{
    private CosmosEmulator _emulator = null!;
    private CosmosClient _client = null!;

    public async Task InitializeAsync()
    {
        _emulator = await CosmosTestHost.StartAsync();
        _client = CosmosTestHost.Client(_emulator);
    }

    public async Task DisposeAsync()
    {
        _client.Dispose();
        await _emulator.DisposeAsync();
    }

    public static TheoryData<string> StreamingQueries => new()
    {
        "SELECT c.id, c.weight FROM c WHERE c.owner = 'b' ORDER BY c.weight DESC",
        "SELECT TOP 7 c.id FROM c ORDER BY c.id",
        "SELECT c.id FROM c ORDER BY c.weight OFFSET 5 LIMIT 10",
        "SELECT * FROM c WHERE c.month = 2",
    };

    public static TheoryData<string> CheckedQueries => new()
    {
        "SELECT VALUE COUNT(1) FROM c WHERE c.owner = 'a'",
        "SELECT VALUE SUM(c.weight) FROM c WHERE c.owner = 'a' AND c.month = 3",
        "SELECT DISTINCT VALUE c.month FROM c WHERE c.month > 0",
    };

    [Theory]
    [MemberData(nameof(CheckedQueries))]
    public async Task A_query_the_client_checks_with_a_plan_first_is_then_answered_directly_and_the_same(string query)
    {
        var container = await SeededAsync("checked", physicalPartitions: 1);

        var direct = await RunAsync(container, query, optimistic: true);

        Assert.Equal(await RunAsync(container, query, optimistic: false), direct);
        Assert.NotEmpty(direct);
    }

    [Theory]
    [MemberData(nameof(StreamingQueries))]
    public async Task A_single_partition_container_answers_without_a_query_plan_as_it_does_with_one(string query)
    {
        var container = await SeededAsync("single", physicalPartitions: 1);

        var before = _emulator.LastRequestSequence;
        // Small pages: the continuation must go on directly too, not start over with a plan.
        var direct = await RunAsync(container, query, optimistic: true);
        var directRequests = _emulator.GetRequests(before);
        var planned = await RunAsync(container, query, optimistic: false);

        Assert.Equal(planned, direct);
        Assert.DoesNotContain(directRequests, r => r.Operation == CosmosEmulatorOperations.QueryPlan);
        Assert.Contains(directRequests, r => r.Operation == CosmosEmulatorOperations.Query);
    }

    [Fact]
    public async Task A_container_of_several_partitions_still_gets_a_query_plan_and_the_same_answer()
    {
        var container = await SeededAsync("several", physicalPartitions: 3);
        const string query = "SELECT VALUE COUNT(1) FROM c WHERE c.owner = 'a'";

        var before = _emulator.LastRequestSequence;
        var direct = await RunAsync(container, query, optimistic: true);

        Assert.Equal(await RunAsync(container, query, optimistic: false), direct);
        Assert.Contains(_emulator.GetRequests(before), r => r.Operation == CosmosEmulatorOperations.QueryPlan);
    }

    private async Task<Container> SeededAsync(string id, int physicalPartitions)
    {
        var database = (await _client.CreateDatabaseIfNotExistsAsync("test")).Database;
        // 10,000 RU/s per physical partition: the emulator derives the partition count from the RU/s.
        var container = (await database.CreateContainerIfNotExistsAsync(new ContainerProperties(id, "/id"), physicalPartitions * 10_000)).Container;
        for (var i = 0; i < 60; i++)
        {
            var item = new { id = $"item-{i:00}", owner = i % 3 == 0 ? "a" : "b", month = i % 5, weight = (i * 7 % 23) + 0.5 };
            await container.CreateItemAsync(item, new PartitionKey(item.id));
        }

        return container;
    }

    private static async Task<List<string>> RunAsync(Container container, string query, bool optimistic)
    {
        var options = new QueryRequestOptions { MaxItemCount = 4, MaxConcurrency = -1, EnableOptimisticDirectExecution = optimistic };
        using var iterator = container.GetItemQueryStreamIterator(new QueryDefinition(query), requestOptions: options);
        var rows = new List<string>();
        while (iterator.HasMoreResults)
        {
            using var page = await iterator.ReadNextAsync();
            page.EnsureSuccessStatusCode();
            using var document = await System.Text.Json.JsonDocument.ParseAsync(page.Content);
            rows.AddRange(document.RootElement.GetProperty("Documents").EnumerateArray().Select(d => d.GetRawText()));
        }

        return rows;
    }
}
