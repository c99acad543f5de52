using DroneDelivery.Lab.Steps;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// The replicas of one service as local processes behind one <see cref="TcpBalancer"/>, the local
/// form of a Deployment and its Service. Changing settings or the replica count restarts the
/// replicas (new ones first, so the service keeps answering), as a rolling update would; changing
/// only the count adds or removes replicas and leaves the others running, as scaling would.
/// </summary>
internal sealed class ReplicaSet : IAsyncDisposable
{
    private static readonly HttpClient Probe = new() { Timeout = TimeSpan.FromSeconds(2) };

    private readonly string _logDirectory;
    private readonly Lock _sync = new();
    private List<Replica> _replicas = [];
    private int _generation;

    public ReplicaSet(ServiceKind service, string logDirectory)
    {
        Service = service;
        _logDirectory = logDirectory;
        Balancer = new TcpBalancer(service.Name, 0, []);
    }

    public ServiceKind Service { get; }

    /// <summary>The stable address other services and the load driver use.</summary>
    public TcpBalancer Balancer { get; }

    public IReadOnlyList<Replica> Replicas => _replicas;

    /// <summary>The environment the running replicas were started with (to know whether a step changes it).</summary>
    public IReadOnlyDictionary<string, string> Environment { get; private set; } = new Dictionary<string, string>();

    /// <summary>
    /// What moving from the running replicas to a step's needs: a restart when their settings change (or
    /// their connections must be renewed), scaling when only the count changes, nothing otherwise.
    /// </summary>
    public static ReplicaChange ChangeFor(bool mustRestart, IReadOnlyDictionary<string, string> runningEnvironment, int runningCount, IReadOnlyDictionary<string, string> environment, int count) =>
        mustRestart || runningCount == 0 || !SameEnvironment(runningEnvironment, environment) ? ReplicaChange.Restart
        : runningCount != count ? ReplicaChange.Scale
        : ReplicaChange.None;

    /// <summary>Names for <paramref name="count"/> new replicas beside <paramref name="running"/>: the lowest numbers not taken.</summary>
    public static IEnumerable<string> NewNames(string service, IEnumerable<string> running, int count)
    {
        var taken = running.ToHashSet(StringComparer.Ordinal);
        return Enumerable.Range(1, int.MaxValue).Select(i => $"{service}-{i}").Where(n => !taken.Contains(n)).Take(count);
    }

    /// <summary>Starts <paramref name="count"/> replicas with <paramref name="environment"/>, then retires the old ones.</summary>
    public async Task DeployAsync(int count, IReadOnlyDictionary<string, string> environment, CancellationToken cancellationToken)
    {
        _generation++;
        var started = await StartAllAsync(Enumerable.Range(1, count).Select(i => $"{Service.Name}-{i}"), environment, cancellationToken).ConfigureAwait(false);
        var old = _replicas;
        _replicas = started;
        Balancer.BackendPorts = [.. started.Select(r => r.Port)];
        Environment = new Dictionary<string, string>(environment);
        await Task.WhenAll(old.Select(r => r.Process.DisposeAsync().AsTask())).ConfigureAwait(false);
    }

    /// <summary>
    /// Changes the number of replicas without touching the ones that stay, as scaling a Deployment does:
    /// new replicas join the balancer once ready, surplus ones leave it and then stop gracefully.
    /// </summary>
    public async Task ScaleAsync(int count, CancellationToken cancellationToken)
    {
        _generation++;
        var current = _replicas;
        if (count > current.Count)
        {
            var added = await StartAllAsync(NewNames(Service.Name, current.Select(r => r.Name), count - current.Count), Environment, cancellationToken).ConfigureAwait(false);
            lock (_sync)
            {
                _replicas = [.. _replicas, .. added];
                Balancer.BackendPorts = [.. _replicas.Select(r => r.Port)];
            }

            return;
        }

        List<Replica> surplus;
        lock (_sync)
        {
            surplus = [.. _replicas.Skip(count)];
            _replicas = [.. _replicas.Take(count)];
            Balancer.BackendPorts = [.. _replicas.Select(r => r.Port)];
        }

        await Task.WhenAll(surplus.Select(r => r.Process.DisposeAsync().AsTask())).ConfigureAwait(false);
    }

    /// <summary>
    /// Kills the replica at <paramref name="index"/> (modulo the running count) with <c>kill -9</c> and takes it
    /// out of the balancer at once, so no other kill picks it too; connections through the balancer to it are
    /// cut with it. <see cref="ReplaceAsync"/> starts its replacement. Returns the name of the replica killed,
    /// or null when none is running (every one is being replaced).
    /// </summary>
    public async Task<string?> KillAsync(int index, CancellationToken cancellationToken)
    {
        Replica victim;
        lock (_sync)
        {
            if (_replicas.Count == 0)
            {
                return null;
            }

            victim = _replicas[index % _replicas.Count];
            _replicas = [.. _replicas.Where(r => r != victim)];
            Balancer.BackendPorts = [.. _replicas.Select(r => r.Port)];
        }

        victim.Process.Kill();
        await victim.Process.Exited.WaitAsync(TimeSpan.FromSeconds(30), cancellationToken).ConfigureAwait(false);
        await victim.Process.DisposeAsync().ConfigureAwait(false);
        return victim.Name;
    }

