using System.Globalization;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LocalProcesses;
using CosmosMetrics = DroneDelivery.Emulators.CosmosDb.Metrics.EmulatorMetricsSnapshot;
using ServiceBusMetrics = DroneDelivery.Emulators.ServiceBus.Metrics.EmulatorMetricsSnapshot;

namespace DroneDelivery.Lab.Deployment;

/// <summary>A Cosmos DB container as a step declares it (chart values <c>cosmosDb.containers.&lt;id&gt;</c>).</summary>
internal sealed record CosmosContainerSpec(string Id, int Throughput, int PhysicalPartitions, string PartitionKeyPath)
{
    /// <summary>Every container the step declares, with the defaults the chart's emulator config uses.</summary>
    public static IReadOnlyList<CosmosContainerSpec> Of(Step step) =>
        [.. step.Values.Map("cosmosDb.containers").Keys.Order(StringComparer.Ordinal).Select(id =>
        {
            var values = step.CosmosContainer(id);
            return new CosmosContainerSpec(
                id,
                Int(values, "throughput", 400),
                Int(values, "physicalPartitions", 1),
                values.TryGetValue("partitionKeyPath", out var path) && path is not null ? ServiceEnvironment.Scalar(path) : "/id");
        })];

    private static int Int(IReadOnlyDictionary<string, object?> values, string key, int fallback) =>
        values.TryGetValue(key, out var raw) && raw is not null ? int.Parse(ServiceEnvironment.Scalar(raw), CultureInfo.InvariantCulture) : fallback;
}

/// <summary>A Service Bus queue as a step declares it (chart values <c>serviceBus.queues.&lt;name&gt;</c>).</summary>
internal sealed record QueueSpec(string Name, string LockDuration, int MaxDeliveryCount)
{
    /// <summary>The step's queues, lock durations divided by <paramref name="timeScale"/> (at least 1 s).</summary>
    public static IReadOnlyList<QueueSpec> Of(Step step, double timeScale) =>
        [.. step.Values.Map("serviceBus.queues").Keys.Order(StringComparer.Ordinal).Select(name =>
        {
            var queue = step.ServiceBusQueue(name);
            var lockDuration = System.Xml.XmlConvert.ToTimeSpan(queue.TryGetValue("lockDuration", out var l) && l is not null ? ServiceEnvironment.Scalar(l) : "PT1M");
            var scaled = TimeSpan.FromMilliseconds(Math.Max(1000, lockDuration.TotalMilliseconds / timeScale));
            var maxDeliveries = queue.TryGetValue("maxDeliveryCount", out var m) && m is not null ? int.Parse(ServiceEnvironment.Scalar(m), CultureInfo.InvariantCulture) : 10;
            return new QueueSpec(name, System.Xml.XmlConvert.ToString(scaled), maxDeliveries);
        })];
}

/// <summary>Our Cosmos DB emulator as a local process, configured from a step's containers.</summary>
internal sealed class CosmosEmulatorProcess : IAsyncDisposable
{
    private static readonly JsonSerializerOptions Web = new(JsonSerializerDefaults.Web);
    private readonly LocalProcess _process;
    private readonly HttpClient _http;

    private CosmosEmulatorProcess(LocalProcess process, int port)
    {
        _process = process;
        Endpoint = new Uri($"http://127.0.0.1:{port}/");
        _http = new HttpClient { BaseAddress = Endpoint, Timeout = TimeSpan.FromSeconds(10) };
    }

    public Uri Endpoint { get; }

    public string ConnectionString => $"AccountEndpoint={Endpoint};AccountKey={CosmosEmulatorOptions.WellKnownAccountKey};";

    public LocalProcess Process => _process;

