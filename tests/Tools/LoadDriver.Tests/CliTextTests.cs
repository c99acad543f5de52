using DroneDelivery.LoadDriver.Cli;

namespace DroneDelivery.LoadDriver.Tests;

public class CliTextTests
{
    [Theory]
    [InlineData("500ms", 0.5)]
    [InlineData("30s", 30)]
    [InlineData("8m", 480)]
    [InlineData("1h", 3600)]
    [InlineData("1m30s", 90)]
    [InlineData("0.25s", 0.25)]
    [InlineData("0", 0)]
    [InlineData("00:02:00", 120)]
    public void Durations_are_read_from_numbers_with_units(string text, double seconds)
    {
        Assert.True(CliText.TryParseDuration(text, out var duration, out var error), error);
        Assert.Equal(TimeSpan.FromSeconds(seconds), duration);
    }

    [Theory]
    [InlineData("8")]
    [InlineData("8 minutes")]
    [InlineData("m8")]
    [InlineData("-5s")]
    [InlineData("1:2:3:4")]
    [InlineData("")]
    public void Malformed_durations_are_rejected_with_an_example(string text)
    {
        Assert.False(CliText.TryParseDuration(text, out _, out var error));
        Assert.Contains("not a duration", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("90s")]
    [InlineData("1m30s")]
    [InlineData("250ms")]
    [InlineData("2h5m")]
    public void Formatted_durations_read_back_the_same(string text)
    {
        Assert.True(CliText.TryParseDuration(text, out var duration, out _));
        Assert.True(CliText.TryParseDuration(CliText.FormatDuration(duration), out var again, out _));
        Assert.Equal(duration, again);
    }

    [Fact]
    public void A_step_spec_gives_users_ramp_and_hold()
    {
        Assert.True(CliText.TryParseStep("1:40:8m", out var step, out _));
        Assert.Equal(new ClosedLoad(1, 40, TimeSpan.FromMinutes(8)), step);

        Assert.True(CliText.TryParseStep("10:10:0:2m", out var constant, out _));
        Assert.Equal(ClosedLoad.Constant(10, TimeSpan.FromMinutes(2)), constant);
    }

    [Theory]
    [InlineData("1:40", "FROM:TO:RAMP")]
    [InlineData("1:x:8m", "'x' is not a whole number of users to")]
    [InlineData("1:40:8", "not a duration")]
    public void Bad_step_specs_say_what_is_wrong(string text, string message)
    {
        Assert.False(CliText.TryParseStep(text, out _, out var error));
        Assert.Contains(message, error, StringComparison.Ordinal);
    }

    [Fact]
    public void A_rate_spec_is_constant_with_two_parts_and_ramping_with_more()
    {
        Assert.True(CliText.TryParseRate("50:2m", out var constant, out _));
        Assert.Equal(OpenLoad.Constant(50, TimeSpan.FromMinutes(2)), constant);

        Assert.True(CliText.TryParseRate("10:200:2m:1m", out var ramp, out _));
        Assert.Equal(new OpenLoad(10, 200, TimeSpan.FromMinutes(2)) { Hold = TimeSpan.FromMinutes(1) }, ramp);

        Assert.True(CliText.TryParseRate("0.5:30s", out var slow, out _));
        Assert.Equal(0.5, slow!.RateFrom);
    }

    [Theory]
    [InlineData("50")]
    [InlineData("fast:1m")]
    [InlineData("1:2:3:4:5")]
    public void Bad_rate_specs_are_rejected(string text)
    {
        Assert.False(CliText.TryParseRate(text, out _, out var error));
        Assert.NotEmpty(error);
    }

    [Fact]
    public void Months_are_one_month_or_a_range()
    {
        Assert.True(CliText.TryParseMonths("3", out var single, out _));
        Assert.Equal((3, 3), single);
        Assert.True(CliText.TryParseMonths("1-12", out var year, out _));
        Assert.Equal((1, 12), year);
        Assert.False(CliText.TryParseMonths("jan", out _, out var error));
        Assert.Contains("not a month range", error, StringComparison.Ordinal);
    }
}
