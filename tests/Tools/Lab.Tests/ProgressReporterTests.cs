using System.Collections.Concurrent;
using DroneDelivery.Lab.Chaos;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.LoadDriver;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;
using Xunit;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The progress lines of the lab's long loads (run, soak, capacity, chaos): one per interval of the injected
/// clock, each with the load's elapsed and planned time, its users or offered rate, the successes per second
/// since the line before, the errors so far and the command's own figure.
/// </summary>
public sealed class ProgressReporterTests
{
    private static readonly TimeSpan Interval = TimeSpan.FromSeconds(10);

    [Fact]
    public void A_soak_prints_a_line_at_each_interval_with_the_rate_since_the_line_before_and_the_errors_so_far()
    {
        var time = new FakeTimeProvider();
        var log = new ConcurrentQueue<string>();
        var options = Options(time, log);
        using var progress = options.Progress("soak");

        progress.Report(Closed(seconds: 9.6, of: 600, users: 20, successes: 192, errors: 1));
        time.Advance(Interval - TimeSpan.FromMilliseconds(1));
        Assert.Empty(log);
        time.Advance(TimeSpan.FromMilliseconds(1));
        Assert.Equal(["  soak   10/600 s: 20 users, 20 ok/s, 1 errors"], log);

        progress.Report(Closed(seconds: 19.6, of: 600, users: 20, successes: 592, errors: 3));
        time.Advance(Interval);
        Assert.Equal("  soak   20/600 s: 20 users, 40 ok/s, 3 errors", log.Last());

        // No newer snapshot: the next interval repeats nothing.
        time.Advance(Interval);
        Assert.Equal(2, log.Count);

        progress.Report(Closed(seconds: 601, of: 600, users: 0, successes: 650, errors: 3) with { Draining = true });
        time.Advance(Interval);
        Assert.Equal("  soak  601/600 s: 0 users, 0.1 ok/s, 3 errors (draining)", log.Last());
    }

    [Fact]
    public void A_capacity_rate_shows_the_rate_offered_and_starts_with_its_stage_line()
    {
        var time = new FakeTimeProvider();
        var log = new ConcurrentQueue<string>();
        var search = new CapacitySearch(TimeSpan.FromMilliseconds(250), 1000, 50, 2, TimeSpan.FromSeconds(30)) { MaxRates = 6 };

        log.Enqueue(CapacityRunner.StageLine(3, search, 200));
        using (var progress = Options(time, log).Progress("capacity"))
        {
            progress.Report(Open(seconds: 10, of: 30, rate: 200, successes: 1985, errors: 0));
            time.Advance(Interval);
            progress.Report(Open(seconds: 20, of: 30, rate: 200, successes: 3970, errors: 2));
            time.Advance(Interval);
        }

        // Once the rate's load is over, its reporter writes no more.
        time.Advance(Interval);
        Assert.Equal(
            [
                "capacity: rate 3 of at most 6, 200 req/s for 30 s",
                "  capacity   10/30 s: 200 req/s offered, 198.5 ok/s, 0 errors",
                "  capacity   20/30 s: 200 req/s offered, 198.5 ok/s, 2 errors",
            ],
            log);
        // A low rate is held long enough for 1,000 requests.
        Assert.Equal("capacity: rate 1 of at most 6, 5 req/s for 180 s", CapacityRunner.StageLine(1, search, 5));
    }

    [Fact]
    public void The_interval_is_the_run_s_own()
    {
        var time = new FakeTimeProvider();
        var log = new ConcurrentQueue<string>();
        using var progress = (Options(time, log) with { ProgressInterval = TimeSpan.FromSeconds(30) }).Progress("A1");

        progress.Report(Open(seconds: 12, of: 120, rate: 40, successes: 480, errors: 0));
        time.Advance(Interval * 2);
        Assert.Empty(log);
        time.Advance(Interval);
        Assert.Equal(["  A1   12/120 s: 40 req/s offered, 40 ok/s, 0 errors"], log);
    }

