using System.Diagnostics;
using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Running;
using DroneDelivery.LoadDriver.Scenarios;
using DroneDelivery.TestSupport;
using HdrHistogram;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.LoadDriver.Tests;

public class LoadRunnerTests
{
    [Fact]
    public async Task A_step_load_reaches_the_requested_user_count_and_no_more()
    {
        // Responses are held until five requests are in hand at once: only five users at once can get
        // there, and they all do however slow the machine.
        await using var server = await RecordingServer.StartAsync();
        server.Delay = TimeSpan.FromMilliseconds(30);
        server.HoldUntilConcurrent = 5;

        // 1 → 5 users over 2 s (0.4 s at each count), then 0.5 s at 5.
        var shape = new ClosedLoad(1, 5, TimeSpan.FromSeconds(2)) { Hold = TimeSpan.FromSeconds(0.5) };
        var started = Stopwatch.GetTimestamp();
        var result = await LoadRunner.RunAsync(Plan(server, shape));

        Assert.Equal(StopReason.Completed, result.StopReason);
        Assert.Equal(5, server.MaxConcurrent);
        // The fifth user starts 1.6 s into the ramp, never sooner (a slow machine only makes it later).
        var fifth = server.Arrivals.First(a => a.Concurrent == 5);
        Assert.True(Stopwatch.GetElapsedTime(started, fifth.Timestamp) >= TimeSpan.FromSeconds(1.6), $"five users after {Stopwatch.GetElapsedTime(started, fifth.Timestamp)}");
        Assert.All(result.TimeSeries, s => Assert.InRange(s.ActiveUsers ?? -1, 0, 5));
        Assert.All(result.TimeSeries, s => Assert.Null(s.TargetRate));
    }

    [Fact]
    public async Task A_step_load_ramping_down_stops_users_above_the_count()
    {
        await using var server = await RecordingServer.StartAsync();
        server.Delay = TimeSpan.FromMilliseconds(20);
        server.HoldUntilConcurrent = 4;

        // 4 → 1 users over 2 s (0.5 s at each count), then 1 s at 1.
        var shape = new ClosedLoad(4, 1, TimeSpan.FromSeconds(2)) { Hold = TimeSpan.FromSeconds(1) };
        var result = await LoadRunner.RunAsync(Plan(server, shape));

        Assert.Equal(4, server.MaxConcurrent);
        // The last 1.5 s has one user: its last requests found nobody else's in hand.
        Assert.All(server.Arrivals.TakeLast(5), a => Assert.Equal(1, a.Concurrent));
        Assert.All(result.TimeSeries, s => Assert.InRange(s.ActiveUsers ?? -1, 0, 4));
    }

    [Fact]
    public async Task Think_time_paces_each_user()
    {
        await using var server = await RecordingServer.StartAsync();

        var shape = ClosedLoad.Constant(1, TimeSpan.FromMinutes(1)) with { ThinkTime = TimeSpan.FromMilliseconds(200) };
        var result = await LoadRunner.RunAsync(Plan(server, shape) with { Bounds = new LoadBounds { MaxRequests = 4 } });

        // Each request starts at least a think time after the one before it (the timer may fire a tick early).
        Assert.Equal(4, result.Totals.Successes);
        var arrivals = server.Arrivals;
        Assert.Equal(4, arrivals.Count);
        Assert.All(arrivals.Zip(arrivals.Skip(1)), pair =>
            Assert.True(Stopwatch.GetElapsedTime(pair.First.Timestamp, pair.Second.Timestamp) >= TimeSpan.FromMilliseconds(195),
                $"{Stopwatch.GetElapsedTime(pair.First.Timestamp, pair.Second.Timestamp).TotalMilliseconds} ms between requests"));
    }

    [Fact]
    public async Task The_time_series_has_a_row_for_every_second_including_idle_ones()
    {
        await using var server = await RecordingServer.StartAsync();

        var shape = ClosedLoad.Constant(1, TimeSpan.FromSeconds(3.5)) with { ThinkTime = TimeSpan.FromMilliseconds(1300) };
        var result = await LoadRunner.RunAsync(Plan(server, shape));

        Assert.Equal(Enumerable.Range(0, result.TimeSeries.Count), result.TimeSeries.Select(s => s.Second));
        Assert.True(result.TimeSeries.Count >= 3);
        Assert.Contains(result.TimeSeries, s => s.Requests == 0 && s.P50Ms is null);
        Assert.Equal(result.Totals.Requests, result.TimeSeries.Sum(s => s.Requests));
        Assert.All(result.TimeSeries.SkipLast(1), s => Assert.Equal(1, s.IntervalSeconds));
    }