    public static async Task<CosmosEmulatorProcess> StartAsync(
        string databaseId,
        IEnumerable<CosmosContainerSpec> containers,
        LatencyOptions latency,
        string workDirectory,
        IReadOnlyDictionary<string, string?> environment,
        CancellationToken cancellationToken)
    {
        var port = FreePort.Next();
        var options = new CosmosEmulatorOptions
        {
            Port = port,
            Latency = latency,
            Databases =
            [
                new DatabaseOptions
                {
                    Id = databaseId,
                    Containers = [.. containers.Select(c => new ContainerOptions
                    {
                        Id = c.Id,
                        PartitionKeyPath = c.PartitionKeyPath,
                        Throughput = c.Throughput,
                        PhysicalPartitions = c.PhysicalPartitions,
                    })],
                },
            ],
        };
        var config = Path.Combine(workDirectory, "cosmos-emulator.json");
        await File.WriteAllTextAsync(config, JsonSerializer.Serialize(options, Web), cancellationToken).ConfigureAwait(false);
        var process = await LocalProcess.StartAsync(
            LocalProcessSpec.ForProject("cosmos-emulator", "DroneDelivery.Emulators.CosmosDb", "--port", port.ToString(CultureInfo.InvariantCulture), "--config", config) with
            {
                IsReadyLine = line => line.StartsWith("Cosmos DB emulator ready", StringComparison.Ordinal),
                Environment = environment,
                LogFile = Path.Combine(workDirectory, "logs", "cosmos-emulator.log"),
            },
            cancellationToken).ConfigureAwait(false);
        return new CosmosEmulatorProcess(process, port);
    }

    public async Task<CosmosMetrics> MetricsAsync(CancellationToken cancellationToken) =>
        await _http.GetFromJsonAsync<CosmosMetrics>("/_emulator/metrics?seconds=3600", Web, cancellationToken).ConfigureAwait(false)
        ?? throw new InvalidDataException("The Cosmos DB emulator returned no metrics.");

    /// <summary>
    /// Replaces a container's offer with <paramref name="requestUnitsPerSecond"/>, as a client replaces it on Azure
    /// (the official SDK, Gateway mode). The lab's model scale may take it below Azure's minimum of 400 RU/s, which
    /// the emulator allows and the seed command, made for Azure too, refuses.
    /// </summary>
    public async Task ReplaceThroughputAsync(string databaseId, string containerId, int requestUnitsPerSecond, CancellationToken cancellationToken)
    {
        _client ??= new Microsoft.Azure.Cosmos.CosmosClient(ConnectionString, new Microsoft.Azure.Cosmos.CosmosClientOptions
        {
            ConnectionMode = Microsoft.Azure.Cosmos.ConnectionMode.Gateway,
            LimitToEndpoint = true,
        });
        await _client.GetContainer(databaseId, containerId).ReplaceThroughputAsync(requestUnitsPerSecond, cancellationToken: cancellationToken).ConfigureAwait(false);
    }

    private Microsoft.Azure.Cosmos.CosmosClient? _client;

    /// <summary>Replaces the latency model of every container (<c>PUT /_emulator/latency</c>, signed with the account key).</summary>
    public async Task SetLatencyAsync(LatencyOptions latency, CancellationToken cancellationToken)
    {
        using var request = new HttpRequestMessage(HttpMethod.Put, "/_emulator/latency") { Content = JsonContent.Create(latency, options: Web) };
        request.Headers.TryAddWithoutValidation("x-emulator-key", CosmosEmulatorOptions.WellKnownAccountKey);
        using var response = await _http.SendAsync(request, cancellationToken).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
        {
            throw new InvalidOperationException(
                $"The Cosmos DB emulator refused the latency model ({(int)response.StatusCode}): {await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false)}");
        }
    }

    public async ValueTask DisposeAsync()
    {
        _client?.Dispose();
        _http.Dispose();
        await _process.DisposeAsync().ConfigureAwait(false);
    }
}

/// <summary>Our Service Bus emulator as a local process, configured from a step's queues.</summary>
internal sealed class ServiceBusEmulatorProcess : IAsyncDisposable
{
    private static readonly JsonSerializerOptions Web = new(JsonSerializerDefaults.Web);
    private readonly LocalProcess _process;
    private readonly HttpClient _http;

    private ServiceBusEmulatorProcess(LocalProcess process, int amqpPort, int httpPort, IReadOnlyList<QueueSpec> queues)
    {
        _process = process;
        Queues = queues;
        ConnectionString =
            $"Endpoint=sb://127.0.0.1:{amqpPort};SharedAccessKeyName={Emulators.ServiceBus.ServiceBusEmulatorOptions.DefaultKeyName};" +
            $"SharedAccessKey={Emulators.ServiceBus.ServiceBusEmulatorOptions.DevelopmentKey};UseDevelopmentEmulator=true;";
        HttpEndpoint = new Uri($"http://127.0.0.1:{httpPort}/");
        _http = new HttpClient { BaseAddress = HttpEndpoint, Timeout = TimeSpan.FromSeconds(10) };
    }

    /// <summary>The management endpoint: metrics (JSON and Prometheus text at <c>/metrics</c>).</summary>
    public Uri HttpEndpoint { get; }

