namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// How the .NET runtime runs in every process the lab starts (services, emulators, the seed), set once in the lab's own
/// environment, which they inherit.
/// </summary>
internal static class ChildRuntime
{
    /// <summary>
    /// Workstation GC: dozens of processes share a few cores. Tiered compilation off: each method is compiled once,
    /// optimised, on its first call, instead of first quickly and then again once hot — a recompilation that runs in
    /// the background for tens of seconds after each start, longer on fewer cores, and that a step or probe measured
    /// meanwhile would count as its requests' CPU (on one core, twice a request's own). The lab's processes live for
    /// a step; the images keep the runtime's defaults.
    /// </summary>
    public static IReadOnlyDictionary<string, string> Variables { get; } = new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["DOTNET_gcServer"] = "0",
        ["DOTNET_TieredCompilation"] = "0",
    };

    public static void ApplyToChildren()
    {
        foreach (var (name, value) in Variables)
        {
            Environment.SetEnvironmentVariable(name, value);
        }
    }
}
