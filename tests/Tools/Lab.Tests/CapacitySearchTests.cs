using DroneDelivery.Lab.Scenarios;
using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.Lab.Tests;

/// <summary>The capacity search brackets the knee: up while rates hold, down while they break, then halving the gap.</summary>
public sealed class CapacitySearchTests
{
    private static readonly CapacitySearch Search = new(TimeSpan.FromMilliseconds(250), 500, StartRate: 50, Factor: 2, TimeSpan.FromSeconds(30)) { Precision = 1.15 };

    [Fact]
    public void While_every_rate_holds_the_rate_goes_up_by_the_factor()
    {
        Assert.Equal(200, CapacityRunner.NextRate([Point(50, true), Point(100, true)], Search));
    }

    [Fact]
    public void A_broken_first_rate_lowers_the_rate_instead_of_ending_the_search()
    {
        Assert.Equal(25, CapacityRunner.NextRate([Point(50, false)], Search));
        Assert.Equal(12.5, CapacityRunner.NextRate([Point(50, false), Point(25, false)], Search));
    }

    [Fact]
    public void Once_bracketed_the_search_halves_the_gap_until_it_is_within_the_precision()
    {
        Assert.Equal(150, CapacityRunner.NextRate([Point(50, true), Point(100, true), Point(200, false)], Search));
        Assert.Equal(125, CapacityRunner.NextRate([Point(100, true), Point(200, false), Point(150, false)], Search));
        Assert.Null(CapacityRunner.NextRate([Point(100, true), Point(112, false)], Search));
    }

    [Fact]
    public void Going_down_it_gives_up_below_the_lowest_rate()
    {
        Assert.Null(CapacityRunner.NextRate([Point(0.8, false)], Search));
    }

    [Fact]
    public void Each_rate_is_held_long_enough_for_a_stable_p99()
    {
        Assert.Equal(TimeSpan.FromSeconds(30), CapacityRunner.HoldFor(200, TimeSpan.FromSeconds(30)));
        Assert.Equal(TimeSpan.FromSeconds(100), CapacityRunner.HoldFor(10, TimeSpan.FromSeconds(30)));
        Assert.Equal(TimeSpan.FromSeconds(180), CapacityRunner.HoldFor(1, TimeSpan.FromSeconds(30)));
    }

    [Fact]
    public void The_fleet_for_a_target_has_one_spare_instance()
    {
        Assert.Equal(21, CapacityRunner.InstancesNeeded(500, 25));
        Assert.Equal(5, CapacityRunner.InstancesNeeded(1000, 250.5));
    }

    [Fact]
    public void End_to_end_counts_only_what_completed_while_the_arrivals_lasted()
    {
        // 30 s of 400 accepted/s with the workflow completing 70/s, then a drain of 150 s in which the
        // load runner follows the rest to their end: 12,000 completions in all, but 70/s end to end.
        var series = Enumerable.Range(0, 30).Select(second => Sample(second, successes: 400, completions: 70))
            .Concat(Enumerable.Range(30, 150).Select(second => Sample(second, successes: 0, completions: 66)))
            .ToList();

        var (rate, backlog) = CapacityRunner.EndToEnd(series, TimeSpan.FromSeconds(30.002));

        Assert.Equal(70, rate);
        Assert.Equal(30 * (400 - 70), backlog);
    }

    [Fact]
    public void A_pipeline_that_keeps_up_has_no_backlog_when_the_arrivals_stop()
    {
        var series = Enumerable.Range(0, 30).Select(second => Sample(second, successes: 50, completions: second == 0 ? 45 : 50))
            .Append(Sample(30, successes: 0, completions: 5))
            .ToList();

        var (rate, backlog) = CapacityRunner.EndToEnd(series, TimeSpan.FromSeconds(30));

        Assert.Equal(1495 / 30.0, rate, precision: 9);
        Assert.Equal(5, backlog);
    }