    public string ConnectionString { get; }

    public IReadOnlyList<QueueSpec> Queues { get; }

    public LocalProcess Process => _process;

    public static async Task<ServiceBusEmulatorProcess> StartAsync(
        IReadOnlyList<QueueSpec> queues,
        ServiceBusLatency latency,
        string workDirectory,
        IReadOnlyDictionary<string, string?> environment,
        CancellationToken cancellationToken)
    {
        var amqpPort = FreePort.Next();
        var httpPort = FreePort.Next();
        var config = Path.Combine(workDirectory, "servicebus-emulator.json");
        await File.WriteAllTextAsync(config, OfficialConfig(queues, latency).ToJsonString(new JsonSerializerOptions { WriteIndented = true }), cancellationToken).ConfigureAwait(false);
        var process = await LocalProcess.StartAsync(
            LocalProcessSpec.ForProject(
                "servicebus-emulator",
                "DroneDelivery.Emulators.ServiceBus",
                "--port", amqpPort.ToString(CultureInfo.InvariantCulture),
                "--http-port", httpPort.ToString(CultureInfo.InvariantCulture),
                "--config", config) with
            {
                IsReadyLine = line => line.StartsWith(Emulators.ServiceBus.ServiceBusEmulator.ReadyLinePrefix, StringComparison.Ordinal),
                Environment = environment,
                LogFile = Path.Combine(workDirectory, "logs", "servicebus-emulator.log"),
            },
            cancellationToken).ConfigureAwait(false);
        return new ServiceBusEmulatorProcess(process, amqpPort, httpPort, queues);
    }

    public async Task<ServiceBusMetrics> MetricsAsync(CancellationToken cancellationToken) =>
        await _http.GetFromJsonAsync<ServiceBusMetrics>(Emulators.ServiceBus.Metrics.EmulatorMetricNames.JsonPath, Web, cancellationToken).ConfigureAwait(false)
        ?? throw new InvalidDataException("The Service Bus emulator returned no metrics.");

    /// <summary>Replaces the round trips the emulator adds (<c>PUT /_emulator/latency</c>, signed with the namespace's key).</summary>
    public Task SetLatencyAsync(ServiceBusLatency latency, CancellationToken cancellationToken) =>
        new Emulators.ServiceBus.Faults.ServiceBusFaultClient(_http, Emulators.ServiceBus.ServiceBusEmulatorOptions.DefaultKeyName, Emulators.ServiceBus.ServiceBusEmulatorOptions.DevelopmentKey)
            .SetLatencyAsync(new(latency.SendMilliseconds, latency.ReceiveMilliseconds, latency.CompleteMilliseconds), cancellationToken);

    public async ValueTask DisposeAsync()
    {
        _http.Dispose();
        await _process.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>The official emulator's Config.json shape, plus this emulator's latency section.</summary>
    private static JsonObject OfficialConfig(IEnumerable<QueueSpec> queues, ServiceBusLatency latency) => new()
    {
        ["UserConfig"] = new JsonObject
        {
            ["Namespaces"] = new JsonArray(new JsonObject
            {
                ["Name"] = "sbemulatorns",
                ["Queues"] = new JsonArray([.. queues.Select(q => (JsonNode)new JsonObject
                {
                    ["Name"] = q.Name,
                    ["Properties"] = new JsonObject
                    {
                        ["LockDuration"] = q.LockDuration,
                        ["MaxDeliveryCount"] = q.MaxDeliveryCount,
                        ["DeadLetteringOnMessageExpiration"] = false,
                        ["DefaultMessageTimeToLive"] = "PT1H",
                        ["RequiresDuplicateDetection"] = false,
                        ["RequiresSession"] = false,
                    },
                })]),
                ["Topics"] = new JsonArray(),
            }),
            ["Logging"] = new JsonObject { ["Type"] = "Console" },
        },
        ["Emulator"] = new JsonObject
        {
            ["SendLatencyMilliseconds"] = latency.SendMilliseconds,
            ["ReceiveLatencyMilliseconds"] = latency.ReceiveMilliseconds,
            ["CompleteLatencyMilliseconds"] = latency.CompleteMilliseconds,
        },
    };
}

/// <summary>Round trips the Service Bus emulator adds to each operation, in milliseconds.</summary>
internal sealed record ServiceBusLatency(int SendMilliseconds, int ReceiveMilliseconds, int CompleteMilliseconds);
