using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.DroneScheduler;
using DroneDelivery.DroneScheduler.Seeding;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>
/// One Cosmos DB emulator, in process, shared by a collection: the database provisioned by the seed
/// command's code, and a small utilization data set loaded into two 9-partition containers — the
/// baseline's (partitioned by delivery id) and step A4's (partitioned by owner).
/// </summary>
public sealed class CosmosFixture : IAsyncLifetime
{
    public const string DatabaseId = "dronedelivery";
    public const string ByDeliveryContainer = "utilization";
    public const string ByOwnerContainer = "utilization-by-owner";
    public const int PhysicalPartitions = 9;

    /// <summary>Step A1 in miniature: 400 RU/s over 8 partitions, 50 RU/s each.</summary>
    public const string ThrottledContainer = "utilization-throttled";

    /// <summary>The seeded data set: 3 owners × 2 months × 6 deliveries.</summary>
    public static readonly SeedOptions Seed = new()
    {
        DatabaseId = DatabaseId,
        Owners = 3,
        FirstMonth = new(2025, 1),
        Months = 2,
        DeliveriesPerOwnerMonth = 6,
        Seed = 7,
        Throughput = 90_000,
        OtherThroughput = 20_000,
    };

    public CosmosEmulator Emulator { get; private set; } = null!;

    public CosmosClient Client { get; private set; } = null!;

    public string ConnectionString => Emulator.ConnectionString;

    public async Task InitializeAsync()
    {
        Emulator = await CosmosEmulator.StartAsync(new CosmosEmulatorOptions
        {
            Databases =
            [
                new DatabaseOptions
                {
                    Id = DatabaseId,
                    Containers =
                    [
                        new ContainerOptions { Id = ByDeliveryContainer, PartitionKeyPath = UtilizationSettings.ByDelivery, Throughput = 90_000, PhysicalPartitions = PhysicalPartitions },
                        new ContainerOptions { Id = ByOwnerContainer, PartitionKeyPath = UtilizationSettings.ByOwner, Throughput = 90_000, PhysicalPartitions = PhysicalPartitions },
                        new ContainerOptions { Id = ThrottledContainer, PartitionKeyPath = UtilizationSettings.ByDelivery, Throughput = 400, PhysicalPartitions = 8 },
                    ],
                },
            ],
        });
        Client = new CosmosClient(Emulator.ConnectionString, new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
            UseSystemTextJsonSerializerWithOptions = CosmosClients.DocumentJson,
        });
        var seeder = new UtilizationSeeder(Client, TextWriter.Null);
        await seeder.RunAsync(Seed, CancellationToken.None);
        await seeder.RunAsync(Seed with { UtilizationContainerId = ByOwnerContainer, PartitionKeyPath = UtilizationSettings.ByOwner }, CancellationToken.None);
        await seeder.RunAsync(Seed with { UtilizationContainerId = ThrottledContainer, Throughput = 400, LoadThroughput = 90_000 }, CancellationToken.None);
    }

    /// <summary>Settings pointing a Cosmos-backed service at this emulator, plus <paramref name="settings"/>.</summary>
    public Dictionary<string, string?> Settings(Dictionary<string, string?>? settings = null)
    {
        var all = new Dictionary<string, string?> { ["Cosmos:ConnectionString"] = ConnectionString };
        foreach (var (key, value) in settings ?? [])
        {
            all[key] = value;
        }

        return all;
    }

    public async Task DisposeAsync()
    {
        Client?.Dispose();
        if (Emulator is not null)
        {
            await Emulator.DisposeAsync();
        }
    }
}

[CollectionDefinition(Name)]
public sealed class CosmosCollection : ICollectionFixture<CosmosFixture>
{
    public const string Name = "cosmos";
}
