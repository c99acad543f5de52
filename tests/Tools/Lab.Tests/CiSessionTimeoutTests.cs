using System.Globalization;
using System.Text.RegularExpressions;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The lab's end-to-end tests bound their own runs by the test session's time-out, so that a run too slow
/// for the session fails with its output instead of being cut off with none: the figures they assume
/// must be the ones .ci/run passes.
/// </summary>
public sealed partial class CiSessionTimeoutTests
{
    [Theory]
    [InlineData("Lab")]
    [InlineData("LabFaults")]
    public void The_session_time_outs_the_tests_assume_are_the_ones_ci_passes(string category)
    {
        var script = File.ReadAllText(RepositoryLayout.InRepository(".ci", "run"));
        var match = Invocation().Matches(script).SingleOrDefault(m => m.Groups["category"].Value == category);
        Assert.True(match is not null, $".ci/run runs no test session with --filter \"Category={category}\".");

        var expected = category == "Lab" ? QuickLabRun.SessionTimeout : LabFaults.SessionTimeout;
        Assert.Equal(expected, TimeSpan.FromMilliseconds(long.Parse(match.Groups["timeout"].Value, CultureInfo.InvariantCulture)));
    }

    [GeneratedRegex(@"--filter ""Category=(?<category>\w+)""[^\n]*(?:\\\n[^\n]*)*?TestSessionTimeout=(?<timeout>\d+)")]
    private static partial Regex Invocation();
}
