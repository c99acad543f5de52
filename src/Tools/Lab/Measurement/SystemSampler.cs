using System.Collections.Concurrent;
using System.Diagnostics;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Measurement;

/// <summary>CPU of one component in one second: average over its processes and the busiest one, in % of one core.</summary>
internal sealed record CpuSample(double Second, string Component, double AveragePercent, double MaxPercent);

/// <summary>The largest working set among a component's processes at one second, in MB.</summary>
internal sealed record MemorySample(double Second, string Component, double Megabytes);

/// <summary>A service's largest thread-pool queue over its replicas at one scrape (work items waiting for a thread).</summary>
internal sealed record ThreadPoolSample(double Second, string Component, double MaxQueueLength);

/// <summary>How late the sampler's one-second timer fired at one second: time the lab, or the whole machine, stood still.</summary>
internal sealed record StallSample(double Second, double Seconds);

/// <summary>CPU the whole system took in one second — every process the lab started and the lab itself (load driver, balancers) — in cores.</summary>
internal sealed record SystemCpuSample(double Second, double Cores);

/// <summary>
/// CPU the rest of the machine took in one second, in cores: processes the lab did not start
/// (<paramref name="OtherCores"/>) and a hypervisor (<paramref name="StealCores"/>). Both slow the lab
/// down steadily without stopping its timer.
/// </summary>
internal sealed record OtherLoadSample(double Second, double OtherCores, double StealCores);

/// <summary>
/// Time the system's threads ran on a core and waited in a run queue for one (<see cref="RunQueueMeter"/>) in
/// one second, in thread-seconds per second.
/// </summary>
internal sealed record RunQueueSample(double Second, double RanCores, double WaitedCores);

/// <summary>
/// Samples the running system while a step runs: CPU of every process once a second (from /proc,
/// like a node's cAdvisor would) and every service replica's <c>/metrics</c> every few seconds.
/// </summary>
internal sealed class SystemSampler : IAsyncDisposable
{
    /// <summary>
    /// The runtime publishes <c>dotnet.thread_pool.queue.length</c> as an observable counter although it
    /// is a level, hence the <c>_total</c> suffix: its value, not its rate, is the queue length.
    /// </summary>
    internal const string ThreadPoolQueueMetric = "dotnet_thread_pool_queue_length_total";

    private static readonly HttpClient Http = new() { Timeout = TimeSpan.FromSeconds(3) };

    private readonly LocalDeployment _deployment;
    private readonly Stopwatch _clock = Stopwatch.StartNew();
    private readonly CancellationTokenSource _stop = new();
    private readonly ConcurrentQueue<CpuSample> _cpu = new();
    private readonly ConcurrentQueue<ThreadPoolSample> _threadPool = new();
    private readonly ConcurrentQueue<MemorySample> _memory = new();
    private readonly ConcurrentQueue<StallSample> _stalls = new();
    private readonly ConcurrentQueue<OtherLoadSample> _otherLoad = new();
    private readonly ConcurrentQueue<SystemCpuSample> _systemCpu = new();
    private readonly ConcurrentQueue<RunQueueSample> _runQueue = new();
    private readonly Task _cpuLoop;
    private readonly Task _scrapeLoop;

    public SystemSampler(LocalDeployment deployment, TimeSpan scrapeInterval)
    {
        _deployment = deployment;
        _cpuLoop = Task.Run(CpuLoopAsync);
        _scrapeLoop = Task.Run(() => ScrapeLoopAsync(scrapeInterval));
    }

    /// <summary>Seconds since sampling started (the time axis of every sample).</summary>
    public double Now => _clock.Elapsed.TotalSeconds;

    public IReadOnlyList<CpuSample> Cpu => [.. _cpu];

    public IReadOnlyList<ThreadPoolSample> ThreadPool => [.. _threadPool];

    public IReadOnlyList<MemorySample> Memory => [.. _memory];

    /// <summary>Every time the one-second sampling timer fired more than a quarter of a second late.</summary>
    public IReadOnlyList<StallSample> Stalls => [.. _stalls];

    /// <summary>CPU the rest of the machine took, once a second (none where /proc/stat cannot be read).</summary>
    public IReadOnlyList<OtherLoadSample> OtherLoad => [.. _otherLoad];

    /// <summary>CPU the whole system took, once a second: what the CPU budget of a step is held to.</summary>
    public IReadOnlyList<SystemCpuSample> SystemCpu => [.. _systemCpu];

    /// <summary>What the system's threads ran and waited for a core, once a second (none where /proc cannot be read).</summary>
    public IReadOnlyList<RunQueueSample> RunQueue => [.. _runQueue];

    /// <summary>CPU time used so far by each component's current processes, and by the lab itself (<c>lab</c>: load driver and balancers).</summary>
    public IReadOnlyDictionary<string, TimeSpan> CpuTimeByComponent() => CpuTimeByComponent(_deployment);

    /// <inheritdoc cref="CpuTimeByComponent()"/>
    public static IReadOnlyDictionary<string, TimeSpan> CpuTimeByComponent(LocalDeployment deployment)
    {
        var totals = new Dictionary<string, TimeSpan>(StringComparer.Ordinal) { [LabComponent] = LabProcessorTime() };
        foreach (var (component, process) in deployment.Processes())
        {
            totals[component] = totals.GetValueOrDefault(component) + process.TotalProcessorTime;
        }

        return totals;
    }

    /// <summary>The lab's own process in CPU figures: the load driver and the balancers.</summary>
    internal const string LabComponent = "lab";

