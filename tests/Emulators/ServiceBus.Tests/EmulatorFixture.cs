using Azure.Messaging.ServiceBus;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// An in-process emulator and an official SDK client for one test, connected exactly as an application would be: the
/// emulator's connection string (<c>UseDevelopmentEmulator=true</c>) and nothing else. Every queue gets the given settings.
/// </summary>
internal sealed class EmulatorScope : IAsyncDisposable
{
    private EmulatorScope(ServiceBusEmulator emulator, ServiceBusClient client)
    {
        Emulator = emulator;
        Client = client;
    }

    public ServiceBusEmulator Emulator { get; }

    public ServiceBusClient Client { get; }

    public const string Queue = "orders";

    public static async Task<EmulatorScope> StartAsync(Func<QueueOptions, QueueOptions>? configure = null, Func<ServiceBusEmulatorOptions, ServiceBusEmulatorOptions>? emulator = null, TimeProvider? time = null)
    {
        var queue = new QueueOptions { Name = Queue, LockDuration = TimeSpan.FromSeconds(30), MaxDeliveryCount = 10 };
        var options = new ServiceBusEmulatorOptions { Queues = [configure?.Invoke(queue) ?? queue], HttpPort = null, TimeProvider = time ?? TimeProvider.System };
        var started = await ServiceBusEmulator.StartAsync(emulator?.Invoke(options) ?? options);
        return new EmulatorScope(started, CreateClient(started.ConnectionString));
    }

    /// <summary>A client with <see cref="Fast"/> options.</summary>
    public static ServiceBusClient CreateClient(string connectionString) => new(connectionString, Fast());

    /// <summary>
    /// Client options with one quick retry and a 30 s try timeout: generous enough for a busy machine, while a hang
    /// still fails a test sooner than the SDK's defaults (60 s, three retries with back-off) would.
    /// </summary>
    public static ServiceBusClientOptions Fast() => new()
    {
        RetryOptions = new ServiceBusRetryOptions
        {
            Mode = ServiceBusRetryMode.Fixed,
            TryTimeout = TimeSpan.FromSeconds(30),
            MaxRetries = 1,
            Delay = TimeSpan.FromMilliseconds(100),
        },
    };

    public Metrics.QueueMetricsSnapshot Metrics => Emulator.GetMetrics()[Queue];

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Emulator.DisposeAsync();
    }
}
