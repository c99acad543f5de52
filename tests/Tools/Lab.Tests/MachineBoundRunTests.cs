using System.Text.Json;
using System.Text.RegularExpressions;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A step that asks more of the machine than its CPU budget is named machine-bound, and its verdicts are shown but
/// not counted: a what-if at five times the model's scale (A4's users asking 580 invoices/s, some 4 cores' worth of CPU
/// on any machine this suite runs on).
/// </summary>
[Trait("Category", "LabFaults")]
public sealed class MachineBoundRunTests
{
    /// <summary>How long this test may take (see <see cref="LabFaults.SessionTimeout"/>): one quick step, and starting and stopping a system.</summary>
    internal static readonly TimeSpan Bound = TimeSpan.FromMinutes(4);

    [Fact]
    public async Task A_step_beyond_the_budget_is_named_machine_bound_and_its_verdicts_are_not_counted()
    {
        var output = Directory.CreateTempSubdirectory("dronedelivery-lab-").FullName;
        try
        {
            using var lab = new LabProcess("run", "A", "--quick", "--steps", "A4", "--scale", "5", "--no-remeasure", "--output", output);

            var exitCode = await lab.ExitCodeAsync(Bound);

            Assert.True(exitCode == 5, $"exit code {exitCode}:{Environment.NewLine}{lab.Output}");
            var step = JsonDocument.Parse(File.ReadAllText(Path.Combine(output, "results.json"))).RootElement
                .GetProperty("scenarios")[0].GetProperty("steps")[0];
            Assert.True(step.GetProperty("machineBound").GetBoolean());
            Assert.True(step.GetProperty("systemCpuPeakCores").GetDouble() > step.GetProperty("cpuBudgetCores").GetDouble() || step.GetProperty("threadPoolSaturation").ValueKind == JsonValueKind.String);
            Assert.Contains("MACHINE-BOUND", lab.Output, StringComparison.Ordinal);
            var verdicts = lab.Output.Split('\n').Where(l => Regex.IsMatch(l, @"^\s+(PASS|FAIL|note|skip)\s+A4\s")).ToList();
            Assert.NotEmpty(verdicts);
            Assert.All(verdicts, v => Assert.Matches(@"^\s+skip\s+A4\s", v));
            Assert.Empty(lab.Leftovers());
        }
        finally
        {
            Directory.Delete(output, recursive: true);
        }
    }
}
