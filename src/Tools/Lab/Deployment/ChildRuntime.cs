namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// How the .NET runtime runs in every process the lab starts (services, emulators, the seed), set once in the lab's own
/// environment, which they inherit.
/// </summary>
internal static class ChildRuntime
{
    /// <summary>
    /// Workstation GC: dozens of processes share a few cores. Compiled once, optimised: with quick compilation off
    /// (<c>TC_QuickJit</c>), a method without precompiled code is compiled optimised on its first call, never first
    /// quickly and again after 30 calls; a dozen fresh processes would otherwise recompile every method they use, in
    /// the background, for tens of seconds under load — longer on fewer cores, and longest in the processes with the
    /// fewest requests each — and a step or probe measured meanwhile counts it as its requests' CPU (on one core,
    /// twice a request's own). Tiered compilation stays on for the precompiled (ReadyToRun) code of the framework and
    /// the SDKs: it starts as shipped, and only what runs 30 times is recompiled, with the code of other assemblies
    /// inlined, which precompiled code, compiled one assembly at a time, cannot have. That recompiling is a burst after
    /// the first requests, which the lab's wait for its system to come to rest after each warm-up absorbs, and then
    /// saves a sixth to a fifth of a request's CPU; with tiered compilation off the precompiled code ran as shipped, and
    /// compiling everything here instead (<c>DOTNET_ReadyToRun=0</c>) costs every start what was precompiled, past
    /// the quick run's time (the figures: docs/benchmarks/capacity.md, "Precompiled code").
    /// Configuration files not watched: ASP.NET Core watches its content root — the directory the lab runs in,
    /// usually the repository, over a thousand directories — recursively for appsettings changes. Twenty processes
    /// each holding an inotify watch per directory exceed the 8,192 watches many Linux machines allow a user, and
    /// every line the lab writes to its logs there wakes each of them. The services read no appsettings file.
    /// </summary>
    public static IReadOnlyDictionary<string, string> Variables { get; } = new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["DOTNET_gcServer"] = "0",
        ["DOTNET_TieredCompilation"] = "1",
        ["DOTNET_TC_QuickJit"] = "0",
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
