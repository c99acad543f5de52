using DroneDelivery.Emulators.CosmosDb.Configuration;
using Microsoft.Azure.Cosmos;

[assembly: CollectionBehavior(DisableTestParallelization = true)]

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>Starts in-process emulators and official SDK clients (Gateway mode) pointed at them.</summary>
internal static class CosmosTestHost
{
    /// <summary>An emulator with no modelled latency unless the test asks for it, so tests stay fast.</summary>
    public static Task<CosmosEmulator> StartAsync(Action<CosmosEmulatorOptions>? configure = null)
    {
        var options = new CosmosEmulatorOptions
        {
            Latency = new LatencyOptions { FixedMilliseconds = 0, PerDocumentMilliseconds = 0, ThrottledMilliseconds = 0 },
        };
        configure?.Invoke(options);
        return CosmosEmulator.StartAsync(options);
    }

    public static CosmosClient Client(CosmosEmulator emulator, Action<CosmosClientOptions>? configure = null, string? key = null)
    {
        var options = new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
            SerializerOptions = new CosmosSerializationOptions { PropertyNamingPolicy = CosmosPropertyNamingPolicy.CamelCase },
        };
        configure?.Invoke(options);
        return new CosmosClient(emulator.Endpoint.ToString(), key ?? emulator.AccountKey, options);
    }

    /// <summary>A database and a container with the given partition key path, RU/s and physical partitions.</summary>
    public static async Task<Container> ContainerAsync(
        CosmosClient client,
        string partitionKeyPath,
        int throughput = 100_000,
        string id = "items")
    {
        var database = (await client.CreateDatabaseIfNotExistsAsync("test")).Database;
        return (await database.CreateContainerIfNotExistsAsync(new ContainerProperties(id, partitionKeyPath), throughput)).Container;
    }

    /// <summary>Drains a query, returning every result.</summary>
    public static async Task<List<T>> ToListAsync<T>(this FeedIterator<T> iterator)
    {
        var results = new List<T>();
        while (iterator.HasMoreResults)
        {
            results.AddRange(await iterator.ReadNextAsync());
        }

        return results;
    }
}

/// <summary>An item as the case study's utilization container stores it.</summary>
public sealed record DroneUtilization(
    string Id,
    string PartitionKey,
    string OwnerId,
    int Year,
    int Month,
    double TravelledMiles,
    double AssignedHours);
