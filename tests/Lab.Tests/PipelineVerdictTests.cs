using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Tests;

/// <summary>Scenario B's B4 verdicts: what counts as the prefetch-and-lock effect in each mode.</summary>
public sealed class PipelineVerdictTests : IDisposable
{
    private readonly string _chart = Directory.CreateTempSubdirectory("chart-").FullName;

    public void Dispose() => Directory.Delete(_chart, recursive: true);

    [Fact]
    public void Without_dead_letters_a_quick_run_notes_it_and_a_full_run_fails_it()
    {
        var results = B4(incoming: 6080, outgoing: 7877, lockLost: 1800, deadLettered: 0);

        var quick = Verdict(results, LabMode.Quick, "messages dead-lettered");
        var full = Verdict(results, LabMode.Full, "messages dead-lettered");

        Assert.False(quick.Passed);
        Assert.False(quick.Required);
        Assert.False(full.Passed);
        Assert.True(full.Required);
    }

    [Theory]
    [InlineData(1800, true)]
    [InlineData(304, true)]
    [InlineData(303, false)]
    [InlineData(1, false)]
    public void Lock_lost_settlements_must_reach_five_percent_of_the_incoming_messages(long lockLost, bool passed)
    {
        var verdict = Verdict(B4(incoming: 6080, outgoing: 7000, lockLost: lockLost, deadLettered: 10), LabMode.Quick, "lock-lost");

        Assert.Equal(passed, verdict.Passed);
        Assert.True(verdict.Required);
    }

    private Dictionary<string, StepResult> B4(long incoming, long outgoing, long lockLost, long deadLettered)
    {
        var empty = new Series("empty", []);
        var result = FakeStepResults.For(FakeStepResults.Catalog(_chart, "B4")["B4"]) with
        {
            Pipeline = new PipelineFigures(incoming, outgoing, incoming, 0, deadLettered, lockLost, 0, 0, 0, 80, empty, empty, empty, empty),
        };
        return new(StringComparer.OrdinalIgnoreCase) { ["B4"] = result };
    }

    private static Verdict Verdict(Dictionary<string, StepResult> results, LabMode mode, string expectation) =>
        Assert.Single(new PipelineScenario().Verdicts(results, mode), v => v.Expectation.StartsWith(expectation, StringComparison.Ordinal));
}
