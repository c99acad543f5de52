using DroneDelivery.Lab.Deployment;

namespace DroneDelivery.Lab.Profiling;

/// <summary>A profile the lab took of one of its processes: which, and the files written.</summary>
/// <param name="Component">The component the process belongs to (e.g. <c>dronescheduler</c>).</param>
/// <param name="Svg">The flame graph; beside it the top frames (<c>.txt</c>) and the folded stacks (<c>.folded</c>).</param>
/// <param name="TopFrames">The frames with the most samples, as text.</param>
internal sealed record ProfiledProcess(string Component, int ProcessId, string Svg, string TopFrames, long Samples);

/// <summary>
/// Profiles the busiest of the system's .NET processes — the one that took the most CPU since a reading of every
/// process's CPU time — while a load runs: where a step's CPU goes, drawn as a flame graph.
/// </summary>
internal static class StepProfiler
{
    /// <summary>How long a step's profile samples: long enough for thousands of samples, short beside a step's load.</summary>
    public static readonly TimeSpan Duration = TimeSpan.FromSeconds(8);

    /// <summary>How many frames the text and the report list.</summary>
    public const int TopFrameCount = 12;

    /// <summary>The processes the profiler can reach (services and emulators run on .NET; redis-server and the others do not), with their CPU time now.</summary>
    public static IReadOnlyDictionary<int, (string Component, TimeSpan Cpu)> CpuNow(LocalDeployment deployment) =>
        deployment.Processes()
            .Where(p => p.Component is not ("redis" or "prometheus" or "aspire-dashboard") && p.Process.ProcessId > 0)
            .GroupBy(p => p.Process.ProcessId)
            .ToDictionary(g => g.Key, g => (g.First().Component, g.First().Process.TotalProcessorTime));

    /// <summary>
    /// Profiles for <paramref name="duration"/> the process (of <paramref name="component"/>, or of any) that took the
    /// most CPU since <paramref name="since"/>, and writes its flame graph to <paramref name="svgFile"/>; null when no
    /// process can be profiled.
    /// </summary>
    public static async Task<ProfiledProcess?> ProfileBusiestAsync(
        LocalDeployment deployment, IReadOnlyDictionary<int, (string Component, TimeSpan Cpu)> since, string? component, TimeSpan duration, string svgFile, CancellationToken cancellationToken)
    {
        var busiest = CpuNow(deployment)
            .Where(p => component is null || p.Value.Component == component)
            .Select(p => (Pid: p.Key, p.Value.Component, Used: p.Value.Cpu - (since.TryGetValue(p.Key, out var before) ? before.Cpu : TimeSpan.Zero)))
            .OrderByDescending(p => p.Used)
            .FirstOrDefault();
        if (busiest.Pid == 0)
        {
            return null;
        }

        Directory.CreateDirectory(Path.GetDirectoryName(svgFile)!);
        var profile = await CpuProfiler.ProfileAsync(busiest.Pid, duration, cancellationToken).ConfigureAwait(false);
        profile = profile with { ProcessName = $"{busiest.Component} (pid {busiest.Pid})" };
        profile.Write(svgFile, TopFrameCount);
        return new ProfiledProcess(busiest.Component, busiest.Pid, svgFile, profile.FlameGraph().TopFrames(TopFrameCount).ToString(), profile.Samples);
    }
}
