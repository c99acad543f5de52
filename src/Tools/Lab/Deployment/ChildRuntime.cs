namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// How the .NET runtime runs in every process the lab starts (services, emulators, the seed), set once in the lab's own
/// environment, which they inherit.
/// </summary>
internal static class ChildRuntime
{
    /// <summary>
    /// Workstation GC: dozens of processes share a few cores. Tiered compilation off: each method is compiled once,
    /// optimised, on its first call. With it on, the runtime first compiles quickly and recompiles a method once it
    /// has been called 30 times, in the background: in a dozen fresh processes that runs for tens of seconds under
    /// load — longer on fewer cores, and longest in the processes with the fewest requests each — and a step or
    /// probe measured meanwhile counts it as its requests' CPU (on one core, twice a request's own). Recompiling
    /// after the first call instead leaves a burst at each start that one core does not work off in a minute.
    /// The cost: the framework's and the SDKs' precompiled (ReadyToRun) code runs as shipped, never recompiled, so
    /// a request takes more CPU than in a long-running pod. Not using it (<c>DOTNET_ReadyToRun=0</c>) compiles
    /// everything here, optimised, and saves a quarter of a request's CPU, but every start then compiles what was
    /// precompiled, and the lab's restarts take the quick run past its time (the figures: docs/benchmarks/capacity.md,
    /// "Precompiled code"). The lab's processes live for a step; the images keep the runtime's defaults.
    /// Configuration files not watched: ASP.NET Core watches its content root — the directory the lab runs in,
    /// usually the repository, over a thousand directories — recursively for appsettings changes. Twenty processes
    /// each holding an inotify watch per directory exceed the 8,192 watches many Linux machines allow a user, and
    /// every line the lab writes to its logs there wakes each of them. The services read no appsettings file.
    /// </summary>
    public static IReadOnlyDictionary<string, string> Variables { get; } = new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["DOTNET_gcServer"] = "0",
        ["DOTNET_TieredCompilation"] = "0",
        ["DOTNET_hostBuilder__reloadConfigOnChange"] = "false",
    };

    public static void ApplyToChildren()
    {
        foreach (var (name, value) in Variables)
        {
            Environment.SetEnvironmentVariable(name, value);
        }
    }
}
