using DroneDelivery.Lab.Scenarios;
using Xunit;

namespace DroneDelivery.Lab.Tests;

public sealed class WarmUpTests
{
    [Theory]
    [InlineData(new[] { 790.0, 650.0 }, false)] // still falling: the system is warming
    [InlineData(new[] { 846.0, 722.0, 662.0 }, false)] // 8 % faster: still warming
    [InlineData(new[] { 790.0, 650.0, 630.0 }, true)] // within 5 % of the round before
    [InlineData(new[] { 570.0, 575.0 }, true)] // a warm system settles in two rounds
    [InlineData(new[] { 570.0, 700.0 }, false)] // a jump (a stall, a throttled burst) is not settled either
    [InlineData(new[] { 400.0, 420.0 }, true)] // the tolerance is relative to the earlier round
    [InlineData(new[] { 400.0, 421.0 }, false)]
    [InlineData(new[] { 117.0, 128.0 }, true)] // at short latencies a warm round's jitter (up to 15 ms) is settled
    [InlineData(new[] { 100.0, 115.0 }, true)]
    [InlineData(new[] { 100.0, 116.0 }, false)]
    [InlineData(new[] { 250.0, 110.0 }, false)] // a cold service costs far more than the floor
    public void A_warm_up_has_settled_when_two_rounds_in_a_row_agree_within_five_percent_or_15_ms(double[] medians, bool settled) =>
        Assert.Equal(settled, WarmUp.Settled(medians));

    [Fact]
    public void One_round_is_never_settled() => Assert.False(WarmUp.Settled([600]));
}
