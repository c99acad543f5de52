using System.Diagnostics;
using System.Text.RegularExpressions;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A lab started by a test ends when the test host ends, however it ends: the test host here is killed
/// with SIGKILL (no cleanup code of its own runs), and the lab with every process it started must go.
/// </summary>
[Trait("Category", "LabFaults")]
public sealed partial class LabHostKilledTests
{
    /// <summary>How long this test may take; <see cref="QuickLabRun"/> keeps the lab session within .ci/run's time-out with it.</summary>
    internal static readonly TimeSpan Bound = TimeSpan.FromMinutes(1.5);

    [Fact]
    public async Task Killing_the_test_host_ends_the_lab_and_everything_it_started()
    {
        var output = Directory.CreateTempSubdirectory("dronedelivery-lab-").FullName;
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var argument in new[] { typeof(LabHostProgram).Assembly.Location, LabHostProgram.Command, "run", "B", "--quick", "--steps", "B5", "--output", output })
        {
            start.ArgumentList.Add(argument);
        }

        using var host = Process.Start(start)!;
        string? marker = null;
        try
        {
            var first = await host.StandardOutput.ReadLineAsync().WaitAsync(Bound / 4);
            var match = HostLine().Match(first ?? string.Empty);
            Assert.True(match.Success, $"the host printed '{first}'");
            marker = match.Groups["marker"].Value;
            var labPid = int.Parse(match.Groups["pid"].Value, System.Globalization.CultureInfo.InvariantCulture);

            // The lab has started processes of its own: the emulator, redis-server, services.
            Assert.True(
                await Eventually.TrueAsync(() => LabProcess.Leftovers(marker).Count >= 4, Bound / 4, TimeSpan.FromMilliseconds(200)),
                $"the lab started {LabProcess.Leftovers(marker).Count} processes");
            Assert.Contains(LabProcess.Leftovers(marker), p => p.StartsWith($"{labPid}:", StringComparison.Ordinal));

            host.Kill(); // SIGKILL: nothing of the host's own runs.
            await host.WaitForExitAsync();

            Assert.True(
                await Eventually.TrueAsync(() => LabProcess.Leftovers(marker).Count == 0, Bound / 2, TimeSpan.FromMilliseconds(200)),
                "still running: " + string.Join(Environment.NewLine, LabProcess.Leftovers(marker)));
        }
        finally
        {
            if (!host.HasExited)
            {
                host.Kill(entireProcessTree: true);
            }

            Directory.Delete(output, recursive: true);
        }
    }

    [GeneratedRegex(@"^lab (?<pid>\d+) marker (?<marker>[0-9a-f]+)$")]
    private static partial Regex HostLine();
}