    /// <summary>
    /// Kills every replica at once (<c>kill -9</c>), as pods deleted with no grace period; the balancer has no
    /// backend until the next <see cref="DeployAsync"/>. For replicas whose work is void anyway (their broker
    /// is being replaced), where a graceful stop would only wait out its time-out.
    /// </summary>
    public async Task KillAllAsync()
    {
        List<Replica> victims;
        lock (_sync)
        {
            victims = _replicas;
            _replicas = [];
            Balancer.BackendPorts = [];
        }

        foreach (var victim in victims)
        {
            victim.Process.Kill();
        }

        await Task.WhenAll(victims.Select(v => v.Process.DisposeAsync().AsTask())).ConfigureAwait(false);
    }

    /// <summary>Starts a replica named <paramref name="name"/> with the set's environment and puts it in the balancer once ready, as a ReplicaSet replaces a dead pod.</summary>
    public async Task ReplaceAsync(string name, CancellationToken cancellationToken)
    {
        var replacement = await StartReplicaAsync(name, Environment, cancellationToken).ConfigureAwait(false);
        lock (_sync)
        {
            _replicas = [.. _replicas, replacement];
            Balancer.BackendPorts = [.. _replicas.Select(r => r.Port)];
        }
    }

    private static bool SameEnvironment(IReadOnlyDictionary<string, string> a, IReadOnlyDictionary<string, string> b) =>
        a.Count == b.Count && a.All(pair => b.TryGetValue(pair.Key, out var value) && value == pair.Value);

    public async ValueTask DisposeAsync()
    {
        Balancer.BackendPorts = [];
        await Task.WhenAll(_replicas.Select(r => r.Process.DisposeAsync().AsTask())).ConfigureAwait(false);
        _replicas = [];
        await Balancer.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Starts replicas with these names concurrently (each pays JIT start-up, which is CPU-bound, but waiting
    /// for readiness overlaps): all of them, or none — when one fails, the others are collected and stopped
    /// before the failure is reported, so none is left running outside the set.
    /// </summary>
    private async Task<List<Replica>> StartAllAsync(IEnumerable<string> names, IReadOnlyDictionary<string, string> environment, CancellationToken cancellationToken)
    {
        var started = new List<Replica>();
        try
        {
            var starts = names.Select(name => StartReplicaAsync(name, environment, cancellationToken)).ToList();
            foreach (var start in starts)
            {
                try
                {
                    started.Add(await start.ConfigureAwait(false));
                }
                catch when (!cancellationToken.IsCancellationRequested)
                {
                    foreach (var other in starts.Where(s => s != start))
                    {
                        try
                        {
                            started.Add(await other.ConfigureAwait(false));
                        }
                        catch (Exception)
                        {
                            // Reported through the first failure.
                        }
                    }

                    throw;
                }
            }

            return started;
        }
        catch
        {
            await Task.WhenAll(started.Select(r => r.Process.DisposeAsync().AsTask())).ConfigureAwait(false);
            throw;
        }
    }

    private async Task<Replica> StartReplicaAsync(string name, IReadOnlyDictionary<string, string> environment, CancellationToken cancellationToken)
    {
        var port = FreePort.Next();
        var variables = new Dictionary<string, string?>(environment.ToDictionary(e => e.Key, e => (string?)e.Value))
        {
            ["ASPNETCORE_URLS"] = $"http://127.0.0.1:{port}",
            ["POD_NAME"] = name,
        };
        var spec = LocalProcessSpec.ForProject(name, Service.ProjectName) with
        {
            Environment = variables,
            LogFile = Path.Combine(_logDirectory, $"{name}.g{_generation}.log"),
        };
        var process = await LocalProcess.StartAsync(spec, cancellationToken).ConfigureAwait(false);
        var replica = new Replica(name, port, process);
        try
        {
            await WaitUntilReadyAsync(replica, cancellationToken).ConfigureAwait(false);
            return replica;
        }
        catch
        {
            await process.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Polls <c>/health/ready</c> as a readiness probe would, until it answers 200.</summary>
    private static async Task WaitUntilReadyAsync(Replica replica, CancellationToken cancellationToken)
    {
        var deadline = DateTime.UtcNow + TimeSpan.FromMinutes(2);
        string last = "no answer";
        while (DateTime.UtcNow < deadline)
        {
            cancellationToken.ThrowIfCancellationRequested();
            if (replica.Process.Exited.IsCompleted)
            {
                throw new InvalidOperationException(
                    $"{replica.Name} exited with code {replica.Process.Exited.Result}. Last output:{System.Environment.NewLine}{string.Join(System.Environment.NewLine, replica.Process.RecentOutput.TakeLast(30))}");
            }

            try
            {
                using var response = await Probe.GetAsync(new Uri(replica.Address, "/health/ready"), cancellationToken).ConfigureAwait(false);
                if (response.IsSuccessStatusCode)
                {
                    return;
                }

                last = $"{(int)response.StatusCode} {await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false)}";
            }
            catch (HttpRequestException e)
            {
                last = e.Message;
            }
            catch (TaskCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                last = "probe timed out";
            }

            await Task.Delay(250, cancellationToken).ConfigureAwait(false);
        }

        throw new InvalidOperationException($"{replica.Name} was not ready after 2 minutes; /health/ready last said: {last}");
    }
}

/// <summary>How a replica set moves to a step's configuration.</summary>
internal enum ReplicaChange
{
    None,
    Restart,
    Scale,
}

/// <summary>One running replica of a service.</summary>
internal sealed record Replica(string Name, int Port, LocalProcess Process)
{
    public Uri Address => new($"http://127.0.0.1:{Port}");
}
