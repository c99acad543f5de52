namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>An in-process emulator and a client for one test; every queue gets the given settings.</summary>
internal sealed class EmulatorScope : IAsyncDisposable
{
    private EmulatorScope(ServiceBusEmulator emulator, DroneDelivery.ServiceBus.ServiceBusClient client)
    {
        Emulator = emulator;
        Client = client;
    }

    public ServiceBusEmulator Emulator { get; }

    public DroneDelivery.ServiceBus.ServiceBusClient Client { get; }

    public const string Queue = "orders";

    public static async Task<EmulatorScope> StartAsync(Func<QueueOptions, QueueOptions>? configure = null, Func<ServiceBusEmulatorOptions, ServiceBusEmulatorOptions>? emulator = null, TimeProvider? time = null)
    {
        var queue = new QueueOptions { Name = Queue, LockDuration = TimeSpan.FromSeconds(30), MaxDeliveryCount = 10 };
        var options = new ServiceBusEmulatorOptions { Queues = [configure?.Invoke(queue) ?? queue], HttpPort = null, TimeProvider = time ?? TimeProvider.System };
        var started = await ServiceBusEmulator.StartAsync(emulator?.Invoke(options) ?? options);
        return new EmulatorScope(started, new DroneDelivery.ServiceBus.ServiceBusClient(started.ConnectionString, Fast()));
    }

    /// <summary>
    /// Client options with one retry and a 30 s try timeout: generous enough for a busy machine, while a hang
    /// still fails a test sooner than the SDK's default of 60 s and three retries would.
    /// </summary>
    public static DroneDelivery.ServiceBus.ServiceBusClientOptions Fast() => new()
    {
        RetryOptions = new DroneDelivery.ServiceBus.ServiceBusRetryOptions { TryTimeout = TimeSpan.FromSeconds(30), MaxRetries = 1, Delay = TimeSpan.FromMilliseconds(100) },
    };

    public Metrics.QueueMetricsSnapshot Metrics => Emulator.GetMetrics()[Queue];

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Emulator.DisposeAsync();
    }
}