    [Fact]
    public async Task The_request_bound_stops_a_closed_load_after_exactly_that_many_requests()
    {
        await using var server = await RecordingServer.StartAsync();

        var result = await LoadRunner.RunAsync(Plan(server, ClosedLoad.Constant(4, TimeSpan.FromMinutes(5))) with
        {
            Bounds = new LoadBounds { MaxRequests = 50 },
        });

        Assert.Equal(StopReason.MaxRequests, result.StopReason);
        Assert.Equal(50, result.Totals.Sent);
        Assert.Equal(50, result.Totals.Successes);
        Assert.Equal(50, server.Requests.Count);
        Assert.True(result.TotalDuration < TimeSpan.FromSeconds(30));
    }

    [Fact]
    public async Task The_request_bound_stops_an_open_load_after_exactly_that_many_requests()
    {
        await using var server = await RecordingServer.StartAsync();

        var result = await LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(100, TimeSpan.FromMinutes(5))) with
        {
            Bounds = new LoadBounds { MaxRequests = 30 },
        });

        Assert.Equal(StopReason.MaxRequests, result.StopReason);
        Assert.Equal(30, server.Requests.Count);
        Assert.Equal(30, result.Totals.Requests);
        Assert.Equal(0, result.Totals.Unsent);
        // The schedule had five minutes to go (only a hang comes near this bound).
        Assert.True(result.LoadDuration < TimeSpan.FromMinutes(1));
    }

    [Fact]
    public async Task The_duration_bound_cuts_a_long_shape_short()
    {
        await using var server = await RecordingServer.StartAsync();

        var stopwatch = Stopwatch.StartNew();
        var result = await LoadRunner.RunAsync(Plan(server, new ClosedLoad(2, 2, TimeSpan.FromMinutes(10))) with
        {
            Bounds = new LoadBounds { MaxDuration = TimeSpan.FromSeconds(1) },
        });

        Assert.Equal(StopReason.MaxDuration, result.StopReason);
        // The load phase ends once the driver's clock has passed the bound; the shape had ten minutes to go
        // (only a hang comes near the upper bounds).
        Assert.True(result.LoadDuration >= TimeSpan.FromSeconds(1), $"load phase {result.LoadDuration}");
        Assert.True(result.LoadDuration < TimeSpan.FromMinutes(1));
        Assert.True(stopwatch.Elapsed < TimeSpan.FromMinutes(2));
        Assert.Equal(result.Totals.Sent, server.Requests.Count);
    }

    [Fact]
    public async Task The_bounds_and_measurements_follow_the_driver_s_clock()
    {
        // An hour-long bound on a fake clock: the run lasts exactly as long as the clock is moved.
        await using var server = await RecordingServer.StartAsync();
        var time = new FakeTimeProvider(new DateTimeOffset(2025, 6, 1, 8, 0, 0, TimeSpan.Zero));
        var run = LoadRunner.RunAsync(Plan(server, ClosedLoad.Constant(1, TimeSpan.FromHours(10))) with
        {
            Bounds = new LoadBounds { MaxDuration = TimeSpan.FromHours(1) },
        }, time);
        Assert.True(await Eventually.TrueAsync(() => server.Requests.Count >= 3, TimeSpan.FromMinutes(1)), "The user never sent.");

        time.Advance(TimeSpan.FromHours(1));
        var result = await run.WaitAsync(TimeSpan.FromMinutes(1));

        Assert.Equal(StopReason.MaxDuration, result.StopReason);
        Assert.Equal(new DateTimeOffset(2025, 6, 1, 8, 0, 0, TimeSpan.Zero), result.StartedAt);
        Assert.Equal(TimeSpan.FromHours(1), result.LoadDuration);
        Assert.Equal(TimeSpan.FromHours(1), result.TotalDuration);
        // A request in flight when the hour passed had also passed its request time-out (and may have
        // been given up on before the server saw it).
        Assert.InRange(result.Totals.Timeouts, 0, 1);
        Assert.Equal(result.Totals.Sent, result.Totals.Successes + result.Totals.Timeouts);
        Assert.InRange(server.Requests.Count, result.Totals.Sent - result.Totals.Timeouts, result.Totals.Sent);
        Assert.Equal(result.Totals.Successes / 3600.0, result.Totals.SuccessesPerSecond, 9);
        // Requests answered while the clock stood still took no time on it; at most the one in flight
        // when the hour passed took the hour.
        Assert.Equal(0, result.RequestLatency.GetValueAtPercentile(50));
        Assert.True(result.RequestLatency.CountAbove(0) <= 1);
    }

    [Fact]
    public async Task Slow_last_responses_count_as_draining_not_as_load_time()
    {
        // Responses are held until the run reports it is draining: a load phase that waited for them
        // would never get there, and the held responses would come back only after a minute.
        await using var server = await RecordingServer.StartAsync();
        var draining = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        server.Gate = draining.Task;

        var result = await LoadRunner.RunAsync(
            Plan(server, ClosedLoad.Constant(2, TimeSpan.FromSeconds(1))),
            new SynchronousProgress(p => { if (p.Draining) { draining.TrySetResult(); } }));

        Assert.True(draining.Task.IsCompletedSuccessfully, "The run never reported draining while responses were outstanding.");
        Assert.True(result.LoadDuration >= TimeSpan.FromSeconds(1), $"load phase {result.LoadDuration}");
        Assert.True(result.TotalDuration > result.LoadDuration);
        Assert.Equal(2, result.Totals.Successes);
        Assert.Equal(2 / result.LoadDuration.TotalSeconds, result.Totals.SuccessesPerSecond, 3);
    }

    [Fact]
    public async Task An_open_load_sends_exactly_its_schedule_and_reports_the_target_rate()
    {
        await using var server = await RecordingServer.StartAsync();

        var result = await LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(40, TimeSpan.FromSeconds(2))));

        Assert.Equal(StopReason.Completed, result.StopReason);
        Assert.Equal(80, server.Requests.Count);
        Assert.Equal(80, result.Totals.Successes);
        // The load phase lasts the schedule's two seconds, however long the last responses take.
        Assert.True(result.LoadDuration >= TimeSpan.FromSeconds(2), $"load phase {result.LoadDuration}");
        Assert.True(result.TotalDuration >= result.LoadDuration);
        Assert.Equal(80 / result.LoadDuration.TotalSeconds, result.Totals.SuccessesPerSecond, 3);
        Assert.Equal(40, result.TimeSeries[0].TargetRate!.Value, 6);
        Assert.Equal(40, result.TimeSeries[1].TargetRate!.Value, 6);
        Assert.All(result.TimeSeries, s => Assert.Null(s.ActiveUsers));
        Assert.Equal(80, result.TimeSeries.Sum(s => s.Requests));
    }

    [Fact]
    public async Task A_server_that_never_answers_yields_timeouts_and_the_run_still_ends()
    {
        await using var server = await RecordingServer.StartAsync();
        server.Delay = TimeSpan.FromMinutes(10);

        var stopwatch = Stopwatch.StartNew();
        var result = await LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(10, TimeSpan.FromSeconds(1))) with
        {
            Http = new HttpSettings { RequestTimeout = TimeSpan.FromMilliseconds(500) },
        });

        // The server would have taken ten minutes (only a hang comes near this bound).
        Assert.True(stopwatch.Elapsed < TimeSpan.FromMinutes(2));
        Assert.Equal(10, result.Totals.Timeouts);
        Assert.Equal(10, result.Totals.Errors);
        Assert.Equal(10, result.StatusCounts["timeout"]);
        // Timeouts count in the latency at the time they were given up on, not left out.
        Assert.Equal(10, result.RequestLatency.TotalCount);
        // (The timer behind the timeout has millisecond granularity, so allow it to fire a little early.)
        Assert.True(result.RequestLatency.GetMinValue() >= 490_000, $"min {result.RequestLatency.GetMinValue()} µs");
    }

    [Fact]
    public async Task Cancelling_stops_at_once_and_returns_what_was_measured()
    {
        // Responses are held for a minute: the three users' first requests are all in hand when the run is cancelled.
        await using var server = await RecordingServer.StartAsync();
        server.Gate = new TaskCompletionSource().Task;

        using var cancel = new CancellationTokenSource();
        var run = LoadRunner.RunAsync(Plan(server, ClosedLoad.Constant(3, TimeSpan.FromMinutes(1))), cancellationToken: cancel.Token);
        await server.Reached(3).WaitAsync(TimeSpan.FromMinutes(1));
        var stopwatch = Stopwatch.StartNew();
        await cancel.CancelAsync();
        var result = await run;

        // Not held until the responses came (a minute) or the load's end.
        Assert.True(stopwatch.Elapsed < TimeSpan.FromSeconds(30), $"took {stopwatch.Elapsed}");
        Assert.Equal(StopReason.Cancelled, result.StopReason);
        Assert.Equal(3, result.Totals.Cancelled);
        Assert.Equal(0, result.Totals.Requests);
        Assert.Equal(3, result.StatusCounts["cancelled"]);
    }

    [Fact]
    public async Task A_refused_connection_counts_as_a_connection_error_with_a_sample_message()
    {
        var result = await LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = new Uri("http://127.0.0.1:1/"), Year = 2025 }),
            Shape = OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)),
        });

        Assert.Equal(5, result.Totals.ConnectionErrors);
        Assert.Equal(5, result.StatusCounts["connection-error"]);
        Assert.Contains(result.ErrorSamples, s => s.Contains("refused", StringComparison.OrdinalIgnoreCase));
    }

    [Fact]
    public void An_empty_histogram_is_summarised_as_nothing_measured()
    {
        // A step in which no accepted request completed (every one refused, or the system too slow)
        // has an empty completion histogram; its report must still be written.
        var report = LatencyReport.From(new LongHistogram(TimeSpan.FromMinutes(10).Ticks / 10, 3));

        Assert.Equal(0, report.Count);
        Assert.Equal(0, report.P99Ms);
        Assert.Empty(report.Percentiles);
    }

    [Fact]
    public async Task A_target_too_busy_to_accept_connections_counts_connection_errors_after_the_connect_timeout()
    {
        // A listener that never accepts, with its one-place backlog taken: the kernel leaves further
        // connection attempts unanswered, as it does for an overloaded service.
        using var listener = new System.Net.Sockets.Socket(System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp);
        listener.Bind(new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0));
        listener.Listen(0);
        var port = ((System.Net.IPEndPoint)listener.LocalEndPoint!).Port;
        using var occupant = new System.Net.Sockets.Socket(System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp);
        await occupant.ConnectAsync(System.Net.IPAddress.Loopback, port);

        var result = await LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = new Uri($"http://127.0.0.1:{port}/"), Year = 2025 }),
            Shape = ClosedLoad.Constant(1, TimeSpan.FromMinutes(1)),
            Bounds = new LoadBounds { MaxRequests = 2 },
            Http = new HttpSettings { RequestTimeout = TimeSpan.FromSeconds(20), ConnectTimeout = TimeSpan.FromMilliseconds(300) },
        });

        Assert.Equal(2, result.Totals.ConnectionErrors);
        Assert.Equal(0, result.Totals.Timeouts + result.Totals.ClientErrors);
        Assert.Equal(2, result.StatusCounts["connection-error"]);
        Assert.Contains(result.ErrorSamples, s => s.Contains("ConnectTimeout", StringComparison.Ordinal));
        // Each attempt was given up on at the connect timeout (300 ms), not at the request timeout (20 s).
        Assert.InRange(result.RequestLatency.GetMaxValue(), 250_000, 10_000_000);
    }

    [Fact]
    public void A_connect_timeout_longer_than_the_request_timeout_is_capped_by_it()
    {
        var settings = new HttpSettings { RequestTimeout = TimeSpan.FromSeconds(2) };

        Assert.Equal(TimeSpan.FromSeconds(2), settings.EffectiveConnectTimeout);
        Assert.Throws<ArgumentException>(() => (settings with { ConnectTimeout = TimeSpan.Zero }).Validate());
    }

    [Fact]
    public async Task Responses_are_counted_per_status_and_non_2xx_are_errors()
    {
        await using var server = await RecordingServer.StartAsync();
        server.StatusFor = number => number % 4 == 0 ? 503 : 200;

        var result = await LoadRunner.RunAsync(Plan(server, ClosedLoad.Constant(1, TimeSpan.FromMinutes(1))) with
        {
            Bounds = new LoadBounds { MaxRequests = 40 },
        });

        Assert.Equal(30, result.StatusCounts["200"]);
        Assert.Equal(10, result.StatusCounts["503"]);
        Assert.Equal(30, result.Totals.Successes);
        Assert.Equal(10, result.Totals.Errors);
        Assert.Equal(10, result.TimeSeries.Sum(s => s.Errors));
    }

    [Fact]
    public async Task Progress_is_reported_every_second_while_the_run_lasts()
    {
        await using var server = await RecordingServer.StartAsync();
        var reports = new List<LoadProgress>();
        var progress = new SynchronousProgress(p =>
        {
            lock (reports)
            {
                reports.Add(p);
            }
        });

        var result = await LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(20, TimeSpan.FromSeconds(2.5))), progress);

        // One a second while the run lasts (at least two in 2.5 s), and the last state once at the end.
        Assert.InRange(reports.Count, 2, (int)result.TotalDuration.TotalSeconds + 1);
        Assert.Equal(20, reports[0].TargetRate!.Value, 6);
        Assert.True(reports[^1].Requests >= 20);
        Assert.NotNull(reports[^1].LastSecond);
    }

    [Fact]
    public async Task An_invalid_plan_is_rejected_before_any_request()
    {
        await using var server = await RecordingServer.StartAsync();

        var error = await Assert.ThrowsAsync<ArgumentException>(() => LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(10, TimeSpan.FromSeconds(1))) with
        {
            Bounds = new LoadBounds { MaxRequests = 0 },
        }));

        Assert.Contains("request bound", error.Message, StringComparison.Ordinal);
        Assert.Empty(server.Requests);
    }

    internal static LoadTestPlan Plan(RecordingServer server, LoadShape shape) => new()
    {
        Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = server.BaseUri, Year = 2025 }),
        Shape = shape,
    };

    private sealed class SynchronousProgress(Action<LoadProgress> report) : IProgress<LoadProgress>
    {
        public void Report(LoadProgress value) => report(value);
    }
}
