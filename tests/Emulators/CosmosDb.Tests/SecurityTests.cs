using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

public sealed class SecurityTests
{
    [Fact]
    public async Task A_request_signed_with_another_key_is_refused_with_401()
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        var otherKey = Convert.ToBase64String(Enumerable.Range(1, 64).Select(i => (byte)i).ToArray());
        using var intruder = CosmosTestHost.Client(emulator, key: otherKey);
        using var owner = CosmosTestHost.Client(emulator);

        var error = await Assert.ThrowsAsync<CosmosException>(() => intruder.CreateDatabaseIfNotExistsAsync("db"));
        var allowed = await owner.CreateDatabaseIfNotExistsAsync("db");

        Assert.Equal(HttpStatusCode.Unauthorized, error.StatusCode);
        Assert.Equal(HttpStatusCode.Created, allowed.StatusCode);
    }

    [Fact]
    public async Task A_configured_account_key_replaces_the_well_known_one()
    {
        var key = Convert.ToBase64String(Enumerable.Range(100, 64).Select(i => (byte)i).ToArray());
        await using var emulator = await CosmosTestHost.StartAsync(o => o.AccountKey = key);
        using var withWellKnownKey = CosmosTestHost.Client(emulator, key: Configuration.CosmosEmulatorOptions.WellKnownAccountKey);
        using var withConfiguredKey = CosmosTestHost.Client(emulator);

        var error = await Assert.ThrowsAsync<CosmosException>(() => withWellKnownKey.CreateDatabaseIfNotExistsAsync("db"));

        Assert.Equal(HttpStatusCode.Unauthorized, error.StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await withConfiguredKey.CreateDatabaseIfNotExistsAsync("db")).StatusCode);
    }

    [Fact]
    public async Task Https_endpoint_serves_the_sdk_through_the_connection_string()
    {
        await using var emulator = await CosmosTestHost.StartAsync(o => o.Https = true);
        using var client = new CosmosClient(emulator.ConnectionString, new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
        });

        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        await container.CreateItemAsync(new { id = "1", pk = "a" }, new PartitionKey("a"));
        var count = await container.GetItemQueryIterator<int>("SELECT VALUE COUNT(1) FROM c").ToListAsync();

        Assert.Equal("https", emulator.Endpoint.Scheme);
        Assert.Equal([1], count);
    }
}
