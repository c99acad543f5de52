using System.Globalization;
using DroneDelivery.Lab.Soak;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;
using Xunit.Abstractions;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The soak's sampler and verdict on a system with a process made to leak: two replicas of one test
/// process, one holding 4 MB more every second and one holding nothing more. The soak must name the
/// first, with a growth per hour of the leak's order, and not the second.
/// </summary>
public sealed class SoakLeakTests(ITestOutputHelper output)
{
    private const double LeakMegabytesPerSecond = 4;
    private static readonly TimeSpan WarmUp = TimeSpan.FromSeconds(10);
    private static readonly TimeSpan Interval = TimeSpan.FromMilliseconds(250);

    [Fact]
    public async Task A_process_that_leaks_is_named_with_its_growth_per_hour_and_a_steady_one_is_not()
    {
        await using var leaking = await LocalProcess.StartAsync(Replica("leaking-replica", LeakMegabytesPerSecond));
        await using var steady = await LocalProcess.StartAsync(Replica("steady-replica", 0));
        await using var sampler = new SoakSampler(
            () => [("leaking-replica", leaking.ProcessId), ("steady-replica", steady.ProcessId)], [], Interval, TimeProvider.System);
        var origin = sampler.Now;

        // 30 s of samples on the sampler's own clock: a 10 s warm-up (the replicas start up), then 20 s of steady state.
        Assert.True(await Eventually.TrueAsync(() => sampler.Now - origin >= 30 && sampler.Sweeps >= 40, TimeSpan.FromMinutes(3)), "The sampler took no samples.");
        var verdict = DriftAnalysis.Decide(sampler.Series(origin), WarmUp, TimeSpan.FromSeconds(sampler.Now - origin));
        foreach (var finding in verdict.Findings)
        {
            output.WriteLine(finding.Describe());
        }

        var leak = Assert.Single(verdict.Growing);
        Assert.Equal("leaking-replica", leak.Series.Subject);
        Assert.InRange(leak.PerHour, LeakMegabytesPerSecond * 3600 / 4, LeakMegabytesPerSecond * 3600 * 2);
        Assert.True(verdict.Findings.Single(f => f.Series.Subject == "steady-replica").Measured);
        Assert.Equal(1, verdict.ExitCode);
        Assert.StartsWith("drift found: leaking-replica working set grows", verdict.Summary, StringComparison.Ordinal);
        Assert.DoesNotContain("steady-replica", verdict.Summary, StringComparison.Ordinal);
    }

    private static LocalProcessSpec Replica(string name, double megabytesPerSecond) =>
        LocalProcessSpec.ForProject(name, "DroneDelivery.Lab.Tests", LeakingProcess.Command, megabytesPerSecond.ToString(CultureInfo.InvariantCulture)) with
        {
            IsReadyLine = line => line == LeakingProcess.ReadyLine,
        };
}
