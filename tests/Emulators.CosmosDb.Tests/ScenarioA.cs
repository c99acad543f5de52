using System.Diagnostics;
using DroneDelivery.TestSupport;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The case study's utilization data: one container partitioned by a per-item key (queries by owner
/// fan out) and one partitioned by owner (queries by owner hit one partition), nine physical
/// partitions each.
/// </summary>
internal static class ScenarioA
{
    public const int Partitions = 9;
    public const string UtilizationQuery = "SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month";

    public static QueryDefinition Utilization(string ownerId = "owner-1", int year = 2025, int month = 3) =>
        new QueryDefinition(UtilizationQuery).WithParameter("@ownerId", ownerId).WithParameter("@year", year).WithParameter("@month", month);

    /// <summary>
    /// Creates the container with a generous budget, loads 20 owners × 3 months × 10 items, then sets
    /// the requested RU/s (so loading never throttles).
    /// </summary>
    public static async Task<Container> CreateAsync(CosmosEmulator emulator, CosmosClient client, string id, string partitionKeyPath, int throughput)
    {
        var database = (await client.CreateDatabaseIfNotExistsAsync("invoicing")).Database;
        var container = (await database.CreateContainerIfNotExistsAsync(new ContainerProperties(id, partitionKeyPath), 90_000)).Container;
        var items = new List<DroneUtilization>();
        for (var owner = 0; owner < 20; owner++)
        {
            for (var month = 1; month <= 3; month++)
            {
                for (var n = 0; n < 10; n++)
                {
                    var itemId = $"d-{owner}-{month}-{n}";
                    items.Add(new DroneUtilization(itemId, itemId, $"owner-{owner}", 2025, month, 30 + n, 1 + (n % 4)));
                }
            }
        }

        await Task.WhenAll(items.Select(item => container.CreateItemAsync(item,
            new PartitionKey(partitionKeyPath == "/ownerId" ? item.OwnerId : item.PartitionKey))));
        await container.ReplaceThroughputAsync(throughput);
        await BudgetsRefilledAsync(emulator, id);
        return container;
    }

    /// <summary>Waits until every partition of the container has its whole RU budget to spend, so a measurement starts from rest.</summary>
    public static async Task BudgetsRefilledAsync(CosmosEmulator emulator, string id)
    {
        bool Full() => emulator.GetMetrics(1).Container("invoicing", id)!.Partitions.All(p => p.AvailableRequestUnits >= p.ProvisionedThroughput - 0.001);
        Assert.True(await Eventually.TrueAsync(Full, TimeSpan.FromSeconds(60)), $"The partitions of {id} never refilled their RU budgets.");
    }

    /// <summary>
    /// Starts the utilization query at a fixed rate (an open load, like the lab's), for different owners,
    /// and returns every page once all have finished.
    /// </summary>
    public static async Task<List<FeedResponse<DroneUtilization>>> AtRateAsync(
        Container container,
        double queriesPerSecond,
        TimeSpan duration,
        QueryRequestOptions? options = null)
    {
        var count = (int)(queriesPerSecond * duration.TotalSeconds);
        var started = Stopwatch.GetTimestamp();
        var queries = new List<Task<List<FeedResponse<DroneUtilization>>>>(count);
        for (var i = 0; i < count; i++)
        {
            var wait = TimeSpan.FromSeconds(i / queriesPerSecond) - Stopwatch.GetElapsedTime(started);
            if (wait > TimeSpan.Zero)
            {
                await Task.Delay(wait);
            }

            queries.Add(RunAsync(container, $"owner-{i % 20}", options));
        }

        return [.. (await Task.WhenAll(queries)).SelectMany(pages => pages)];
    }

    public static async Task<List<FeedResponse<DroneUtilization>>> RunAsync(Container container, string ownerId, QueryRequestOptions? options = null)
    {
        var pages = new List<FeedResponse<DroneUtilization>>();
        using var iterator = container.GetItemQueryIterator<DroneUtilization>(Utilization(ownerId), requestOptions: options);
        while (iterator.HasMoreResults)
        {
            pages.Add(await iterator.ReadNextAsync());
        }

        return pages;
    }
}