    /// <summary>Scrapes every replica of <paramref name="service"/> now.</summary>
    public async Task<IReadOnlyList<PrometheusSample>> ScrapeAsync(ServiceKind service, CancellationToken cancellationToken)
    {
        var samples = new List<PrometheusSample>();
        foreach (var replica in _deployment.Services[service].Replicas)
        {
            try
            {
                var text = await Http.GetStringAsync(new Uri(replica.Address, "/metrics"), cancellationToken).ConfigureAwait(false);
                samples.AddRange(PrometheusText.Parse(text));
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException && !cancellationToken.IsCancellationRequested)
            {
                // A replica being replaced or overloaded misses one scrape; the next one counts.
            }
        }

        return samples;
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        await Task.WhenAll(_cpuLoop, _scrapeLoop).ConfigureAwait(false);
        _stop.Dispose();
    }

    private async Task CpuLoopAsync()
    {
        // Each process's CPU time is paired with the moment it was read: a sweep over dozens of
        // processes can itself be delayed on a busy machine, and dividing by the sweep's nominal
        // interval would then report more CPU than the machine has.
        var previous = new Dictionary<int, (TimeSpan Cpu, TimeSpan At)>();
        var stalls = new StallDetector(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(0.25));
        stalls.Start(_clock.Elapsed);
        var machineBefore = MachineCpu.Read();
        var labBefore = LabProcessorTime();
        var machineAt = _clock.Elapsed;
        var runQueue = new RunQueueMeter();
        var primed = false;
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false))
            {
                var now = _clock.Elapsed;
                if (stalls.Tick(now) is { } late)
                {
                    _stalls.Enqueue(new StallSample(now.TotalSeconds, late));
                }

                var current = new Dictionary<int, (TimeSpan Cpu, TimeSpan At)>();
                var byComponent = new Dictionary<string, List<double>>();
                var memory = new Dictionary<string, double>();
                var ours = TimeSpan.Zero;
                foreach (var (component, process) in _deployment.Processes())
                {
                    var pid = process.ProcessId;
                    var reading = (Cpu: process.TotalProcessorTime, At: _clock.Elapsed);
                    current[pid] = reading;
                    var megabytes = WorkingSetMegabytes(pid);
                    memory[component] = Math.Max(memory.GetValueOrDefault(component), megabytes);
                    if (previous.TryGetValue(pid, out var before) && reading.At > before.At)
                    {
                        ours += reading.Cpu - before.Cpu;
                        var percent = Math.Max(0, (reading.Cpu - before.Cpu).TotalSeconds / (reading.At - before.At).TotalSeconds * 100);
                        (byComponent.TryGetValue(component, out var list) ? list : byComponent[component] = []).Add(percent);
                    }
                }

                previous = current;
                var scheduled = runQueue.Sample(current.Keys.Append(Environment.ProcessId));
                var labNow = LabProcessorTime();
                ours += labNow - labBefore;
                labBefore = labNow;
                if (primed)
                {
                    var seconds = (_clock.Elapsed - machineAt).TotalSeconds;
                    _systemCpu.Enqueue(new SystemCpuSample(now.TotalSeconds, ours.TotalSeconds / seconds));
                    if (scheduled.Ran > TimeSpan.Zero)
                    {
                        _runQueue.Enqueue(new RunQueueSample(now.TotalSeconds, scheduled.Ran.TotalSeconds / seconds, scheduled.Waited.TotalSeconds / seconds));
                    }
                }

                var machineNow = MachineCpu.Read();
                // The first sweep has no earlier reading of the processes, so their CPU cannot be told apart yet.
                if (primed && machineNow is { } machineReading && machineBefore is { } machineThen)
                {
                    // What the machine spent beyond the lab and its processes: someone else's work, sharing the cores.
                    var interval = (_clock.Elapsed - machineAt).TotalSeconds;
                    var spent = machineReading - machineThen;
                    _otherLoad.Enqueue(new OtherLoadSample(
                        now.TotalSeconds,
                        Math.Max(0, spent.Competing - ours.TotalSeconds) / interval,
                        Math.Max(0, spent.Steal) / interval));
                }

                machineBefore = machineNow;
                machineAt = _clock.Elapsed;
                primed = true;
                foreach (var (component, megabytes) in memory)
                {
                    _memory.Enqueue(new MemorySample(now.TotalSeconds, component, megabytes));
                }

                foreach (var (component, percents) in byComponent)
                {
                    _cpu.Enqueue(new CpuSample(now.TotalSeconds, component, percents.Average(), percents.Max()));
                }
            }
        }
        catch (OperationCanceledException)
        {
        }
    }

    private async Task ScrapeLoopAsync(TimeSpan interval)
    {
        using var timer = new PeriodicTimer(interval);
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false))
            {
                foreach (var service in ServiceKind.All)
                {
                    var samples = await ScrapeAsync(service, _stop.Token).ConfigureAwait(false);
                    var queues = samples.Where(s => s.Name == ThreadPoolQueueMetric).Select(s => s.Value).ToList();
                    if (queues.Count > 0)
                    {
                        _threadPool.Enqueue(new ThreadPoolSample(_clock.Elapsed.TotalSeconds, service.Name, queues.Max()));
                    }
                }
            }
        }
        catch (OperationCanceledException)
        {
        }
    }

    private static TimeSpan LabProcessorTime()
    {
        using var self = Process.GetCurrentProcess();
        return self.TotalProcessorTime;
    }

    private static double WorkingSetMegabytes(int pid)
    {
        if (pid <= 0)
        {
            return 0;
        }

        try
        {
            using var process = Process.GetProcessById(pid);
            return process.WorkingSet64 / 1048576.0;
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException)
        {
            return 0;
        }
    }
}
