using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.Workflow;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Services.Tests;

/// <summary>The breaker's decisions on its own, on a fake clock; and the Workflow's new settings as it logs them.</summary>
[Collection(SystemCollection.Name)]
public sealed class WorkflowCircuitBreakerTests(SystemFixture system)
{
    private static WorkflowCircuitBreaker Breaker(FakeTimeProvider time, int minimumThroughput = 4, double ratio = 0.5, int probes = 2) =>
        new(Options.Create(new CircuitBreakerSettings
        {
            MinimumThroughput = minimumThroughput,
            FailureRatio = ratio,
            SamplingDuration = TimeSpan.FromSeconds(10),
            ProbeMessages = probes,
        }), time);

    [Fact]
    public void It_opens_only_once_the_window_holds_enough_messages_and_the_failure_share_reaches_the_ratio()
    {
        var breaker = Breaker(new FakeTimeProvider());

        breaker.RecordTransientFailure();
        breaker.RecordTransientFailure();
        breaker.RecordTransientFailure();
        Assert.Equal(BreakerState.Closed, breaker.State); // 3 of 3 failed, but fewer than 4 messages

        breaker.RecordSuccess();
        Assert.Equal(BreakerState.Open, breaker.State); // 3 of 4
    }

    [Fact]
    public void Failures_older_than_the_sampling_window_do_not_count()
    {
        var time = new FakeTimeProvider();
        var breaker = Breaker(time);

        breaker.RecordTransientFailure();
        breaker.RecordTransientFailure();
        time.Advance(TimeSpan.FromSeconds(11));
        breaker.RecordSuccess();
        breaker.RecordSuccess();
        breaker.RecordSuccess();
        breaker.RecordTransientFailure();

        Assert.Equal(BreakerState.Closed, breaker.State); // 1 of the 4 in the window
    }

    [Fact]
    public void Half_open_it_closes_after_the_probes_succeed_and_opens_again_on_a_failure()
    {
        var breaker = Breaker(new FakeTimeProvider(), minimumThroughput: 1, ratio: 1);
        breaker.RecordTransientFailure();
        Assert.Equal(BreakerState.Open, breaker.State);

        breaker.HalfOpen();
        breaker.RecordSuccess();
        breaker.RecordTransientFailure();
        Assert.Equal(BreakerState.Open, breaker.State);

        breaker.HalfOpen();
        breaker.RecordSuccess();
        Assert.Equal(BreakerState.HalfOpen, breaker.State);
        breaker.RecordSuccess();
        Assert.Equal(BreakerState.Closed, breaker.State);
    }

    [Fact]
    public async Task The_retry_and_breaker_settings_are_logged_with_their_effective_values()
    {
        await using var workflow = await system.StartWorkflowAsync("no-such-queue", new()
        {
            ["Redelivery:TransientBudget"] = "00:20:00",
            ["CircuitBreaker:FailureRatio"] = "0.25",
        });

        var logged = workflow.Logs.Messages.ToList();
        Assert.Contains("Setting Redelivery:TransientBudget = 00:20:00", logged);
        Assert.Contains("Setting Redelivery:BaseDelay = 00:00:00.0100000", logged);
        Assert.Contains("Setting CircuitBreaker:FailureRatio = 0.25", logged);
        Assert.Contains("Setting CircuitBreaker:BreakDuration = 00:00:30", logged);
        Assert.Contains("Setting CircuitBreaker:ProbeMessages = 5", logged);
    }
}
