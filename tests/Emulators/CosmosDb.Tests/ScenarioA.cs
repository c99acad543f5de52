using System.Globalization;
using System.Net;
using DroneDelivery.TestSupport;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

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
    /// the requested RU/s (so loading never throttles) and lets the budgets refill: on
    /// <paramref name="time"/> when the emulator runs on that clock, otherwise in real time.
    /// </summary>
    public static async Task<Container> CreateAsync(CosmosEmulator emulator, CosmosClient client, string id, string partitionKeyPath, int throughput, FakeTimeProvider? time = null)
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
        if (time is null)
        {
            await BudgetsRefilledAsync(emulator, id);
        }
        else
        {
            BudgetsRefilled(emulator, id, time);
        }

        return container;
    }

    /// <summary>Waits until every partition of the container has its whole RU budget to spend, so a measurement starts from rest.</summary>
    public static async Task BudgetsRefilledAsync(CosmosEmulator emulator, string id)
    {
        Assert.True(await Eventually.TrueAsync(() => Full(emulator, id), TimeSpan.FromSeconds(60)), $"The partitions of {id} never refilled their RU budgets.");
    }

    /// <summary>Moves the emulator's clock a second at a time until every partition of the container has its whole RU budget.</summary>
    public static void BudgetsRefilled(CosmosEmulator emulator, string id, FakeTimeProvider time)
    {
        for (var second = 0; !Full(emulator, id); second++)
        {
            Assert.True(second < 60, $"The partitions of {id} had not refilled their RU budgets after a minute of the emulator's time.");
            time.Advance(TimeSpan.FromSeconds(1));
        }
    }

    /// <summary>
    /// Runs the utilization query <paramref name="queries"/> times, for different owners, starting the
    /// i-th at i ÷ <paramref name="queriesPerSecond"/> seconds on the emulator's clock
    /// <paramref name="time"/>. Each query finishes before the clock moves on, so the partitions see
    /// exactly that rate however fast this machine is; a throttled query is retried (by the SDK) on the
    /// time its wait moved the clock by (see <see cref="RetryAfterClock"/>).
    /// </summary>
    public static async Task<List<FeedResponse<DroneUtilization>>> AtRateAsync(
        Container container,
        FakeTimeProvider time,
        double queriesPerSecond,
        int queries,
        QueryRequestOptions? options = null)
    {
        var origin = time.GetUtcNow();
        var pages = new List<FeedResponse<DroneUtilization>>();
        for (var i = 0; i < queries; i++)
        {
            var due = origin + TimeSpan.FromTicks((long)(i * TimeSpan.TicksPerSecond / queriesPerSecond));
            var now = time.GetUtcNow();
            if (due > now)
            {
                time.Advance(due - now);
            }

            pages.AddRange(await RunAsync(container, $"owner-{i % 20}", options));
        }

        return pages;
    }

    /// <summary>
    /// A client whose throttled waits pass on the emulator's clock: see <see cref="RetryAfterClock"/>.
    /// </summary>
    public static CosmosClient PatientClient(CosmosEmulator emulator, FakeTimeProvider time) =>
        CosmosTestHost.Client(emulator, o => o.HttpClientFactory = () => new HttpClient(new RetryAfterClock(time)));

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

    private static bool Full(CosmosEmulator emulator, string id) =>
        emulator.GetMetrics(1).Container("invoicing", id)!.Partitions.All(p => p.AvailableRequestUnits >= p.ProvisionedThroughput - 0.001);
}

/// <summary>
/// Sends the SDK's requests, and when the emulator answers 429 moves the emulator's clock on by the
/// retry-after it asked for: the time the client then waits before retrying passes for the emulator too,
/// as it would on a real clock.
/// </summary>
internal sealed class RetryAfterClock(FakeTimeProvider time) : DelegatingHandler(new HttpClientHandler())
{
    protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var response = await base.SendAsync(request, cancellationToken);
        if (response.StatusCode == HttpStatusCode.TooManyRequests
            && response.Headers.TryGetValues("x-ms-retry-after-ms", out var values)
            && double.TryParse(values.First(), NumberStyles.Float, CultureInfo.InvariantCulture, out var milliseconds))
        {
            time.Advance(TimeSpan.FromMilliseconds(milliseconds));
        }

        return response;
    }
}
