namespace DroneDelivery.LoadDriver.Tests;

public class LoadShapeTests
{
    [Fact]
    public void A_step_load_spends_an_equal_share_of_the_ramp_at_every_user_count()
    {
        // The case study's step load: 1 to 40 users over 8 minutes, 12 s at each count.
        var shape = new ClosedLoad(1, 40, TimeSpan.FromMinutes(8));

        Assert.Equal(1, shape.UsersAt(TimeSpan.Zero));
        Assert.Equal(1, shape.UsersAt(TimeSpan.FromSeconds(11.9)));
        Assert.Equal(2, shape.UsersAt(TimeSpan.FromSeconds(12)));
        Assert.Equal(20, shape.UsersAt(TimeSpan.FromSeconds(239)));
        Assert.Equal(40, shape.UsersAt(TimeSpan.FromSeconds(468)));
        Assert.Equal(40, shape.UsersAt(TimeSpan.FromMinutes(8)));
        var counts = Enumerable.Range(0, 480).Select(s => shape.UsersAt(TimeSpan.FromSeconds(s + 0.5))).ToList();
        Assert.All(Enumerable.Range(1, 40), users => Assert.Equal(12, counts.Count(c => c == users)));
    }

    [Fact]
    public void A_step_load_can_ramp_down()
    {
        var shape = new ClosedLoad(4, 1, TimeSpan.FromSeconds(4)) { Hold = TimeSpan.FromSeconds(1) };

        Assert.Equal(4, shape.UsersAt(TimeSpan.FromSeconds(0.5)));
        Assert.Equal(3, shape.UsersAt(TimeSpan.FromSeconds(1.5)));
        Assert.Equal(1, shape.UsersAt(TimeSpan.FromSeconds(3.5)));
        Assert.Equal(1, shape.UsersAt(TimeSpan.FromSeconds(4.5)));
        Assert.Equal(TimeSpan.FromSeconds(5), shape.Duration);
    }

    [Fact]
    public void A_constant_rate_schedules_requests_at_equal_intervals()
    {
        var shape = OpenLoad.Constant(50, TimeSpan.FromSeconds(2));

        Assert.Equal(TimeSpan.Zero, shape.IntendedOffset(0));
        Assert.Equal(0.02, shape.IntendedOffset(1)!.Value.TotalSeconds, 6);
        Assert.Equal(1.98, shape.IntendedOffset(99)!.Value.TotalSeconds, 6);
        Assert.Null(shape.IntendedOffset(100));
        Assert.Equal(100, shape.ArrivalsBy(TimeSpan.FromSeconds(2)), 9);
    }

    [Fact]
    public void A_ramping_rate_sends_the_integral_of_the_rate()
    {
        // 10 → 30 req/s over 10 s is 200 requests, then 30 req/s for 2 s is 60 more.
        var shape = new OpenLoad(10, 30, TimeSpan.FromSeconds(10)) { Hold = TimeSpan.FromSeconds(2) };

        var offsets = new List<double>();
        for (long i = 0; shape.IntendedOffset(i) is { } offset; i++)
        {
            offsets.Add(offset.TotalSeconds);
        }

        Assert.Equal(260, offsets.Count);
        Assert.True(offsets.Zip(offsets.Skip(1)).All(pair => pair.Second > pair.First));
        Assert.Equal(200, offsets.Count(t => t < 10));
        // Each request is scheduled where the integral of the rate reaches its sequence number.
        for (var i = 0; i < offsets.Count; i += 17)
        {
            Assert.Equal(i, shape.ArrivalsBy(TimeSpan.FromSeconds(offsets[i])), 3);
        }

        // Gaps shrink as the rate grows: ~100 ms at the start, ~33 ms at 30 req/s.
        Assert.InRange(offsets[1] - offsets[0], 0.095, 0.1);
        Assert.InRange(offsets[^1] - offsets[^2], 0.0333, 0.0334);
    }

    [Fact]
    public void A_rate_can_ramp_from_zero_and_down_to_zero()
    {
        var up = new OpenLoad(0, 20, TimeSpan.FromSeconds(2));
        var down = new OpenLoad(20, 0, TimeSpan.FromSeconds(2));

        Assert.Equal(20, CountArrivals(up));
        Assert.Equal(20, CountArrivals(down));
        Assert.Equal(TimeSpan.Zero, up.IntendedOffset(0));
        Assert.Equal(Math.Sqrt(0.2), up.IntendedOffset(1)!.Value.TotalSeconds, 6); // 5 t^2 = 1
    }

    [Theory]
    [InlineData(-1, 5, 10, 0, "between 0 and")]
    [InlineData(0, 0, 10, 0, "At least one user")]
    [InlineData(1, 5, 0, 0, "longer than zero")]
    [InlineData(1, 20_000, 10, 0, "between 0 and")]
    [InlineData(1, 5, 90_000, 0, "at most 24 hours")]
    public void Invalid_step_loads_are_rejected_with_the_reason(int from, int to, int rampSeconds, int holdSeconds, string reason)
    {
        var shape = new ClosedLoad(from, to, TimeSpan.FromSeconds(rampSeconds)) { Hold = TimeSpan.FromSeconds(holdSeconds) };

        var error = Assert.Throws<ArgumentException>(shape.Validate);
        Assert.Contains(reason, error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(0, 0, 10, "At least one of the rates")]
    [InlineData(-5, 10, 10, "between 0 and")]
    [InlineData(double.NaN, 10, 10, "between 0 and")]
    [InlineData(10, 20, 0, "needs a ramp")]
    [InlineData(200_000, 10, 10, "between 0 and")]
    public void Invalid_rates_are_rejected_with_the_reason(double from, double to, int rampSeconds, string reason)
    {
        var shape = new OpenLoad(from, to, TimeSpan.FromSeconds(rampSeconds)) { Hold = TimeSpan.FromSeconds(1) };

        var error = Assert.Throws<ArgumentException>(shape.Validate);
        Assert.Contains(reason, error.Message, StringComparison.Ordinal);
    }

    private static int CountArrivals(OpenLoad shape)
    {
        var count = 0;
        while (shape.IntendedOffset(count) is not null)
        {
            count++;
        }

        return count;
    }
}
