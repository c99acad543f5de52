using System.Collections.Concurrent;
using System.Net.Http.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Faults;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Chaos;

/// <summary>
/// Injects a schedule's faults into the local system: kills replicas through their <see cref="ReplicaSet"/>
/// and restarts them as a Deployment would, kills and restarts redis-server, and switches the emulators'
/// faults on and off over their <c>/_emulator/faults</c> endpoints.
/// </summary>
internal sealed class LocalFaultInjector(LocalDeployment deployment, string cosmosContainer, int seed) : IFaultInjector, IDisposable
{
    /// <summary>The share of the Cosmos DB container's requests answered with each error during its window.</summary>
    internal const double CosmosErrorShare = 0.05;

    /// <summary>The share of Service Bus operations whose connection is dropped (or force-closed) during the window.</summary>
    internal const double ConnectionDropShare = 0.02;

    /// <summary>The share of sends and receives refused as server-busy during the window.</summary>
    internal const double ServerBusyShare = 0.2;

    private static readonly ServiceKind[] Backends = [ServiceKind.Delivery, ServiceKind.Package, ServiceKind.DroneScheduler];

    private readonly Random _random = new(seed);
    private readonly Lock _sync = new();
    private readonly ConcurrentDictionary<ScheduledFault, List<(ServiceKind Service, string Name)>> _killed = new();
    private readonly HttpClient _cosmos = new() { BaseAddress = deployment.Cosmos.Endpoint, Timeout = TimeSpan.FromSeconds(10) };
    private readonly HttpClient _serviceBusHttp = new() { BaseAddress = deployment.ServiceBus!.HttpEndpoint, Timeout = TimeSpan.FromSeconds(10) };

    private ServiceBusFaultClient ServiceBus => new(_serviceBusHttp, ServiceBusEmulatorOptions.DefaultKeyName, ServiceBusEmulatorOptions.DevelopmentKey);

    public async Task<(string Target, int ReplicasKilled)> StartAsync(ScheduledFault fault, CancellationToken cancellationToken)
    {
        switch (fault.Kind)
        {
            case FaultKind.KillWorkflow:
                return await KillAsync(fault, [PickReplica(ServiceKind.Workflow)], cancellationToken).ConfigureAwait(false);
            case FaultKind.KillBackend:
                return await KillAsync(fault, [PickReplica(Pick(Backends))], cancellationToken).ConfigureAwait(false);
            case FaultKind.NodeLoss:
                return await KillAsync(fault, [.. NodeLoss()], cancellationToken).ConfigureAwait(false);
            case FaultKind.RestartRedis:
                await deployment.KillRedisAsync(cancellationToken).ConfigureAwait(false);
                return ("redis-server killed", 0);
            case FaultKind.CosmosErrors:
                await SetCosmosFaultsAsync(
                    new CosmosFaultOptions
                    {
                        Seed = seed,
                        Rules = [.. new[] { CosmosFaultKind.ServiceUnavailable, CosmosFaultKind.RequestTimeout, CosmosFaultKind.PartitionKeyRangeGone, CosmosFaultKind.RetryWith }
                            .Select(kind => new CosmosFaultRule { Kind = kind, Container = cosmosContainer, Probability = CosmosErrorShare })],
                    },
                    cancellationToken).ConfigureAwait(false);
                return ($"{cosmosContainer}: {CosmosErrorShare:P0} each of 503, 408, 410/1002, 449", 0);
            case FaultKind.ServiceBusConnectionDrops:
                await SetServiceBusFaultsAsync(ConnectionDropShare, [ServiceBusFaultKind.ConnectionDrop, ServiceBusFaultKind.ConnectionForced], cancellationToken).ConfigureAwait(false);
                return ($"{ConnectionDropShare:P0} of operations each: connection reset, connection forced closed", 0);
            case FaultKind.ServiceBusBusy:
                await SetServiceBusFaultsAsync(ServerBusyShare, [ServiceBusFaultKind.ServerBusySend, ServiceBusFaultKind.ServerBusyReceive], cancellationToken).ConfigureAwait(false);
                return ($"{ServerBusyShare:P0} of sends and receives: server-busy", 0);
            default:
                throw new ArgumentOutOfRangeException(nameof(fault), fault.Kind, "Unknown fault.");
        }
    }

    public async Task EndAsync(ScheduledFault fault, CancellationToken cancellationToken)
    {
        switch (fault.Kind)
        {
            case FaultKind.KillWorkflow or FaultKind.KillBackend or FaultKind.NodeLoss:
                _killed.TryRemove(fault, out var killed);
                await Task.WhenAll((killed ?? []).Select(k => deployment.Services[k.Service].ReplaceAsync(k.Name, cancellationToken))).ConfigureAwait(false);
                break;
            case FaultKind.RestartRedis:
                await deployment.RestartRedisAsync(cancellationToken).ConfigureAwait(false);
                break;
            case FaultKind.CosmosErrors:
                await SetCosmosFaultsAsync(null, cancellationToken).ConfigureAwait(false);
                break;
            case FaultKind.ServiceBusConnectionDrops or FaultKind.ServiceBusBusy:
                await ServiceBus.ClearAsync(cancellationToken).ConfigureAwait(false);
                break;
        }
    }

