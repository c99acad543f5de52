using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Running;
using DroneDelivery.LoadDriver.Scenarios;
using HdrHistogram;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// Coordinated omission: a server that answers at once except for one request it stalls for a second.
/// When requests go out one at a time (one connection, or one request in flight), those due during the
/// stall queue behind it. Only latency measured from the intended send time shows that queueing.
/// </summary>
public class CoordinatedOmissionTests
{
    private static readonly TimeSpan Stall = TimeSpan.FromSeconds(1);
    private const int StalledRequest = 25;
    private const long HalfSecond = 500_000; // µs

    [Fact]
    public async Task Open_model_latency_includes_the_time_requests_queued_behind_a_stalled_server()
    {
        await using var server = await StallingServer.StartAsync();
        await WarmUpAsync(server);
        server.StallRequestNumber(StalledRequest);

        // 50 req/s for 3 s over ONE connection: about 50 requests fall due during the stall, and each waits
        // for the connection until it ends.
        var result = await LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(50, TimeSpan.FromSeconds(3)), new HttpSettings { MaxConnections = 1 }));

        Assert.Equal(StopReason.Completed, result.StopReason);
        Assert.Equal(150, result.Totals.Sent);
        Assert.Equal(150, result.Totals.Successes);
        // Their latencies spread from ~1 s down to ~0: about half waited over half a second.
        var slow = CountAbove(result.RequestLatency, HalfSecond);
        Assert.True(slow >= 15, $"{slow} requests above 500 ms; p90 {result.RequestLatency.GetValueAtPercentile(90)} µs.");
        // At least the stall; no latency can outlast the run it was measured in.
        Assert.InRange(result.RequestLatency.GetMaxValue(), 900_000, Microseconds(result.TotalDuration));
    }

    [Fact]
    public async Task Open_model_counts_waiting_for_an_in_flight_slot_in_latency_and_send_lag()
    {
        await using var server = await StallingServer.StartAsync();
        await WarmUpAsync(server);
        server.StallRequestNumber(StalledRequest);

        var result = await LoadRunner.RunAsync(Plan(server, OpenLoad.Constant(50, TimeSpan.FromSeconds(3)), new HttpSettings { MaxInFlight = 1 }));

        // Requests still held back when the 3 s ended were never sent, and are reported as such.
        Assert.Equal(150, result.Totals.Sent + result.Totals.Unsent);
        Assert.Equal(result.Totals.Sent, result.Totals.Successes);
        var slow = CountAbove(result.RequestLatency, HalfSecond);
        Assert.True(slow >= 15, $"sent {result.Totals.Sent}, {slow} requests above 500 ms");
        // Here the driver itself held the requests back, so its send lag shows the same queue.
        Assert.NotNull(result.SendLag);
        Assert.True(CountAbove(result.SendLag, HalfSecond) >= 15);
    }

    [Fact]
    public async Task Closed_model_under_the_same_stall_records_only_the_stalled_request_as_slow()
    {
        await using var server = await StallingServer.StartAsync();
        await WarmUpAsync(server);
        server.StallRequestNumber(StalledRequest);

        // One user waits for each response before sending again, so the stall delays sends instead of
        // showing up as latency: coordinated omission, which is what the open model corrects.
        var result = await LoadRunner.RunAsync(Plan(server, ClosedLoad.Constant(1, TimeSpan.FromSeconds(3)), new HttpSettings()));

        // The stalled request itself is slow; but one user's requests never overlap, so measured from
        // their actual sends the latencies add up to no more than the run lasted. The open model's add up
        // to far more: each request queued behind the stall counts its wait.
        Assert.True(result.Totals.Successes > StalledRequest);
        Assert.True(CountAbove(result.RequestLatency, HalfSecond) >= 1);
        var total = result.RequestLatency.GetMean() * result.RequestLatency.TotalCount;
        Assert.True(total <= Microseconds(result.TotalDuration) * 1.01, $"latencies add up to {total:0} µs in a run of {Microseconds(result.TotalDuration)} µs");
        Assert.Null(result.SendLag);
    }

    private static LoadTestPlan Plan(StallingServer server, LoadShape shape, HttpSettings http) => new()
    {
        Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = server.BaseUri, Year = 2025 }),
        Shape = shape,
        Http = http,
    };

    // Compiles and connects everything once, so a cold start does not pass for a stall.
    private static Task WarmUpAsync(StallingServer server) =>
        LoadRunner.RunAsync(Plan(server, ClosedLoad.Constant(1, TimeSpan.FromSeconds(5)), new HttpSettings()) with { Bounds = new LoadBounds { MaxRequests = 20 } });

    private static long CountAbove(HistogramBase histogram, long microseconds) => histogram.CountAbove(microseconds);

    private static long Microseconds(TimeSpan span) => span.Ticks / TimeSpan.TicksPerMicrosecond;

    private sealed class StallingServer : IAsyncDisposable
    {
        private LoopbackServer _server = null!;
        private long _requests;
        private long _stallAt = long.MaxValue;

        public Uri BaseUri => _server.BaseUri;

        public static async Task<StallingServer> StartAsync()
        {
            var stalling = new StallingServer();
            stalling._server = await LoopbackServer.StartAsync(app => app.MapGet("/api/invoices/{ownerId}", stalling.HandleAsync));
            return stalling;
        }

        /// <summary>Stalls the <paramref name="number"/>-th request from now.</summary>
        public void StallRequestNumber(int number) => Interlocked.Exchange(ref _stallAt, Interlocked.Read(ref _requests) + number);

        public ValueTask DisposeAsync() => _server.DisposeAsync();

        private async Task<IResult> HandleAsync(HttpContext context, string ownerId)
        {
            if (Interlocked.Increment(ref _requests) == Interlocked.Read(ref _stallAt))
            {
                await Task.Delay(Stall, context.RequestAborted);
            }

            return TypedResults.Json(new { ownerId, year = 2025, month = 1 });
        }
    }
}
