using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>Scenario A's verdicts, each checked just on both sides of its threshold.</summary>
public sealed class GatewayVerdictTests : IDisposable
{
    private static readonly Series Empty = new("empty", []);
    private readonly string _chart = Directory.CreateTempSubdirectory("chart-").FullName;
    private readonly StepCatalog _catalog;

    public GatewayVerdictTests() => _catalog = FakeStepResults.Catalog(_chart, "A1", "A2", "A3", "A4");

    public void Dispose() => Directory.Delete(_chart, recursive: true);

    [Theory]
    [InlineData(90, true)]
    [InlineData(89, false)]
    [InlineData(0, false)]
    public void A1_throttles_at_least_one_percent_of_its_Cosmos_calls(long throttled, bool passed)
    {
        // 1,000 invoices × 9 calls = 9,000 calls.
        var verdict = Single(Verdicts(Step("A1", throttled: throttled, operations: 1000, calls: 9)), "A1", "Cosmos DB throttles");

        Assert.Equal(passed, verdict.Passed);
        Assert.True(verdict.Required);
    }

    [Theory]
    [InlineData(0, true)]
    [InlineData(1, false)]
    public void A2_does_not_throttle(long throttled, bool passed)
    {
        Assert.Equal(passed, Single(Verdicts(Step("A2", throttled: throttled)), "A2", "no 429s").Passed);
    }

    [Theory]
    [InlineData(7.5, true)]
    [InlineData(10.5, true)]
    [InlineData(7.4, false)]
    [InlineData(10.6, false)]
    public void A2_makes_about_nine_calls_per_invoice(double calls, bool passed)
    {
        Assert.Equal(passed, Single(Verdicts(Step("A2", calls: calls)), "A2", "Cosmos calls per operation").Passed);
    }

    [Theory]
    [InlineData(235, true)]
    [InlineData(245, false)]
    public void A3_latency_is_at_most_60_percent_of_A2_s(double latencyMs, bool passed)
    {
        var verdict = Single(Verdicts(Step("A2", latencyMs: 400), Step("A3", latencyMs: latencyMs)), "A3", "parallel queries");

        Assert.Equal(passed, verdict.Passed);
        Assert.True(verdict.Required);
    }

    [Theory]
    [InlineData(2410, true)]
    [InlineData(2390, false)]
    public void A3_throughput_is_at_least_1_2_times_A2_s(long successes, bool passed)
    {
        // 100 s of load each: A2 20 req/s, A3 24.1 or 23.9 req/s.
        var verdict = Single(Verdicts(Step("A2", successes: 2000), Step("A3", successes: successes)), "A3", "throughput at least");

        Assert.Equal(passed, verdict.Passed);
    }

    [Theory]
    [InlineData(5.79, true)]
    [InlineData(2.4167, true)]
    [InlineData(5.92, false)]
    [InlineData(2.39, false)]
    public void A4_needs_5_to_12_times_fewer_RU_per_invoice_than_A3(double ru, bool passed)
    {
        var verdict = Single(Verdicts(Step("A3", ru: 29), Step("A4", ru: ru, calls: 1)), "A4", "RU per operation");

        Assert.Equal(passed, verdict.Passed);
    }

    [Theory]
    [InlineData(0.8, true)]
    [InlineData(1.5, true)]
    [InlineData(0.79, false)]
    [InlineData(1.51, false)]
    public void A4_makes_one_call_per_invoice(double calls, bool passed)
    {
        Assert.Equal(passed, Single(Verdicts(Step("A3", ru: 29), Step("A4", ru: 3.4, calls: calls)), "A4", "one Cosmos call").Passed);
    }

    [Theory]
    [InlineData(0, true)]
    [InlineData(1, false)]
    public void A4_does_not_throttle_in_any_container(long throttled, bool passed)
    {
        Assert.Equal(passed, Single(Verdicts(Step("A3", ru: 29), Step("A4", ru: 3.4, calls: 1, throttled: throttled)), "A4", "no 429s").Passed);
    }

    [Theory]
    [InlineData(2200, true)]
    [InlineData(2190, false)]
    public void A4_throughput_is_at_least_2_2_times_A1_s(long successes, bool passed)
    {
        // 100 s of load each: A1 10 req/s, A4 22 or 21.9 req/s.
        var verdict = Single(Verdicts(Step("A1", successes: 1000, throttled: 500), Step("A4", ru: 3.4, calls: 1, successes: successes)), "A4", "throughput at least");

        Assert.Equal(passed, verdict.Passed);
    }

    [Fact]
    public void Steps_at_different_scales_are_compared_at_the_articles_speed()
    {
        // A1 at scale 0.5 served 10 req/s (20 at the article's speed); A4 at scale 0.25 served 11 (44): 2.2×.
        var a1 = Step("A1", successes: 1000, throttled: 500) with { Scale = 0.5 };
        var a4 = Step("A4", ru: 3.4, calls: 1, successes: 1100) with { Scale = 0.25 };

        var verdict = Single(Verdicts(a1, a4), "A4", "throughput at least");

        Assert.True(verdict.Passed, verdict.Measured);
        Assert.Contains("44.0 vs 20.0 req/s", verdict.Measured, StringComparison.Ordinal);
        Assert.Contains("article-equivalent at scales 0.25 and 0.5", verdict.Measured, StringComparison.Ordinal);
        Assert.Equal(["A1"], verdict.ComparedWith);
    }

    [Fact]
    public void Without_A1_in_the_run_A4_s_gain_over_it_is_not_judged()
    {
        Assert.DoesNotContain(Verdicts(Step("A3", ru: 29), Step("A4", ru: 3.4, calls: 1)), v => v.Expectation.StartsWith("throughput at least", StringComparison.Ordinal) && v.StepId == "A4");
    }

    private StepResult Step(string id, long throttled = 0, long operations = 1000, double calls = 9, double ru = 29, double latencyMs = 100, long successes = 1000) =>
        FakeStepResults.For(_catalog[id], loadSeconds: 100, successes: successes, latencyMs: latencyMs) with
        {
            Cosmos = new CosmosFigures("utilization", throttled, operations, ru, calls, 100, [], Empty),
        };

    private static IReadOnlyList<Verdict> Verdicts(params StepResult[] steps) =>
        new GatewayScenario().Verdicts(steps.ToDictionary(s => s.Step.Id, StringComparer.OrdinalIgnoreCase), LabMode.Quick);

    private static Verdict Single(IReadOnlyList<Verdict> verdicts, string step, string expectation) =>
        Assert.Single(verdicts, v => v.StepId == step && v.Expectation.StartsWith(expectation, StringComparison.Ordinal));
}
