using System.Globalization;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Deployment;

/// <summary>How the local system is calibrated and wired; see docs/lab.md.</summary>
internal sealed record DeploymentOptions
{
    /// <summary>Where logs and generated configuration go.</summary>
    public required string WorkDirectory { get; init; }

    /// <summary>Every Cosmos DB container any step of the scenario uses, created when the emulator starts.</summary>
    public required IReadOnlyList<CosmosContainerSpec> Containers { get; init; }

    public required string CosmosDatabaseId { get; init; }

    public required LatencyOptions CosmosLatency { get; init; }

    public required ServiceBusLatency ServiceBusLatency { get; init; }

    /// <summary>Divides message lock durations (quick mode compresses the case study's time).</summary>
    public double TimeScale { get; init; } = 1;

    /// <summary>Replicas per service are the step's divided by this (at least 1); 1 runs them as the chart does.</summary>
    public int ReplicaDivisor { get; init; } = 1;

    /// <summary>The services the scenario uses; the others are not started (and neither is the Service Bus emulator when no service uses it).</summary>
    public IReadOnlyList<ServiceKind> Services { get; init; } = ServiceKind.All;

    /// <summary>Fixed replica counts for some services, whatever the step says (capacity runs measure one instance).</summary>
    public IReadOnlyDictionary<ServiceKind, int> ReplicaOverrides { get; init; } = new Dictionary<ServiceKind, int>();

    /// <summary>When set, a real Prometheus scrapes the system on 127.0.0.1:<c>Port</c>, keeping its files in <c>Directory</c>.</summary>
    public (int Port, string Directory)? Prometheus { get; init; }

    /// <summary>redis-server keeps an append-only file, so a killed and restarted server keeps what it acknowledged (the chaos command).</summary>
    public bool RedisPersistence { get; init; }

    /// <summary>
    /// The standalone Aspire dashboard runs beside the system and every process sends it traces, metrics and logs
    /// (<c>telemetry.otlpEndpoint</c> set to it for every step, as <c>helm install --set</c> would).
    /// </summary>
    public bool Dashboard { get; init; }

    /// <summary>Values over every step's, for the whole run, as <c>helm install --set</c> gives them to every upgrade after it.</summary>
    public ValuesTree DeploymentValues { get; init; } = ValuesTree.Empty;

    /// <summary>Raised with progress messages for the console.</summary>
    public Action<string> Log { get; init; } = _ => { };
}

/// <summary>
/// The whole system on 127.0.0.1: the two emulators, a real redis-server and every service as
/// local processes behind round-robin balancers. <see cref="ApplyAsync"/> moves it to a step's
/// configuration, restarting only what the step changes (and emptying the broker and the cache for a fresh start).
/// </summary>
internal sealed class LocalDeployment : IAsyncDisposable
{
    private static readonly ServiceKind[] StartOrder =
        [ServiceKind.Delivery, ServiceKind.Package, ServiceKind.DroneScheduler, ServiceKind.Workflow, ServiceKind.Gateway, ServiceKind.Ingestion];

    private readonly DeploymentOptions _options;
    private readonly Dictionary<ServiceKind, ReplicaSet> _services = [];
    /// <summary>Each container's RU/s as the chart gives it; the emulator holds them times the model scale.</summary>
    private readonly Dictionary<string, int> _throughput = new(StringComparer.Ordinal);
    private readonly Dictionary<string, int> _provisioned = new(StringComparer.Ordinal);
    private string? _redisMaxMemory;
    private string? _redisPolicy;

    private LocalDeployment(DeploymentOptions options, CosmosEmulatorProcess cosmos)
    {
        _options = options;
        Cosmos = cosmos;
        foreach (var container in options.Containers)
        {
            _throughput[container.Id] = container.Throughput;
            _provisioned[container.Id] = container.Throughput;
        }
    }

    /// <summary>
    /// The model scale the emulated cloud runs at (<see cref="ModelScale"/>): 1 until <see cref="SetScaleAsync"/>
    /// changes it. The Cosmos DB emulator starts at scale 1 (seeding and the machine probe run there).
    /// </summary>
    public ModelScale Scale { get; private set; } = ModelScale.One;

    public CosmosEmulatorProcess Cosmos { get; }

    public string DatabaseId => _options.CosmosDatabaseId;

