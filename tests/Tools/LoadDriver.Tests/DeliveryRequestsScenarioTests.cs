using System.Diagnostics;
using System.Text.Json;
using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Running;
using DroneDelivery.LoadDriver.Scenarios;
using HdrHistogram;

namespace DroneDelivery.LoadDriver.Tests;

public class DeliveryRequestsScenarioTests
{
    private static readonly CompletionTracking FastPolling = new()
    {
        PollInterval = TimeSpan.FromMilliseconds(50),
        // Far beyond the fake's delays, so only a hang gives up.
        MaxWait = TimeSpan.FromSeconds(30),
    };

    [Fact]
    public async Task Accepted_requests_are_followed_to_completion_without_counting_polls_as_load()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.CreatedAfter = TimeSpan.FromMilliseconds(300);

        var result = await RunAsync(ingestion, OpenLoad.Constant(20, TimeSpan.FromSeconds(1)), FastPolling);

        Assert.Equal(20, ingestion.Posts);
        Assert.Equal(20, result.Totals.Requests);
        Assert.Equal(20, result.StatusCounts["202"]);
        Assert.Equal(20, result.RequestLatency.TotalCount);
        var completion = Assert.IsType<CompletionResult>(result.Completion);
        Assert.Equal(new CompletionCounts(20, 20, 0, 0, 0, 0, ingestion.Polls, 0), completion.Counts);
        Assert.True(ingestion.Polls > 20);
        // Completion takes at least the workflow's 300 ms, measured from each request's intended send time.
        Assert.Equal(20, completion.Latency.TotalCount);
        Assert.True(completion.Latency.GetMinValue() >= 300_000, $"min {completion.Latency.GetMinValue()} µs");
        Assert.Equal(20, result.TimeSeries.Sum(s => s.Completions));
    }

    [Fact]
    public async Task Following_one_delivery_in_N_polls_only_the_sample()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.CreatedAfter = TimeSpan.FromMilliseconds(100);

        var result = await RunAsync(ingestion, OpenLoad.Constant(20, TimeSpan.FromSeconds(1)), FastPolling with { FollowOneIn = 5 });

        Assert.Equal(20, result.StatusCounts["202"]);
        var completion = Assert.IsType<CompletionResult>(result.Completion);
        Assert.Equal(4, completion.Counts.Tracked);
        Assert.Equal(4, completion.Counts.Completed);
        Assert.Equal(4, completion.Latency.TotalCount);
        Assert.Equal(0, completion.Counts.Untracked);
    }

    [Fact]
    public void Following_one_in_zero_is_refused()
    {
        var e = Assert.Throws<ArgumentException>(() => (FastPolling with { FollowOneIn = 0 }).Validate());
        Assert.Contains("between 1 and 1000000", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_completed_predicate_decides_which_status_marks_completion()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.CreatedAfter = TimeSpan.FromMilliseconds(100);

        // Deliveries that never leave stage Created complete for the default predicate (the first 200)...
        ingestion.CompletedAfter = TimeSpan.FromHours(1);
        var firstOk = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), FastPolling);
        // ...and for a stage predicate only once they reach that stage.
        ingestion.CompletedAfter = TimeSpan.FromMilliseconds(1500);
        var completedStage = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), FastPolling with { IsCompleted = CompletionTracking.StageIs("completed") });

        Assert.Equal(5, firstOk.Completion!.Counts.Completed);
        Assert.Equal(5, completedStage.Completion!.Counts.Completed);
        Assert.True(completedStage.Completion.Latency.GetMinValue() >= 1_500_000, $"min {completedStage.Completion.Latency.GetMinValue()} µs");
    }

    [Fact]
    public async Task Polling_gives_up_at_the_maximum_wait()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.CreatedAfter = TimeSpan.FromHours(1);

        var stopwatch = Stopwatch.StartNew();
        var result = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), FastPolling with { MaxWait = TimeSpan.FromMilliseconds(800) });

        // Deliveries appear only after an hour (only a hang comes near this bound).
        Assert.True(stopwatch.Elapsed < TimeSpan.FromMinutes(2), $"took {stopwatch.Elapsed}");
        Assert.Equal(new CompletionCounts(5, 0, 5, 0, 0, 0, ingestion.Polls, 0), result.Completion!.Counts);
        Assert.Equal(0, result.Completion.Latency.TotalCount);
    }

    [Fact]
    public async Task A_Location_on_another_host_is_never_polled()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.LocationFor = id => $"http://192.0.2.1/api/deliveries/{id}/status";

        var result = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), FastPolling);

        Assert.Equal(5, result.Completion!.Counts.Rejected);
        Assert.Equal(0, result.Completion.Counts.PollRequests);
        Assert.Equal(0, ingestion.Polls);
        Assert.Contains(result.ErrorSamples, s => s.Contains("192.0.2.1", StringComparison.Ordinal));
    }

    [Fact]
    public async Task A_missing_Location_leaves_the_delivery_untracked()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.LocationFor = _ => null;

        var result = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), FastPolling);

        Assert.Equal(5, result.Completion!.Counts.Untracked);
        Assert.Equal(0, result.Completion.Counts.Tracked);
        Assert.Equal(5, result.Totals.Successes);
    }

    [Fact]
    public async Task A_relative_Location_resolves_against_the_status_base()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        ingestion.CreatedAfter = TimeSpan.Zero;
        ingestion.LocationFor = id => $"deliveries/{id}/status";

        var result = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), FastPolling, statusBase: new Uri(ingestion.BaseUri, "api/"));

        Assert.Equal(5, result.Completion!.Counts.Completed);
        Assert.Equal(0, result.Completion.Counts.PollErrors);
    }

    [Fact]
    public async Task Without_polling_only_acceptance_is_measured()
    {
        await using var ingestion = await FakeIngestion.StartAsync();

        var result = await RunAsync(ingestion, OpenLoad.Constant(10, TimeSpan.FromSeconds(0.5)), completion: null);

        Assert.Null(result.Completion);
        Assert.Equal(5, result.StatusCounts["202"]);
        // The run awaits every request it started before it returns, so a poll would already be counted.
        Assert.Equal(0, ingestion.Polls);
    }

    [Fact]
    public async Task Request_bodies_follow_the_ingestion_contract()
    {
        await using var ingestion = await FakeIngestion.StartAsync();
        var owners = new SeededOwners("owner-{0:D4}", 5);

        await LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = new DeliveryRequestsScenario(new DeliveryRequestsScenarioOptions { Ingestion = ingestion.BaseUri, Owners = owners, RunId = "run42" }),
            Shape = OpenLoad.Constant(20, TimeSpan.FromSeconds(1)),
        });

        var bodies = ingestion.Bodies;
        Assert.Equal(20, bodies.Count);
        var seeded = owners.AllIds();
        foreach (var body in bodies)
        {
            Assert.Contains(body.GetProperty("ownerId").GetString(), seeded);
            Assert.Matches(@"^\d+\.\d{5},-\d+\.\d{5}$", body.GetProperty("pickupLocation").GetString()!);
            Assert.Matches(@"^\d+\.\d{5},-\d+\.\d{5}$", body.GetProperty("dropoffLocation").GetString()!);
            var pickup = body.GetProperty("pickupTime").GetDateTimeOffset();
            var deadline = body.GetProperty("deadline").GetDateTimeOffset();
            Assert.EndsWith("Z", body.GetProperty("pickupTime").GetString(), StringComparison.Ordinal);
            Assert.True(pickup > DateTimeOffset.UtcNow && deadline > pickup);
            Assert.Contains(body.GetProperty("expedited").ValueKind, new[] { JsonValueKind.True, JsonValueKind.False });
            Assert.Equal("None", body.GetProperty("confirmationRequired").GetString());
            var package = body.GetProperty("packageInfo");
            // Ids follow the services' rule: 1-64 letters, digits, '-', '_', '.' or ':'.
            Assert.Matches(@"^run42-[0-9]{1,19}$", package.GetProperty("packageId").GetString()!);
            Assert.Contains(package.GetProperty("size").GetString(), new[] { "Small", "Medium", "Large" });
            Assert.InRange(package.GetProperty("weight").GetDouble(), 0.1, 20);
            Assert.Equal("load-driver", package.GetProperty("tag").GetString());
        }

        Assert.Equal(20, bodies.Select(b => b.GetProperty("packageInfo").GetProperty("packageId").GetString()).Distinct().Count());
    }

    [Fact]
    public void The_same_seed_writes_the_same_request_for_a_sequence_number()
    {
        var now = new DateTime(2025, 6, 1, 12, 0, 0, DateTimeKind.Utc);
        var options = new DeliveryRequestsScenarioOptions { Ingestion = new Uri("http://127.0.0.1:5001/"), RunId = "r1", Seed = 3 };

        var first = new DeliveryRequestsScenario(options).RequestBody(17, now);
        var again = new DeliveryRequestsScenario(options).RequestBody(17, now);
        var otherSeed = new DeliveryRequestsScenario(options with { Seed = 4 }).RequestBody(17, now);

        Assert.Equal(first, again);
        Assert.NotEqual(first, otherSeed);
        using var document = JsonDocument.Parse(first);
        Assert.Equal("r1-17", document.RootElement.GetProperty("packageInfo").GetProperty("packageId").GetString());
    }

    [Theory]
    [InlineData("bad id!", "run id")]
    [InlineData("", "run id")]
    public void Invalid_run_ids_are_rejected(string runId, string reason)
    {
        var scenario = new DeliveryRequestsScenario(new DeliveryRequestsScenarioOptions { Ingestion = new Uri("http://127.0.0.1:5001/"), RunId = runId });

        var error = Assert.Throws<ArgumentException>(scenario.Validate);
        Assert.Contains(reason, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Unbounded_polling_settings_are_rejected()
    {
        var scenario = new DeliveryRequestsScenario(new DeliveryRequestsScenarioOptions
        {
            Ingestion = new Uri("http://127.0.0.1:5001/"),
            Completion = new CompletionTracking { MaxWait = TimeSpan.FromDays(1) },
        });

        var error = Assert.Throws<ArgumentException>(scenario.Validate);
        Assert.Contains("maximum completion wait", error.Message, StringComparison.Ordinal);
    }

    private static Task<LoadTestResult> RunAsync(FakeIngestion ingestion, LoadShape shape, CompletionTracking? completion, Uri? statusBase = null) =>
        LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = new DeliveryRequestsScenario(new DeliveryRequestsScenarioOptions
            {
                Ingestion = ingestion.BaseUri,
                StatusBase = statusBase,
                Completion = completion,
            }),
            Shape = shape,
        });
}
