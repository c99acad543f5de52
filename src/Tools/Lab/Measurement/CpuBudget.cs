using System.Globalization;

namespace DroneDelivery.Lab.Measurement;

/// <summary>
/// The share of the machine the system may use in a step, and how a step is held to it. While the system's
/// processes (services, emulators, redis-server, the lab's load driver and balancers) leave CPU to spare, the
/// emulated cloud's limits — RU/s, partitions, injected latency, locks, concurrency — decide every figure;
/// once they do not, the machine's speed does, and the step is machine-bound.
/// </summary>
internal sealed record CpuBudget(double Cores, double OtherCores, double Share, double? HardwareCores = null)
{
    /// <summary>The busiest this many seconds of a step count: a ramp's peak, not its average, saturates a machine.</summary>
    public const int WindowSeconds = 5;

    /// <summary>
    /// A service's thread-pool queue at least this long on two scrapes in a row (two seconds apart) is saturation:
    /// work waiting for a thread because the cores are busy. A healthy service's queue stays at a few items; the
    /// starved ones this lab has seen held 180–220.
    /// </summary>
    public const double SaturatedQueueLength = 32;

    /// <summary>Seconds waited for a core per second run, over the samples; null when the system did not run in them.</summary>
    public static double? CoreWaitShare(IReadOnlyList<RunQueueSample> samples)
    {
        var ran = samples.Sum(s => s.RanCores);
        return ran > 0 ? samples.Sum(s => s.WaitedCores) / ran : null;
    }

    /// <summary>The machine's cores as this process sees them (a cgroup's CPU quota included).</summary>
    public static int MachineCores => Environment.ProcessorCount;

    /// <summary>
    /// What the system may use: the share of the cores other processes leave it. Under a CPU quota smaller than the
    /// machine (<see cref="HardwareCores"/> above <see cref="Cores"/>) other processes run on the cores the quota
    /// leaves free, and take from the system only what they take beyond those. And they leave it at least half the
    /// machine: at the same priority the scheduler shares a contended core evenly among those that ask for it, so
    /// processes that took more than half took it because the system left it idle, and yield it when the system
    /// asks. Whether they do shows in how long the system's threads wait for a core (<see cref="StepResult.CoreWaitShare"/>),
    /// and a system they starve queues work in its thread pools (<see cref="SaturatedQueueLength"/>).
    /// </summary>
    public double LimitCores => Share * AvailableCores;

    /// <summary>The cores the system can have: its own (or its quota's), less what other processes hold of them.</summary>
    private double AvailableCores => Math.Min(Cores, Math.Max(Machine - OtherCores, Machine / 2));

    private double Machine => HardwareCores ?? Cores;

    /// <summary>Whether other processes took more than half the machine, so the system's half is what bounds it.</summary>
    private bool HalfTheMachine => Machine - OtherCores < Machine / 2;

    public string Describe()
    {
        var quota = HardwareCores > Cores ? string.Create(CultureInfo.InvariantCulture, $" of a quota on a {HardwareCores}-core machine") : string.Empty;
        if (OtherCores < 0.05)
        {
            return string.Create(CultureInfo.InvariantCulture, $"{LimitCores:0.00} cores ({Share:P0} of the {Cores} cores{quota})");
        }

        return HalfTheMachine
            ? string.Create(CultureInfo.InvariantCulture, $"{LimitCores:0.00} cores ({Share:P0} of {AvailableCores:0.##}, half the {Machine}-core machine: other processes took {OtherCores:0.00} cores, and at the same priority they share the cores evenly when the system asks)")
            : string.Create(CultureInfo.InvariantCulture, $"{LimitCores:0.00} cores ({Share:P0} of the {Cores} cores{quota} less {OtherCores:0.00} other processes took)");
    }

    /// <summary>The highest average of <see cref="WindowSeconds"/> consecutive samples (all of them when there are fewer).</summary>
    public static double PeakCores(IReadOnlyList<SystemCpuSample> samples)
    {
        if (samples.Count == 0)
        {
            return 0;
        }

        var window = Math.Min(WindowSeconds, samples.Count);
        var sum = samples.Take(window).Sum(s => s.Cores);
        var peak = sum;
        for (var i = window; i < samples.Count; i++)
        {
            sum += samples[i].Cores - samples[i - window].Cores;
            peak = Math.Max(peak, sum);
        }

        return peak / window;
    }

    /// <summary>The first service whose thread pool stayed saturated over two scrapes in a row, described; null when none did.</summary>
    public static string? ThreadPoolSaturation(IReadOnlyList<ThreadPoolSample> samples)
    {
        foreach (var component in samples.GroupBy(s => s.Component).OrderBy(g => g.Key, StringComparer.Ordinal))
        {
            var ordered = component.OrderBy(s => s.Second).ToList();
            for (var i = 1; i < ordered.Count; i++)
            {
                if (ordered[i - 1].MaxQueueLength >= SaturatedQueueLength && ordered[i].MaxQueueLength >= SaturatedQueueLength)
                {
                    return string.Create(CultureInfo.InvariantCulture,
                        $"{component.Key}'s thread pool queued {Math.Max(ordered[i - 1].MaxQueueLength, ordered[i].MaxQueueLength):0} work items for a thread");
                }
            }
        }

        return null;
    }
}