    /// <summary>The faults each emulator injected, by kind (from their <c>GET /_emulator/faults</c>).</summary>
    public async Task<IReadOnlyDictionary<string, long>> InjectedAsync(CancellationToken cancellationToken)
    {
        var counts = new Dictionary<string, long>(StringComparer.Ordinal);
        var cosmos = await _cosmos.GetFromJsonAsync<CosmosFaultState>(EmulatorFaultsPath, FaultJson, cancellationToken).ConfigureAwait(false);
        foreach (var count in cosmos?.Injected ?? [])
        {
            counts["cosmos " + count.Kind] = counts.GetValueOrDefault("cosmos " + count.Kind) + count.Count;
        }

        foreach (var count in (await ServiceBus.GetAsync(cancellationToken).ConfigureAwait(false)).Injected)
        {
            counts["servicebus " + count.Kind] = counts.GetValueOrDefault("servicebus " + count.Kind) + count.Count;
        }

        return counts;
    }

    public void Dispose()
    {
        _cosmos.Dispose();
        _serviceBusHttp.Dispose();
    }

    private const string EmulatorFaultsPath = "_emulator/faults";

    private static readonly System.Text.Json.JsonSerializerOptions FaultJson = new(System.Text.Json.JsonSerializerDefaults.Web)
    {
        Converters = { new System.Text.Json.Serialization.JsonStringEnumConverter() },
    };

    /// <summary>The injected-fault counts of <c>GET /_emulator/faults</c> on the Cosmos DB emulator.</summary>
    private sealed record CosmosFaultState(IReadOnlyList<InjectedCount> Injected);

    private sealed record InjectedCount(string Kind, long Count);

    private Task SetServiceBusFaultsAsync(double probability, ServiceBusFaultKind[] kinds, CancellationToken cancellationToken) =>
        ServiceBus.SetAsync(
            new ServiceBusFaultOptions { Seed = seed, Rules = [.. kinds.Select(kind => new ServiceBusFaultRule { Kind = kind, Probability = probability })] },
            cancellationToken);

    private async Task SetCosmosFaultsAsync(CosmosFaultOptions? faults, CancellationToken cancellationToken)
    {
        using var request = new HttpRequestMessage(faults is null ? HttpMethod.Delete : HttpMethod.Put, EmulatorFaultsPath)
        {
            Content = faults is null ? null : JsonContent.Create(faults, options: FaultJson),
        };
        request.Headers.TryAddWithoutValidation("x-emulator-key", CosmosEmulatorOptions.WellKnownAccountKey);
        using var response = await _cosmos.SendAsync(request, cancellationToken).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
        {
            throw new InvalidOperationException(
                $"The Cosmos DB emulator refused the faults ({(int)response.StatusCode}): {await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false)}");
        }
    }

    private async Task<(string Target, int ReplicasKilled)> KillAsync(ScheduledFault fault, IReadOnlyList<(ServiceKind Service, int Index)> victims, CancellationToken cancellationToken)
    {
        // All at once (a node's worth dies together); within a service the highest index first, so each
        // index still points at the replica chosen.
        var kills = victims.GroupBy(v => v.Service).Select(async group =>
        {
            var names = new List<(ServiceKind Service, string Name)>();
            foreach (var (service, index) in group.OrderByDescending(v => v.Index))
            {
                if (await deployment.Services[service].KillAsync(index, cancellationToken).ConfigureAwait(false) is { } name)
                {
                    names.Add((service, name));
                }
            }

            return names;
        });
        var names = (await Task.WhenAll(kills).ConfigureAwait(false)).SelectMany(n => n).ToList();

        _killed[fault] = names;
        return names.Count == 0
            ? ($"no {string.Join(" or ", victims.Select(v => v.Service.Name).Distinct())} replica running: every one is being replaced", 0)
            : ("killed " + string.Join(", ", names.Select(n => n.Name)), names.Count);
    }

    /// <summary>A third (at least one) of each running service's replicas, chosen at random.</summary>
    private IEnumerable<(ServiceKind Service, int Index)> NodeLoss()
    {
        foreach (var (service, set) in deployment.Services.Where(s => s.Value.Replicas.Count > 0))
        {
            var count = Math.Max(1, set.Replicas.Count / 3);
            int[] indexes;
            lock (_sync)
            {
                indexes = [.. Enumerable.Range(0, set.Replicas.Count).OrderBy(_ => _random.Next()).Take(count)];
            }

            foreach (var index in indexes)
            {
                yield return (service, index);
            }
        }
    }

    private (ServiceKind Service, int Index) PickReplica(ServiceKind service)
    {
        lock (_sync)
        {
            return (service, _random.Next(int.MaxValue));
        }
    }

    private ServiceKind Pick(ServiceKind[] services)
    {
        lock (_sync)
        {
            return services[_random.Next(services.Length)];
        }
    }
}
