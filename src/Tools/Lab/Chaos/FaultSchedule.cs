using System.Globalization;

namespace DroneDelivery.Lab.Chaos;

/// <summary>The faults the chaos command injects, each one a cluster actually has.</summary>
internal enum FaultKind
{
    /// <summary><c>kill -9</c> of a random Workflow replica, replaced after the restart delay.</summary>
    KillWorkflow,

    /// <summary><c>kill -9</c> of a random Delivery, Package or DroneScheduler replica, replaced after the restart delay.</summary>
    KillBackend,

    /// <summary><c>kill -9</c> of redis-server, started again on its port after the restart delay.</summary>
    RestartRedis,

    /// <summary>For a window, a share of one Cosmos DB container's requests answered 503, 408, 410/1002 and 449.</summary>
    CosmosErrors,

    /// <summary>For a window, Service Bus connections dropped (reset) or closed with <c>amqp:connection:forced</c>.</summary>
    ServiceBusConnectionDrops,

    /// <summary>For a window, Service Bus sends and receives refused with <c>com.microsoft:server-busy</c>.</summary>
    ServiceBusBusy,

    /// <summary>A node lost: a third (at least one) of every service's replicas killed at once, replaced after the restart delay.</summary>
    NodeLoss,
}

/// <summary>One fault of a schedule: it starts <see cref="At"/> after the load starts and lasts <see cref="Window"/> (for a kill, the time until its replacement is started).</summary>
internal sealed record ScheduledFault(TimeSpan At, FaultKind Kind, TimeSpan Window);

/// <summary>What happened when a fault ran: offsets from the schedule's start, what it hit, and how many replicas it killed.</summary>
internal sealed record FaultRecord(FaultKind Kind, TimeSpan Started, TimeSpan Ended, string Target, int ReplicasKilled)
{
    public string Describe() =>
        string.Create(CultureInfo.InvariantCulture, $"{Kind} at {Started.TotalSeconds:0.0} s–{Ended.TotalSeconds:0.0} s: {Target}");
}

/// <summary>How a chaos run's faults are laid out over its load.</summary>
internal sealed record ChaosPlan
{
    /// <summary>How long the load runs.</summary>
    public required TimeSpan LoadDuration { get; init; }

    /// <summary>No fault before this: the completion rate measured before it is the pre-fault rate.</summary>
    public required TimeSpan Warmup { get; init; }

    /// <summary>No fault starts this close to the load's end, so the system can be seen recovering under load.</summary>
    public required TimeSpan QuietTail { get; init; }

    /// <summary>A Workflow or backend replica is killed this often (alternately).</summary>
    public required TimeSpan KillEvery { get; init; }

    /// <summary>How long an emulator fault lasts.</summary>
    public required TimeSpan FaultWindow { get; init; }

    /// <summary>How long after a kill its replacement is started (a Deployment's reaction time).</summary>
    public required TimeSpan RestartDelay { get; init; }

    /// <summary>The first problem of the plan, or null.</summary>
    public string? Problem()
    {
        if (LoadDuration <= TimeSpan.Zero || Warmup < TimeSpan.Zero || QuietTail < TimeSpan.Zero || KillEvery <= TimeSpan.Zero
            || FaultWindow <= TimeSpan.Zero || RestartDelay < TimeSpan.Zero)
        {
            return "The load duration, kill interval and fault window must be positive; warm-up, quiet tail and restart delay not negative.";
        }

        var faultPhase = LoadDuration - Warmup - QuietTail;
        return faultPhase < FaultWindow * FaultSchedule.SlottedFaults.Count
            ? string.Create(CultureInfo.InvariantCulture, $"The load ({LoadDuration.TotalSeconds:0} s) less warm-up and quiet tail leaves {faultPhase.TotalSeconds:0} s: too short for {FaultSchedule.SlottedFaults.Count} faults of {FaultWindow.TotalSeconds:0} s each.")
            : null;
    }
}

/// <summary>Lays out a plan's faults: periodic kills throughout the fault phase, and each other fault once, in its own slot.</summary>
internal static class FaultSchedule
{
    /// <summary>The faults that run once each, in this order, spread evenly over the fault phase.</summary>
    public static IReadOnlyList<FaultKind> SlottedFaults { get; } =
        [FaultKind.RestartRedis, FaultKind.CosmosErrors, FaultKind.ServiceBusConnectionDrops, FaultKind.ServiceBusBusy, FaultKind.NodeLoss];

