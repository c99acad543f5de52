using Azure.Messaging.ServiceBus;
using Azure.Messaging.ServiceBus.Administration;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// An emulator on 127.0.0.1 with its HTTP listener on, an official <see cref="ServiceBusAdministrationClient"/> made from
/// the emulator's administration connection string (the HTTP port, <c>UseDevelopmentEmulator=true</c>) and a
/// <see cref="ServiceBusClient"/> for the messages: what a tool creating entities at run time and then using them holds.
/// </summary>
internal sealed class AdministrationScope : IAsyncDisposable
{
    private AdministrationScope(ServiceBusEmulator emulator)
    {
        Emulator = emulator;
        Admin = CreateAdmin(emulator.AdministrationConnectionString!);
        Client = EmulatorScope.CreateClient(emulator.ConnectionString);
    }

    public ServiceBusEmulator Emulator { get; }

    public ServiceBusAdministrationClient Admin { get; }

    public ServiceBusClient Client { get; }

    /// <summary>Starts an emulator with one configured queue (<see cref="EmulatorScope.Queue"/>) and a configured topic with one subscription.</summary>
    public static async Task<AdministrationScope> StartAsync(TimeProvider? time = null) => new(await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
    {
        TimeProvider = time ?? TimeProvider.System,
        Queues = [new QueueOptions { Name = EmulatorScope.Queue }],
        Topics = [new TopicOptions { Name = ConfiguredTopic, Subscriptions = [new SubscriptionOptions { Name = "all" }] }],
    }));

    public const string ConfiguredTopic = "configured-topic";

    /// <summary>
    /// An administration client with one retry after 100 ms: the emulator answers no status the SDK retries (408, 429,
    /// 5xx) unless something is wrong, and a wrong answer should fail a test at once rather than after the default back-off.
    /// </summary>
    public static ServiceBusAdministrationClient CreateAdmin(string connectionString)
    {
        var options = new ServiceBusAdministrationClientOptions();
        options.Retry.MaxRetries = 1;
        options.Retry.Delay = TimeSpan.FromMilliseconds(100);
        options.Retry.NetworkTimeout = TimeSpan.FromSeconds(30);
        return new ServiceBusAdministrationClient(connectionString, options);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Emulator.DisposeAsync();
    }
}
