namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// How the .NET runtime runs in every process the lab starts (services, emulators, the seed), set once in the lab's own
/// environment, which they inherit.
/// </summary>
internal static class ChildRuntime
{
    /// <summary>
    /// Workstation GC: dozens of processes share a few cores. Tiered compilation promotes a method to optimised code
    /// after its first call, without waiting: by default the runtime waits for 30 calls of a method and for a pause
    /// in new compilations before it optimises, so in a dozen fresh processes the recompilation runs in the
    /// background for tens of seconds under load — longer on fewer cores, and longest in the processes with the
    /// fewest requests each — and a step or probe measured meanwhile counts it as its requests' CPU (on one core,
    /// more than twice a request's own). Here it is done in the seconds after each start and each warm-up, and the
    /// code measured is the optimised code a long-running pod runs. (Tiered compilation off would compile each method
    /// once, but leave the framework's precompiled code unoptimised for good: a third more CPU per request.) The
    /// lab's processes live for a step; the images keep the runtime's defaults.
    /// </summary>
    public static IReadOnlyDictionary<string, string> Variables { get; } = new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["DOTNET_gcServer"] = "0",
        ["DOTNET_TC_CallCountThreshold"] = "1",
        ["DOTNET_TC_CallCountingDelayMs"] = "0",
    };

    public static void ApplyToChildren()
    {
        foreach (var (name, value) in Variables)
        {
            Environment.SetEnvironmentVariable(name, value);
        }
    }
}