    public ServiceBusEmulatorProcess? ServiceBus { get; private set; }

    public RedisServer? Redis { get; private set; }

    public PrometheusServer? Prometheus { get; private set; }

    /// <summary>The Aspire dashboard every process exports to, when <see cref="DeploymentOptions.Dashboard"/>.</summary>
    public AspireDashboard? Dashboard { get; private set; }

    /// <summary>
    /// The development issuer the public services trust: a key generated when the system first takes a
    /// step's values (issuer and audience from <c>auth.*</c>), kept for the whole run so tokens stay valid.
    /// </summary>
    public DevelopmentIssuer Issuer => _issuer ?? throw new InvalidOperationException("The system has not taken a step's values yet.");

    private DevelopmentIssuer? _issuer;

    public IReadOnlyDictionary<ServiceKind, ReplicaSet> Services => _services;

    public Uri Address(ServiceKind service) => _services[service].Balancer.Address;

    /// <summary>Every process of the system, by the name used in the report.</summary>
    public IEnumerable<(string Component, LocalProcess Process)> Processes()
    {
        yield return ("cosmos-emulator", Cosmos.Process);
        if (ServiceBus is not null)
        {
            yield return ("servicebus-emulator", ServiceBus.Process);
        }

        if (Redis is not null)
        {
            yield return ("redis", Redis.Process);
        }

        if (Prometheus is not null)
        {
            yield return ("prometheus", Prometheus.Process);
        }

        if (Dashboard is not null)
        {
            yield return ("aspire-dashboard", Dashboard.Process);
        }

        foreach (var (service, set) in _services)
        {
            foreach (var replica in set.Replicas)
            {
                yield return (service.Name, replica.Process);
            }
        }
    }

