using DroneDelivery.Lab.Scenarios;

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

    [Theory]
    [InlineData(1.0, "--factor")]
    [InlineData(0.1, "--start-rate")]
    public void A_search_that_cannot_run_is_refused_naming_the_option(double value, string option)
    {
        var search = option == "--factor" ? Search with { Factor = value } : Search with { StartRate = value };

        Assert.Contains(option, search.Problem(), StringComparison.Ordinal);
        Assert.Null(Search.Problem());
    }

    private static CapacityPoint Point(double rate, bool holds) =>
        new(rate, rate, 1, holds ? 10 : 900, 0, 50, 60, new Dictionary<string, double>(), null, true, holds, 0, string.Empty);
}
