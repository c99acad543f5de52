using Azure.Messaging.ServiceBus;
using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.DroneScheduler.Seeding;
using DroneDelivery.Emulators.CosmosDb;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.LocalProcesses;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>
/// The whole system on 127.0.0.1: a real redis-server, the Cosmos DB and Service Bus emulators, and the
/// six services as real Kestrel apps, wired as in a deployment. Tests that need a Workflow with other
/// backends or settings start their own on a queue of their own.
/// </summary>
public sealed class SystemFixture : IAsyncLifetime
{
    public const string MainQueue = "deliveryrequests";

    /// <summary>Queues for tests that run their own Workflow or Ingestion, so nothing else consumes their messages.</summary>
    public static readonly string[] TestQueues = ["redelivery", "permanent", "transient", "exhausted", "poison", "batching", "tracing"];

    /// <summary>MaxDeliveryCount of every queue.</summary>
    public const int MaxDeliveryCount = 4;

    /// <summary>The setting that makes a public service serve its API document and reference page outside Development.</summary>
    public const string ApiReferenceEnabled = "ApiReference:Enabled";

    private readonly List<IAsyncDisposable> _resources = [];

    public RedisServer Redis { get; private set; } = null!;

    public CosmosEmulator Cosmos { get; private set; } = null!;

    public ServiceBusEmulator ServiceBus { get; private set; } = null!;

    /// <summary>A client of the tests' own, for sending raw messages and reading dead-letter queues.</summary>
    public ServiceBusClient Client { get; private set; } = null!;

    public ServiceApp Delivery { get; private set; } = null!;

    public ServiceApp Package { get; private set; } = null!;

    public ServiceApp DroneScheduler { get; private set; } = null!;

    public ServiceApp Gateway { get; private set; } = null!;

    public ServiceApp Workflow { get; private set; } = null!;

    public ServiceApp Ingestion { get; private set; } = null!;

    public async Task InitializeAsync()
    {
        Redis = Track(await RedisServer.StartAsync(new RedisServerOptions()));
        Cosmos = Track(await CosmosEmulator.StartAsync(new CosmosEmulatorOptions()));
        ServiceBus = Track(await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
        {
            Queues = [.. new[] { MainQueue }.Concat(TestQueues).Select(name => new QueueOptions
            {
                Name = name,
                LockDuration = TimeSpan.FromSeconds(30),
                MaxDeliveryCount = MaxDeliveryCount,
            })],
        }));
        Client = Track(new ServiceBusClient(ServiceBus.ConnectionString));

        using (var cosmos = new CosmosClient(Cosmos.ConnectionString, new CosmosClientOptions { ConnectionMode = ConnectionMode.Gateway, LimitToEndpoint = true }))
        {
            await new UtilizationSeeder(cosmos, TextWriter.Null).RunAsync(
                new SeedOptions { ProvisionOnly = true, Throughput = 20_000, OtherThroughput = 20_000 }, CancellationToken.None);
        }

        Delivery = Track(await ServiceApp.StartAsync(Definitions.Delivery, new Dictionary<string, string?> { ["Redis:ConnectionString"] = Redis.ConnectionString }));
        Package = Track(await ServiceApp.StartAsync(Definitions.Package, CosmosSettings()));
        DroneScheduler = Track(await ServiceApp.StartAsync(Definitions.DroneScheduler, CosmosSettings()));
        // The public services serve their API document and reference page, which ApiDocumentTests and the
        // .http files' tests read, only where that is enabled.
        var gateway = BackendSettings();
        gateway[ApiReferenceEnabled] = "true";
        Gateway = Track(await ServiceApp.StartAsync(Definitions.Gateway, gateway));
        Workflow = Track(await StartWorkflowAsync(MainQueue));
        Ingestion = Track(await StartIngestionAsync(MainQueue, new() { [ApiReferenceEnabled] = "true" }));
    }

    /// <summary>A Workflow on <paramref name="queue"/> calling the system's backends, unless <paramref name="settings"/> says otherwise.</summary>
    public Task<ServiceApp> StartWorkflowAsync(string queue, Dictionary<string, string?>? settings = null)
    {
        var all = BackendSettings();
        all["ServiceBus:ConnectionString"] = ServiceBus.ConnectionString;
        all["ServiceBus:QueueName"] = queue;
        all["Processor:MaxDeliveryCount"] = MaxDeliveryCount.ToString(System.Globalization.CultureInfo.InvariantCulture);
        all["Processor:MaxConcurrentCalls"] = "4";
        all["Resilience:MaxRetryAttempts"] = "1";
        all["Resilience:RetryBaseDelay"] = "00:00:00.010";
        all["Redelivery:BaseDelay"] = "00:00:00.010";
        all["Redelivery:MaxDelay"] = "00:00:00.050";
        foreach (var (key, value) in settings ?? [])
        {
            all[key] = value;
        }

        return ServiceApp.StartAsync(Definitions.Workflow, all);
    }

    public Task<ServiceApp> StartIngestionAsync(string queue, Dictionary<string, string?>? settings = null)
    {
        var all = new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = ServiceBus.ConnectionString,
            ["ServiceBus:QueueName"] = queue,
            ["Backends:Delivery:BaseAddress"] = Delivery.BaseAddress.ToString(),
        };
        foreach (var (key, value) in settings ?? [])
        {
            all[key] = value;
        }

        return ServiceApp.StartAsync(Definitions.Ingestion, all);
    }

    public async Task DisposeAsync()
    {
        for (var i = _resources.Count - 1; i >= 0; i--)
        {
            await _resources[i].DisposeAsync();
        }
    }

    private Dictionary<string, string?> CosmosSettings() => new() { ["Cosmos:ConnectionString"] = Cosmos.ConnectionString };

    private Dictionary<string, string?> BackendSettings() => new()
    {
        ["Backends:Delivery:BaseAddress"] = Delivery.BaseAddress.ToString(),
        ["Backends:Package:BaseAddress"] = Package.BaseAddress.ToString(),
        ["Backends:DroneScheduler:BaseAddress"] = DroneScheduler.BaseAddress.ToString(),
    };

    private T Track<T>(T resource)
        where T : IAsyncDisposable
    {
        _resources.Add(resource);
        return resource;
    }
}

[CollectionDefinition(Name)]
public sealed class SystemCollection : ICollectionFixture<SystemFixture>
{
    public const string Name = "system";
}