    public static async Task<LocalDeployment> StartAsync(DeploymentOptions options, CancellationToken cancellationToken)
    {
        Directory.CreateDirectory(Path.Combine(options.WorkDirectory, "logs"));
        AspireDashboard? dashboard = null;
        if (options.Dashboard)
        {
            options.Log("starting the Aspire dashboard");
            dashboard = await AspireDashboard.StartAsync(options.WorkDirectory, cancellationToken).ConfigureAwait(false);
            options.Log($"Aspire dashboard: {dashboard.Url} (OTLP/gRPC {dashboard.OtlpEndpoint})");
        }

        CosmosEmulatorProcess cosmos;
        try
        {
            options.Log($"starting the Cosmos DB emulator ({string.Join(", ", options.Containers.Select(c => $"{c.Id}: {c.Throughput} RU/s, {c.PhysicalPartitions} partitions, {c.PartitionKeyPath}"))})");
            cosmos = await CosmosEmulatorProcess.StartAsync(
                options.CosmosDatabaseId, options.Containers, options.CosmosLatency, options.WorkDirectory, EmulatorEnvironment(dashboard), cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            if (dashboard is not null)
            {
                await dashboard.DisposeAsync().ConfigureAwait(false);
            }

            throw;
        }

        var deployment = new LocalDeployment(options, cosmos) { Dashboard = dashboard };
        foreach (var service in ServiceKind.All)
        {
            deployment._services[service] = new ReplicaSet(service, Path.Combine(options.WorkDirectory, "logs"));
        }

        if (options.Prometheus is { } prometheus)
        {
            try
            {
                deployment.Prometheus = await PrometheusServer.StartAsync(prometheus.Directory, prometheus.Port, cancellationToken).ConfigureAwait(false);
            }
            catch
            {
                await deployment.DisposeAsync().ConfigureAwait(false);
                throw;
            }

            deployment.Prometheus.UpdateTargets(deployment);
            options.Log($"Prometheus: {deployment.Prometheus.Url} (scrapes every 2 s; files in {prometheus.Directory})");
        }

        return deployment;
    }

    /// <summary>
    /// Moves the system to <paramref name="step"/>'s configuration. With <paramref name="fresh"/> the
    /// broker restarts empty (and with it Ingestion and the Workflow, whose connections change) and the
    /// cache is emptied (a clean run of the step); other services restart only when the step changes them.
    /// Returns whether any process started (a new one needs warming up).
    /// </summary>
    public async Task<bool> ApplyAsync(Step step, bool fresh, CancellationToken cancellationToken)
    {
        var restart = new HashSet<ServiceKind>();
        _issuer ??= IssuerFor(step);

        var queues = Queues(step);
        var needsServiceBus = _options.Services.Contains(ServiceKind.Ingestion) || _options.Services.Contains(ServiceKind.Workflow);
        if (needsServiceBus && (fresh || ServiceBus is null || !queues.SequenceEqual(ServiceBus.Queues)))
        {
            if (ServiceBus is not null)
            {
                // What the broker's clients hold (links, prefetched messages, locks) dies with it: they are
                // killed first rather than each waiting out a graceful stop against a broker that is gone
                // (up to the 15 s before the kill, every fresh step), and start again below.
                await Task.WhenAll(new[] { ServiceKind.Ingestion, ServiceKind.Workflow }.Where(_services.ContainsKey).Select(s => _services[s].KillAllAsync())).ConfigureAwait(false);
                await ServiceBus.DisposeAsync().ConfigureAwait(false);
            }

            _options.Log($"starting the Service Bus emulator ({string.Join(", ", queues.Select(q => $"{q.Name}: lock {q.LockDuration}, max deliveries {q.MaxDeliveryCount}"))})");
            ServiceBus = await ServiceBusEmulatorProcess.StartAsync(
                queues, Scale.ServiceBus(_options.ServiceBusLatency), _options.WorkDirectory, EmulatorEnvironment(Dashboard), cancellationToken).ConfigureAwait(false);
            restart.UnionWith([ServiceKind.Ingestion, ServiceKind.Workflow]);
        }

        var maxMemory = step.Setting("redis.maxmemory");
        var policy = step.Setting("redis.maxmemoryPolicy") ?? "noeviction";
        if (Redis is not null && (fresh || maxMemory != _redisMaxMemory || policy != _redisPolicy))
        {
            // An empty cache with the step's limits, in place: Delivery keeps running and connected.
            _options.Log($"emptying redis-server (maxmemory {maxMemory ?? "unlimited"}, {policy})");
            await RedisCommands.ResetAsync(Redis.Port, maxMemory, policy, cancellationToken).ConfigureAwait(false);
            (_redisMaxMemory, _redisPolicy) = (maxMemory, policy);
        }
        else if (Redis is null)
        {
            _options.Log($"starting redis-server (maxmemory {maxMemory ?? "unlimited"}, {policy})");
            Redis = await RedisServer.StartAsync(RedisOptions(0, maxMemory, policy), cancellationToken).ConfigureAwait(false);
            (_redisMaxMemory, _redisPolicy) = (maxMemory, policy);
            restart.Add(ServiceKind.Delivery);
        }

        await ApplyThroughputAsync(step, cancellationToken).ConfigureAwait(false);

        // Every service whose settings or connections change starts now, all at once: each knows the
        // others by their balancers' addresses, which never change, and waits to be ready. A service
        // whose replica count alone changes is scaled; one the step does not change keeps running (its state lives in the stores, which a
        // fresh step empties: the broker restarted, the cache flushed).
        var deployments = new List<Task>();
        foreach (var service in StartOrder.Where(_options.Services.Contains))
        {
            var set = _services[service];
            var replicas = _options.ReplicaOverrides.TryGetValue(service, out var fixedCount)
                ? fixedCount
                : Math.Max(1, (int)Math.Ceiling(step.Replicas(service) / (double)_options.ReplicaDivisor));
            var environment = Environment(service, step);
            switch (ReplicaSet.ChangeFor(restart.Contains(service), set.Environment, set.Replicas.Count, environment, replicas))
            {
                case ReplicaChange.Restart:
                    _options.Log($"starting {replicas} × {service.Name}");
                    deployments.Add(set.DeployAsync(replicas, environment, cancellationToken));
                    break;
                case ReplicaChange.Scale:
                    _options.Log($"scaling {service.Name} from {set.Replicas.Count} to {replicas} replicas");
                    deployments.Add(set.ScaleAsync(replicas, cancellationToken));
                    break;
            }
        }

        await Task.WhenAll(deployments).ConfigureAwait(false);

        Prometheus?.UpdateTargets(this);
        return deployments.Count > 0 || restart.Count > 0;
    }

    /// <summary>
    /// Runs the emulated cloud at <paramref name="scale"/> from now on: both emulators' injected latencies divided
    /// by it and every container's RU/s multiplied by it (the chart's values, times the scale). The load's rates
    /// and the users' patience follow <see cref="Scale"/> where the scenarios build them.
    /// </summary>
    public async Task SetScaleAsync(ModelScale scale, CancellationToken cancellationToken)
    {
        if (scale == Scale)
        {
            return;
        }

        Scale = scale;
        _options.Log($"the emulated cloud runs at scale {scale}: RU/s × {scale}, injected latencies ÷ {scale}");
        await Cosmos.SetLatencyAsync(scale.Cosmos(_options.CosmosLatency), cancellationToken).ConfigureAwait(false);
        if (ServiceBus is not null)
        {
            await ServiceBus.SetLatencyAsync(scale.ServiceBus(_options.ServiceBusLatency), cancellationToken).ConfigureAwait(false);
        }

        await ProvisionAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Kills redis-server with <c>kill -9</c>; <see cref="RestartRedisAsync"/> starts it again.</summary>
    public async Task KillRedisAsync(CancellationToken cancellationToken)
    {
        var redis = Redis ?? throw new InvalidOperationException("redis-server is not running.");
        redis.Process.Kill();
        await redis.Process.Exited.WaitAsync(TimeSpan.FromSeconds(30), cancellationToken).ConfigureAwait(false);
        await redis.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>Starts redis-server again on its port with the same limits (and, with <see cref="DeploymentOptions.RedisPersistence"/>, its data).</summary>
    public async Task RestartRedisAsync(CancellationToken cancellationToken)
    {
        var port = Redis?.Port ?? throw new InvalidOperationException("redis-server was never started.");
        Redis = await RedisServer.StartAsync(RedisOptions(port, _redisMaxMemory, _redisPolicy ?? "noeviction"), cancellationToken).ConfigureAwait(false);
    }

    private RedisServerOptions RedisOptions(int port, string? maxMemory, string policy) => new()
    {
        Port = port,
        MaxMemory = maxMemory,
        MaxMemoryPolicy = policy,
        LogFile = Path.Combine(_options.WorkDirectory, "logs", "redis.log"),
        DataDirectory = _options.RedisPersistence ? Path.Combine(_options.WorkDirectory, "redis-data") : null,
    };

    /// <summary>Runs the DroneScheduler seed command against the emulator (provisioning and, unless told otherwise, data).</summary>
    public async Task SeedAsync(IEnumerable<string> arguments, CancellationToken cancellationToken, string name = "seed")
    {
        var spec = LocalProcessSpec.ForProject(name, ServiceKind.DroneScheduler.ProjectName, ["seed", .. arguments]) with
        {
            Environment = new Dictionary<string, string?>
            {
                ["Cosmos__ConnectionString"] = Cosmos.ConnectionString,
                ["Cosmos__DatabaseId"] = _options.CosmosDatabaseId,
            },
            LogFile = Path.Combine(_options.WorkDirectory, "logs", name + ".log"),
        };
        var process = await LocalProcess.StartAsync(spec, cancellationToken).ConfigureAwait(false);
        await using (process.ConfigureAwait(false))
        {
            var exitCode = await process.Exited.WaitAsync(TimeSpan.FromMinutes(15), cancellationToken).ConfigureAwait(false);
            if (exitCode != 0)
            {
                throw new InvalidOperationException(
                    $"The seed command failed (exit code {exitCode}):{System.Environment.NewLine}{string.Join(System.Environment.NewLine, process.RecentOutput.TakeLast(20))}");
            }
        }
    }

    public async ValueTask DisposeAsync()
    {
        if (Prometheus is not null)
        {
            await Prometheus.DisposeAsync().ConfigureAwait(false);
        }

        // Every service at once, as a namespace's deletion stops its pods, so that a Ctrl-C during a step's
        // start-up waits for the slowest replica once, not for each set's slowest in turn.
        await Task.WhenAll(_services.Values.Select(set => set.DisposeAsync().AsTask())).ConfigureAwait(false);

        // Then the stores, all at once too: each may take its graceful stop's 10 s when it is stopped while
        // still starting (a Ctrl-C in a step's first seconds), and those must not add up.
        await Task.WhenAll(
            ServiceBus is null ? Task.CompletedTask : ServiceBus.DisposeAsync().AsTask(),
            Redis is null ? Task.CompletedTask : Redis.DisposeAsync().AsTask(),
            Cosmos.DisposeAsync().AsTask()).ConfigureAwait(false);

        // Last: it holds what everything above sent until the end.
        if (Dashboard is not null)
        {
            await Dashboard.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>The step's queues, lock durations compressed by the time scale.</summary>
    internal IReadOnlyList<QueueSpec> Queues(Step step) => QueueSpec.Of(step, _options.TimeScale);

    /// <summary>Takes the step's RU/s for each container that declares them, and provisions what changed.</summary>
    private Task ApplyThroughputAsync(Step step, CancellationToken cancellationToken)
    {
        foreach (var container in _options.Containers)
        {
            var values = step.CosmosContainer(container.Id);
            if (values.TryGetValue("throughput", out var raw) && raw is not null)
            {
                _throughput[container.Id] = int.Parse(raw.ToString()!, CultureInfo.InvariantCulture);
            }
        }

        return ProvisionAsync(cancellationToken);
    }

    /// <summary>Replaces the offer of each container whose RU/s at the model scale changed: at run time, as on Azure.</summary>
    private async Task ProvisionAsync(CancellationToken cancellationToken)
    {
        foreach (var container in _options.Containers)
        {
            var chart = _throughput[container.Id];
            var throughput = Scale.Throughput(chart, container.PhysicalPartitions);
            if (_provisioned[container.Id] == throughput)
            {
                continue;
            }

            _options.Log(throughput == chart ? $"setting {container.Id} to {throughput} RU/s" : $"setting {container.Id} to {throughput} RU/s ({chart} RU/s at scale {Scale})");
            await Cosmos.ReplaceThroughputAsync(_options.CosmosDatabaseId, container.Id, throughput, cancellationToken).ConfigureAwait(false);
            _provisioned[container.Id] = throughput;
        }
    }

    /// <summary>
    /// A replica's environment: what the chart renders for the service (<see cref="ServiceEnvironment"/>),
    /// wired to the local processes, plus how the lab runs each process.
    /// </summary>
    private Dictionary<string, string> Environment(ServiceKind service, Step step)
    {
        var wiring = new ServiceWiring(backend => Address(backend).ToString(), Cosmos.ConnectionString, ServiceBus?.ConnectionString, Redis?.ConnectionString, [Issuer.SigningKey]);
        var values = step.Values.MergedWith(_options.DeploymentValues);
        if (Dashboard is not null)
        {
            values = values.MergedWith(TelemetryValues(Dashboard.OtlpEndpoint));
        }

        return new Dictionary<string, string>(ServiceEnvironment.Render(values, service, wiring), StringComparer.Ordinal)
        {
            ["Logging__LogLevel__Default"] = "Warning",
            ["Logging__LogLevel__DroneDelivery"] = "Information",
        };
    }

    /// <summary>The values that send a release's telemetry to <paramref name="otlpEndpoint"/>, as <c>--set telemetry.otlpEndpoint=…</c>.</summary>
    internal static ValuesTree TelemetryValues(Uri otlpEndpoint) => ValuesTree.From(new Dictionary<string, object?>
    {
        ["telemetry"] = new Dictionary<string, object?> { ["otlpEndpoint"] = otlpEndpoint.ToString().TrimEnd('/') },
    });

    /// <summary>An emulator's variables: the OTLP endpoint of the dashboard, when one runs.</summary>
    private static Dictionary<string, string?> EmulatorEnvironment(AspireDashboard? dashboard) => dashboard is null
        ? []
        : new() { [Emulators.Hosting.EmulatorMetricsEndpoint.OtlpEndpointVariable] = dashboard.OtlpEndpoint.ToString().TrimEnd('/') };

    /// <summary>A development issuer with a new key and the step's <c>auth.developmentIssuer.issuer</c> and <c>auth.audience</c>.</summary>
    internal static DevelopmentIssuer IssuerFor(Step step) => DevelopmentIssuer.Generate(
        step.Setting("auth.developmentIssuer.issuer") ?? DevelopmentIssuer.DefaultIssuer,
        step.Setting("auth.audience") ?? DevelopmentIssuer.DefaultAudience);

}