    [Fact]
    public async Task A_chaos_run_counts_the_faults_injected_so_far_on_the_same_clock()
    {
        var time = new FakeTimeProvider();
        var log = new ConcurrentQueue<string>();
        ScheduledFault[] schedule =
        [
            new(TimeSpan.FromSeconds(5), FaultKind.KillWorkflow, TimeSpan.FromSeconds(2)),
            new(TimeSpan.FromSeconds(15), FaultKind.CosmosErrors, TimeSpan.FromSeconds(3)),
        ];
        var counted = new CountingFaultInjector(new NoFaults(), schedule.Length);
        using var progress = Options(time, log).Progress("chaos", counted.Describe);

        var faults = FaultScheduler.RunAsync(schedule, counted, time, log.Enqueue, CancellationToken.None);
        // Each step waits for the scheduler's log line, so the clock moves on only once the fault has started or ended.
        time.Advance(TimeSpan.FromSeconds(5));
        await LoggedAsync(log, "fault KillWorkflow at 5");
        time.Advance(TimeSpan.FromSeconds(2));
        await LoggedAsync(log, "fault KillWorkflow over at 7");
        progress.Report(Open(seconds: 10, of: 60, rate: 8, successes: 78, errors: 0));
        time.Advance(TimeSpan.FromSeconds(3));
        Assert.Equal("  chaos   10/60 s: 8 req/s offered, 7.8 ok/s, 0 errors, 1 of 2 faults injected", log.Last());

        time.Advance(TimeSpan.FromSeconds(5));
        await LoggedAsync(log, "fault CosmosErrors at 15");
        progress.Report(Open(seconds: 20, of: 60, rate: 8, successes: 150, errors: 4));
        time.Advance(TimeSpan.FromSeconds(3));
        await LoggedAsync(log, "fault CosmosErrors over at 18");
        time.Advance(TimeSpan.FromSeconds(2));
        Assert.Equal("  chaos   20/60 s: 8 req/s offered, 7.2 ok/s, 4 errors, 2 of 2 faults injected", log.Last());

        Assert.Equal(2, (await faults.WaitAsync(TimeSpan.FromSeconds(10))).Count);
        Assert.Equal(2, counted.Started);
    }

    private static async Task LoggedAsync(ConcurrentQueue<string> log, string text) =>
        Assert.True(await Eventually.TrueAsync(() => log.Any(l => l.Contains(text, StringComparison.Ordinal)), TimeSpan.FromSeconds(10)), $"never logged: {text}");

    private static LabRunOptions Options(TimeProvider time, ConcurrentQueue<string> log) =>
        new() { Scenarios = ["A"], OutputDirectory = Path.GetTempPath(), Time = time, Log = log.Enqueue };

    private static LoadProgress Closed(double seconds, double of, int users, long successes, long errors) =>
        Snapshot(seconds, of, successes, errors) with { ActiveUsers = users };

    private static LoadProgress Open(double seconds, double of, double rate, long successes, long errors) =>
        Snapshot(seconds, of, successes, errors) with { TargetRate = rate };

    private static LoadProgress Snapshot(double seconds, double of, long successes, long errors) => new(
        Elapsed: TimeSpan.FromSeconds(seconds),
        LoadDuration: TimeSpan.FromSeconds(of),
        Draining: false,
        Sent: successes + errors,
        Requests: successes + errors,
        Successes: successes,
        Errors: errors,
        InFlight: 0,
        ActiveUsers: null,
        TargetRate: null,
        LastSecond: null,
        OverallP99Ms: null,
        Completed: null,
        CompletionsPending: null);

    private sealed class NoFaults : IFaultInjector
    {
        public Task<(string Target, int ReplicasKilled)> StartAsync(ScheduledFault fault, CancellationToken cancellationToken) => Task.FromResult(("target", 0));

        public Task EndAsync(ScheduledFault fault, CancellationToken cancellationToken) => Task.CompletedTask;
    }
}
