using DroneDelivery.DroneScheduler.Seeding;
using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Services.Tests;

/// <summary>The DroneScheduler's <c>seed</c> command, run as the Kubernetes Job and the lab run it, against the emulator.</summary>
[Collection(CosmosCollection.Name)]
public sealed class SeedCommandTests(CosmosFixture cosmos)
{
    [Fact]
    public async Task Seeding_provisions_the_containers_and_loads_owners_times_months_times_deliveries()
    {
        var container = "seeded-" + Guid.NewGuid().ToString("N")[..8];
        var (exitCode, output, _) = await RunAsync(
            "--container", container, "--partition-key-path", "/ownerId", "--throughput", "1200", "--load-throughput", "20000",
            "--owners", "4", "--first-month", "2024-11", "--months", "3", "--deliveries", "5", "--seed", "11");

        Assert.Equal(0, exitCode);
        Assert.Contains($"Created container {CosmosFixture.DatabaseId}/{container} partitioned by /ownerId with 20000 RU/s.", output);
        Assert.Contains("Loaded 60 documents", output);
        var utilization = cosmos.Client.GetContainer(CosmosFixture.DatabaseId, container);
        Assert.Equal(1200, await utilization.ReadThroughputAsync());
        Assert.Equal(60, await CountAsync(utilization, "SELECT VALUE COUNT(1) FROM c"));
        Assert.Equal(5, await CountAsync(utilization, "SELECT VALUE COUNT(1) FROM c WHERE c.ownerId = 'owner-0003' AND c.year = 2025 AND c.month = 1"));
    }

    [Fact]
    public async Task Reseeding_an_existing_container_replaces_its_throughput_and_rewrites_the_same_documents()
    {
        var container = "reseeded-" + Guid.NewGuid().ToString("N")[..8];
        string[] data = ["--container", container, "--owners", "2", "--deliveries", "3", "--seed", "5", "--load-throughput", "20000"];
        await RunAsync([.. data, "--throughput", "900"]);

        var (exitCode, output, _) = await RunAsync([.. data, "--throughput", "2500"]);

        Assert.Equal(0, exitCode);
        Assert.Contains($"Container {CosmosFixture.DatabaseId}/{container} exists; throughput 900 → 20000 RU/s.", output);
        var utilization = cosmos.Client.GetContainer(CosmosFixture.DatabaseId, container);
        Assert.Equal(2500, await utilization.ReadThroughputAsync());
        Assert.Equal(6, await CountAsync(utilization, "SELECT VALUE COUNT(1) FROM c"));
    }

    [Fact]
    public async Task Provision_only_creates_the_containers_the_services_need_and_loads_nothing()
    {
        var suffix = Guid.NewGuid().ToString("N")[..8];
        var (exitCode, output, _) = await RunAsync(
            "--provision-only", "--container", "u-" + suffix, "--packages-container", "p-" + suffix, "--drones-container", "d-" + suffix);

        Assert.Equal(0, exitCode);
        Assert.DoesNotContain("Loading", output);
        foreach (var (id, path) in new[] { ("u-" + suffix, "/partitionKey"), ("p-" + suffix, "/id"), ("d-" + suffix, "/id") })
        {
            var properties = (await cosmos.Client.GetContainer(CosmosFixture.DatabaseId, id).ReadContainerAsync()).Resource;
            Assert.Equal(path, properties.PartitionKeyPath);
        }
    }

    [Fact]
    public async Task A_container_partitioned_by_another_key_is_refused_by_name()
    {
        var (exitCode, _, error) = await RunAsync("--container", CosmosFixture.ByDeliveryContainer, "--partition-key-path", "/ownerId", "--provision-only");

        Assert.Equal(1, exitCode);
        Assert.Contains("exists partitioned by /partitionKey, not /ownerId", error);
    }