    public static IReadOnlyList<ScheduledFault> Build(ChaosPlan plan)
    {
        if (plan.Problem() is { } problem)
        {
            throw new ArgumentException(problem, nameof(plan));
        }

        var end = plan.LoadDuration - plan.QuietTail;
        var faults = new List<ScheduledFault>();
        var slot = (end - plan.Warmup) / SlottedFaults.Count;
        for (var i = 0; i < SlottedFaults.Count; i++)
        {
            var kind = SlottedFaults[i];
            var window = kind is FaultKind.RestartRedis or FaultKind.NodeLoss ? plan.RestartDelay : plan.FaultWindow;
            faults.Add(new ScheduledFault(plan.Warmup + (slot * i), kind, window));
        }

        // Kills in between, half a period after each slot's start so they do not land on the slotted fault.
        var kill = 0;
        for (var at = plan.Warmup + (plan.KillEvery / 2); at < end; at += plan.KillEvery, kill++)
        {
            faults.Add(new ScheduledFault(at, kill % 2 == 0 ? FaultKind.KillWorkflow : FaultKind.KillBackend, plan.RestartDelay));
        }

        return [.. faults.OrderBy(f => f.At).ThenBy(f => f.Kind)];
    }
}

/// <summary>Starts and ends faults; the chaos command's is the local system's (<see cref="LocalFaultInjector"/>).</summary>
internal interface IFaultInjector
{
    /// <summary>Starts the fault; returns what it hit and how many replicas it killed.</summary>
    Task<(string Target, int ReplicasKilled)> StartAsync(ScheduledFault fault, CancellationToken cancellationToken);

    /// <summary>Ends the fault: the window closes, or the killed processes' replacements are started and ready.</summary>
    Task EndAsync(ScheduledFault fault, CancellationToken cancellationToken);
}

/// <summary>Passes faults on to another injector and counts those it started, for a chaos run's progress lines.</summary>
internal sealed class CountingFaultInjector(IFaultInjector inner, int scheduled) : IFaultInjector
{
    private int _started;

    /// <summary>The faults started so far.</summary>
    public int Started => Volatile.Read(ref _started);

    /// <summary>The count for a progress line, e.g. <c>3 of 12 faults injected</c>.</summary>
    public string Describe() => string.Create(CultureInfo.InvariantCulture, $"{Started} of {scheduled} faults injected");

    public async Task<(string Target, int ReplicasKilled)> StartAsync(ScheduledFault fault, CancellationToken cancellationToken)
    {
        var started = await inner.StartAsync(fault, cancellationToken).ConfigureAwait(false);
        Interlocked.Increment(ref _started);
        return started;
    }

    public Task EndAsync(ScheduledFault fault, CancellationToken cancellationToken) => inner.EndAsync(fault, cancellationToken);
}

/// <summary>Runs a schedule of faults on a <see cref="TimeProvider"/>; faults may overlap (a kill during an emulator fault's window).</summary>
internal static class FaultScheduler
{
    /// <summary>
    /// Runs every fault at its time and returns, once all have ended, what each did (in start order). Every
    /// fault's wait starts now, on <paramref name="time"/>; <paramref name="log"/> hears of a fault once its window runs.
    /// </summary>
    public static async Task<IReadOnlyList<FaultRecord>> RunAsync(
        IReadOnlyList<ScheduledFault> schedule, IFaultInjector injector, TimeProvider time, Action<string> log, CancellationToken cancellationToken)
    {
        var start = time.GetTimestamp();
        var records = await Task.WhenAll(schedule.Select(fault => RunOneAsync(fault, injector, time, start, log, cancellationToken))).ConfigureAwait(false);
        return [.. records.OrderBy(r => r.Started)];
    }

    private static async Task<FaultRecord> RunOneAsync(
        ScheduledFault fault, IFaultInjector injector, TimeProvider time, long start, Action<string> log, CancellationToken cancellationToken)
    {
        if (fault.At > TimeSpan.Zero)
        {
            await Task.Delay(fault.At, time, cancellationToken).ConfigureAwait(false);
        }

        var started = time.GetElapsedTime(start);
        var (target, killed) = await injector.StartAsync(fault, cancellationToken).ConfigureAwait(false);
        var window = Task.Delay(fault.Window, time, cancellationToken);
        log(string.Create(CultureInfo.InvariantCulture, $"  fault {fault.Kind} at {started.TotalSeconds:0} s: {target}"));
        await window.ConfigureAwait(false);
        await injector.EndAsync(fault, cancellationToken).ConfigureAwait(false);
        var record = new FaultRecord(fault.Kind, started, time.GetElapsedTime(start), target, killed);
        log(string.Create(CultureInfo.InvariantCulture, $"  fault {fault.Kind} over at {record.Ended.TotalSeconds:0} s"));
        return record;
    }
}
