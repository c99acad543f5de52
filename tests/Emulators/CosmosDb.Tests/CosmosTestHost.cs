using System.Globalization;
using System.Security.Cryptography;
using System.Text;
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

    /// <summary>
    /// A request signed with the emulator's account key and sent without the SDK, for what the .NET SDK
    /// does not send (or sends differently): <paramref name="resourceType"/> and <paramref name="resourceLink"/>
    /// are what the signature covers (<c>docs</c> and <c>dbs/d/colls/c</c> for a POST to the container's docs).
    /// </summary>
    public static HttpRequestMessage SignedRequest(CosmosEmulator emulator, HttpMethod method, string path, string resourceType, string resourceLink)
    {
        var request = new HttpRequestMessage(method, new Uri(emulator.Endpoint, path));
        var date = DateTime.UtcNow.ToString("r", CultureInfo.InvariantCulture);
        var payload = $"{method.Method.ToLowerInvariant()}\n{resourceType}\n{resourceLink}\n{date.ToLowerInvariant()}\n\n";
        var signature = Convert.ToBase64String(HMACSHA256.HashData(Convert.FromBase64String(emulator.AccountKey), Encoding.UTF8.GetBytes(payload)));
        request.Headers.TryAddWithoutValidation("authorization", Uri.EscapeDataString($"type=master&ver=1.0&sig={signature}"));
        request.Headers.TryAddWithoutValidation("x-ms-date", date);
        request.Headers.TryAddWithoutValidation("x-ms-version", "2020-07-15");
        return request;
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

/// <summary>
/// A test class's own in-process emulator and official SDK client, started before each test and disposed after it,
/// and with a partition key path a container of the test database. A class that needs more of its emulator (a
/// fake clock, modelled latency) or another client overrides <see cref="Configure"/> or <see cref="CreateClient"/>.
/// </summary>
public abstract class EmulatorTest(string? partitionKeyPath = null, int physicalPartitions = 4) : IAsyncLifetime
{
    protected CosmosEmulator Emulator { get; private set; } = null!;

    protected CosmosClient Client { get; private set; } = null!;

    protected Container Container { get; private set; } = null!;

    public virtual async Task InitializeAsync()
    {
        Emulator = await CosmosTestHost.StartAsync(options =>
        {
            options.DefaultPhysicalPartitions = physicalPartitions;
            Configure(options);
        });
        Client = CreateClient(Emulator);
        if (partitionKeyPath is not null)
        {
            Container = await CosmosTestHost.ContainerAsync(Client, partitionKeyPath);
        }
    }

    public virtual async Task DisposeAsync()
    {
        Client.Dispose();
        await Emulator.DisposeAsync();
    }

    /// <summary>Sets the emulator's options beyond its physical partitions; called before it starts.</summary>
    protected virtual void Configure(CosmosEmulatorOptions options)
    {
    }

    /// <summary>The client the tests use: by default <see cref="CosmosTestHost.Client"/>'s, unchanged.</summary>
    protected virtual CosmosClient CreateClient(CosmosEmulator emulator) => CosmosTestHost.Client(emulator);
}
