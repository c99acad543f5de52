using DroneDelivery.Lab.Scenarios;
using Xunit;

namespace DroneDelivery.Lab.Tests;

public sealed class WarmUpTests
{
    [Theory]
    [InlineData(new[] { 900.0, 650.0 }, false)] // still falling: the system is warming
    [InlineData(new[] { 846.0, 700.0, 590.0 }, false)] // 16 % faster: still warming
    [InlineData(new[] { 790.0, 650.0, 600.0 }, true)] // within 15 % of the round before
    [InlineData(new[] { 570.0, 600.0 }, true)] // a warm system settles in two rounds, the model's jitter included
    [InlineData(new[] { 570.0, 700.0 }, false)] // a jump (a stall, a throttled burst) is not settled either
    [InlineData(new[] { 400.0, 460.0 }, true)] // the tolerance is relative to the earlier round
    [InlineData(new[] { 400.0, 461.0 }, false)]
    [InlineData(new[] { 80.0, 95.0 }, true)] // at short latencies a warm round's jitter (up to 15 ms) is settled
    [InlineData(new[] { 80.0, 96.0 }, false)]
    [InlineData(new[] { 250.0, 110.0 }, false)] // a cold service costs far more than the floor
    public void A_warm_up_has_settled_when_two_rounds_in_a_row_agree_within_fifteen_percent_or_15_ms(double[] medians, bool settled) =>
        Assert.Equal(settled, WarmUp.Settled(medians));

    [Fact]
    public void At_a_smaller_scale_the_floor_is_the_models_time_at_that_scale() =>
        // 15 ms at scale 1 is 30 ms at scale 0.5, where every modelled delay is twice as long.
        Assert.True(WarmUp.Settled([80, 110], new ModelScale(0.5)) && !WarmUp.Settled([80, 110]));

    [Fact]
    public void One_round_is_never_settled() => Assert.False(WarmUp.Settled([600]));
}
