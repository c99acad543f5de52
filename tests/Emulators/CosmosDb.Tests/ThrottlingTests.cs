using System.Net;
using System.Text.RegularExpressions;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Scenario A steps 1 → 2: 60 fanned-out utilization queries a second (≈192 RU/s per partition)
/// exceed 900 RU/s over nine partitions (100 per partition) but fit in 2,500 RU/s (≈278 per partition).
/// The emulator runs on a fake clock that the queries' schedule moves, 1/60 s per query, so the rate the
/// partitions see does not depend on how fast this machine is.
/// </summary>
public sealed class ThrottlingTests() : EmulatorTest(physicalPartitions: ScenarioA.Partitions)
{
    private const double QueriesPerSecond = 60;
    private const int Queries = 180;

    // The SDK signs requests with the real time, so the fake clock starts there.
    private readonly FakeTimeProvider _time = new(DateTimeOffset.UtcNow);

    protected override void Configure(Configuration.CosmosEmulatorOptions options) => options.TimeProvider = _time;

    protected override CosmosClient CreateClient(CosmosEmulator emulator) => ScenarioA.PatientClient(emulator, _time);

    [Fact]
    public async Task Burst_at_900_RU_is_throttled_and_retried_by_the_sdk_and_at_2500_RU_is_not()
    {
        var container = await ScenarioA.CreateAsync(Emulator, Client, "utilization", "/partitionKey", 900, _time);

        var throttledBefore = Throttled();
        var pages = await ScenarioA.AtRateAsync(container, _time, QueriesPerSecond, Queries);
        var throttledAt900 = Throttled() - throttledBefore;

        Assert.True(throttledAt900 > 0, "900 RU/s over 9 partitions should throttle 60 fanned-out queries a second.");
        Assert.Equal(Queries * 10, pages.Sum(p => p.Count));
        // The SDK retried on its own: the 429s are in its diagnostics, not in the results.
        Assert.True(pages.Sum(ThrottledAttempts) > 0);

        await container.ReplaceThroughputAsync(2500);
        Assert.Equal(2500, await container.ReadThroughputAsync());
        // The 900 RU/s burst left partitions in debt; the second burst starts once it is repaid.
        ScenarioA.BudgetsRefilled(Emulator, "utilization", _time);
        var beforeSecondBurst = Throttled();
        var calm = await ScenarioA.AtRateAsync(container, _time, QueriesPerSecond, Queries);

        Assert.Equal(beforeSecondBurst, Throttled());
        Assert.Equal(0, calm.Sum(ThrottledAttempts));
        Assert.Equal(Queries * 10, calm.Sum(p => p.Count));
    }

    [Fact]
    public async Task Without_sdk_retries_a_429_surfaces_as_a_cosmos_exception()
    {
        await ScenarioA.CreateAsync(Emulator, Client, "utilization", "/partitionKey", 900, _time);
        using var impatient = CosmosTestHost.Client(Emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);
        var container = impatient.GetContainer("invoicing", "utilization");

        var error = await Assert.ThrowsAnyAsync<CosmosException>(() => ScenarioA.AtRateAsync(container, _time, QueriesPerSecond, Queries));

        Assert.Equal(HttpStatusCode.TooManyRequests, error.StatusCode);
        Assert.Equal(3200, error.SubStatusCode);
        Assert.NotNull(error.RetryAfter);
        Assert.InRange(error.RetryAfter!.Value, TimeSpan.FromMilliseconds(1), TimeSpan.FromSeconds(2));
    }

    // Gateway-mode diagnostics list every HTTP attempt with its status.
    private static int ThrottledAttempts(FeedResponse<DroneUtilization> page) =>
        Regex.Count(page.Diagnostics.ToString(), "\"StatusCode\":\"TooManyRequests\"");

    private long Throttled() =>
        Emulator.GetMetrics().Container("invoicing", "utilization")?.ThrottledRequests ?? 0;
}