    [Theory]
    [InlineData(1.0, "--factor")]
    [InlineData(0.1, "--start-rate")]
    public void A_search_that_cannot_run_is_refused_naming_the_option(double value, string option)
    {
        var search = option == "--factor" ? Search with { Factor = value } : Search with { StartRate = value };

        Assert.Contains(option, search.Problem(), StringComparison.Ordinal);
        Assert.Null(Search.Problem());
    }

    private static SecondSample Sample(int second, long successes, long completions) =>
        new(second, 1, successes, successes, 0, null, 400, 0, 10, 20, 30, completions);

    private static CapacityPoint Point(double rate, bool holds) =>
        new(rate, rate, 1, holds ? 10 : 900, 0, 50, 60, new Dictionary<string, double>(), null, true, holds, 0, string.Empty);
}

public sealed class CapacityCosmosTests
{
    private static readonly DateTimeOffset Start = new(2026, 11, 27, 3, 0, 0, TimeSpan.Zero);

    [Fact]
    public void Each_containers_calls_429s_and_RU_per_second_are_the_difference_over_the_window_busiest_first()
    {
        var before = Snapshot(Start, Container("packages", 400, charge: 1_000, throttled: 5, requests: 100), Container("deliveries", 1000, charge: 50, throttled: 0, requests: 10));
        var after = Snapshot(
            Start.AddSeconds(30),
            Container("packages", 400, charge: 13_000, throttled: 905, requests: 3_100),
            Container("deliveries", 1000, charge: 3_050, throttled: 0, requests: 4_010),
            Container("utilization", 900, charge: 0, throttled: 0, requests: 0));

        var loads = ContainerLoad.Between(before, after, TimeSpan.FromSeconds(30));

        Assert.Equal(["deliveries", "packages"], loads.Select(l => l.Container));
        var packages = loads[1];
        Assert.Equal((3_000L, 900L, 400.0, 400.0), (packages.Requests, packages.Throttled, packages.RequestUnitsPerSecond, packages.ProvisionedThroughput));
        Assert.Equal(0.3, packages.ThrottledShare, 3);
        Assert.Equal((4_000L, 0L, 100.0), (loads[0].Requests, loads[0].Throttled, loads[0].RequestUnitsPerSecond));
    }

    [Fact]
    public void A_container_created_during_the_window_counts_from_zero()
    {
        var loads = ContainerLoad.Between(Snapshot(Start), Snapshot(Start.AddSeconds(10), Container("packages", 400, charge: 500, throttled: 2, requests: 50)), TimeSpan.FromSeconds(10));

        Assert.Equal(new ContainerLoad("packages", 50, 2, 50, 400), Assert.Single(loads));
    }

    [Fact]
    public void The_report_lists_each_rates_containers_and_leaves_the_table_out_without_cosmos_figures()
    {
        var point = new CapacityPoint(62.5, 62.5, 10, 137, 0, 50, 60, new Dictionary<string, double>(), null, true, true, 0, string.Empty)
        {
            Cosmos = [new ContainerLoad("packages", 3_000, 900, 400, 400)],
        };
        var md = new System.Text.StringBuilder();

        CapacityRunner.AppendCosmos(md, [point]);
        Assert.Contains("| 62.5 | packages | 3,000 | 900 (30.0 %) | 400 | 400 |", md.ToString(), StringComparison.Ordinal);

        var empty = new System.Text.StringBuilder();
        CapacityRunner.AppendCosmos(empty, [point with { Cosmos = [] }]);
        Assert.Equal(string.Empty, empty.ToString());
    }

    private static Emulators.CosmosDb.Metrics.EmulatorMetricsSnapshot Snapshot(DateTimeOffset at, params Emulators.CosmosDb.Metrics.ContainerMetricsSnapshot[] containers) =>
        new(at, 0, containers);

    private static Emulators.CosmosDb.Metrics.ContainerMetricsSnapshot Container(string id, double provisioned, double charge, long throttled, long requests) =>
        new("invoicing", id, provisioned, false, 1, charge, throttled,
            [new("0", "", "FF", provisioned, charge, throttled, requests, 0, 0, [], provisioned)]);
}
