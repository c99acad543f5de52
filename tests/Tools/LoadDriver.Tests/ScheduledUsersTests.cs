using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// Arrivals from users on a schedule (<see cref="OpenLoad.RatePerUser"/>): the schedule does not slow
/// down with the target, but each user has one request outstanding at a time, and an arrival due while
/// every user is busy is missed.
/// </summary>
public sealed class ScheduledUsersTests
{
    [Fact]
    public void The_users_follow_the_rate_and_the_rate_the_users()
    {
        var shape = OpenLoad.Users(1, 40, 2.5, TimeSpan.FromSeconds(80));

        Assert.Equal(2.5, shape.RateFrom);
        Assert.Equal(100, shape.RateTo);
        Assert.Equal(1, shape.UsersAt(TimeSpan.Zero));
        Assert.Equal(21, shape.UsersAt(TimeSpan.FromSeconds(40)));
        Assert.Equal(40, shape.UsersAt(TimeSpan.FromSeconds(79.9)));
        Assert.Null(OpenLoad.Constant(10, TimeSpan.FromSeconds(1)).UsersAt(TimeSpan.Zero));
        Assert.Throws<ArgumentException>(() => (shape with { RatePerUser = 0 }).Validate());
    }

    [Fact]
    public async Task No_more_requests_are_in_flight_than_there_are_users_and_the_schedule_does_not_shrink()
    {
        await using var server = await RecordingServer.StartAsync();
        // Every response waits until four requests are in hand at once: without users the schedule's
        // ~150 requests would all be outstanding together.
        server.HoldUntilConcurrent = 4;
        var shape = OpenLoad.Users(1, 4, 50, TimeSpan.FromSeconds(1)) with { Hold = TimeSpan.FromSeconds(1) };

        var result = await LoadRunner.RunAsync(Plan(server, shape, new HttpSettings()));

        Assert.Equal(4, server.MaxConcurrent);
        Assert.Equal((long)Math.Ceiling(shape.ArrivalsBy(shape.Duration) - 1e-9), result.Totals.Sent + result.Totals.Unsent);
        Assert.Equal(result.Totals.Sent, result.Totals.Successes);
        Assert.Contains(result.TimeSeries, s => s.ActiveUsers == 4);
    }

    [Fact]
    public async Task An_arrival_due_while_every_user_waits_is_missed_not_queued()
    {
        await using var server = await RecordingServer.StartAsync();
        server.Delay = TimeSpan.FromSeconds(1);
        // Two users asking 10 invoices a second each for 2 s, from a target that takes a second to answer.
        var shape = OpenLoad.Users(2, 2, 10, TimeSpan.Zero) with { Hold = TimeSpan.FromSeconds(2) };

        var result = await LoadRunner.RunAsync(Plan(server, shape, new HttpSettings()));

        // Each user sends at most once a second; everything else the schedule asked for is counted as unsent.
        Assert.InRange(result.Totals.Sent, 2, 6);
        Assert.Equal(40, result.Totals.Sent + result.Totals.Unsent);
        Assert.Equal(result.Totals.Sent, server.Requests.Count);
        Assert.Equal(2, server.MaxConcurrent);
        // A missed arrival is not a request queued behind the busy users: what was sent went out when it was due.
        Assert.NotNull(result.SendLag);
        Assert.True(result.SendLag.GetValueAtPercentile(50) < 500_000, $"send lag p50 {result.SendLag.GetValueAtPercentile(50)} µs");
    }

    private static LoadTestPlan Plan(RecordingServer server, LoadShape shape, HttpSettings http) => new()
    {
        Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = server.BaseUri, Year = 2025 }),
        Shape = shape,
        Http = http,
    };
}