    [Fact]
    public async Task Load_only_fills_the_existing_container_and_changes_nothing_else()
    {
        var container = "load-only-" + Guid.NewGuid().ToString("N")[..8];
        await RunAsync("--provision-only", "--container", container, "--throughput", "900");

        var (exitCode, output, error) = await RunAsync("--load-only", "--container", container, "--throughput", "2500", "--owners", "2", "--deliveries", "3");

        Assert.True(exitCode == 0, error);
        Assert.Contains("loading only", output);
        Assert.DoesNotContain("throughput", output);
        var utilization = cosmos.Client.GetContainer(CosmosFixture.DatabaseId, container);
        Assert.Equal(900, await utilization.ReadThroughputAsync());
        Assert.Equal(6, await CountAsync(utilization, "SELECT VALUE COUNT(1) FROM c"));
    }

    [Fact]
    public async Task Load_only_into_a_missing_container_fails_naming_it()
    {
        var (exitCode, _, error) = await RunAsync("--load-only", "--container", "never-created");

        Assert.Equal(1, exitCode);
        Assert.Contains($"Container {CosmosFixture.DatabaseId}/never-created does not exist; --load-only creates nothing", error);
        await Assert.ThrowsAsync<CosmosException>(() => cosmos.Client.GetContainer(CosmosFixture.DatabaseId, "never-created").ReadContainerAsync());
    }

    [Theory]
    [InlineData("with Entra ID (--account-endpoint) add --load-only", "--account-endpoint", "https://contoso.documents.azure.com:443/")]
    [InlineData("must be an https address", "--account-endpoint", "http://contoso.documents.azure.com/", "--load-only")]
    [InlineData("choose the key (--connection-string) or Entra ID", "--account-endpoint", "https://contoso.documents.azure.com:443/", "--connection-string", "AccountEndpoint=https://x/;AccountKey=a2V5;", "--load-only")]
    [InlineData("No Cosmos DB account")]
    public async Task The_account_is_a_key_or_Entra_ID_for_loading_only(string expected, params string[] args)
    {
        var error = new StringWriter();

        var exitCode = await SeedCommand.RunAsync(args, new StringWriter(), error);

        Assert.Equal(2, exitCode);
        Assert.Contains(expected, error.ToString(), StringComparison.OrdinalIgnoreCase);
    }

    [Theory]
    [InlineData("--owners", "0", "--owners must be at least 1")]
    [InlineData("--first-month", "2025-13", "--first-month must be yyyy-MM")]
    [InlineData("--partition-key-path", "/id", "/id")]
    [InlineData("--throughput", "100", "--throughput must be at least 400")]
    [InlineData("--concurency", "4", "--concurency")]
    public async Task Bad_arguments_exit_with_2_naming_the_argument(string option, string value, string expected)
    {
        var (exitCode, _, error) = await RunAsync(option, value);

        Assert.Equal(2, exitCode);
        Assert.Contains(expected, error);
    }

    [Fact]
    public void The_data_set_is_the_same_for_the_same_seed_and_differs_for_another()
    {
        var options = new SeedOptions { Owners = 3, Months = 2, DeliveriesPerOwnerMonth = 4, Seed = 3 };

        var first = UtilizationDataSet.Generate(options).ToList();
        var again = UtilizationDataSet.Generate(options).ToList();
        var other = UtilizationDataSet.Generate(options with { Seed = 4 }).ToList();

        Assert.Equal(24, first.Count);
        Assert.Equal(first, again);
        Assert.Equal(first.Select(d => d.Id), other.Select(d => d.Id));
        Assert.NotEqual(first.Select(d => d.TraveledMiles), other.Select(d => d.TraveledMiles));
        Assert.All(first, d => Assert.InRange(d.TraveledMiles, 30, 500));
        Assert.Equal(["owner-0000", "owner-0001", "owner-0002"], first.Select(d => d.OwnerId).Distinct());
    }

    private async Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args)
    {
        var output = new StringWriter();
        var error = new StringWriter();
        var exitCode = await SeedCommand.RunAsync(
            ["--connection-string", cosmos.ConnectionString, "--database", CosmosFixture.DatabaseId, "--other-throughput", "20000", .. args], output, error);
        return (exitCode, output.ToString(), error.ToString());
    }

    private static async Task<int> CountAsync(Container container, string query)
    {
        using var iterator = container.GetItemQueryIterator<int>(query);
        var count = 0;
        while (iterator.HasMoreResults)
        {
            foreach (var value in await iterator.ReadNextAsync())
            {
                count += value;
            }
        }

        return count;
    }
}
