using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.Workflow;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Services.Tests;

/// <summary>The breaker's decisions on its own, on a fake clock; and the Workflow's new settings as it logs them.</summary>
[Collection(SystemCollection.Name)]
public sealed class WorkflowCircuitBreakerTests(SystemFixture system)
{
    private static WorkflowCircuitBreaker Breaker(FakeTimeProvider time, int minimumThroughput = 4, double ratio = 0.5) =>
        new(Options.Create(new CircuitBreakerSettings
        {
            MinimumThroughput = minimumThroughput,
            FailureRatio = ratio,
            SamplingDuration = TimeSpan.FromSeconds(10),
            BreakDuration = TimeSpan.FromSeconds(30),
        }), time);

    [Fact]
    public void It_opens_only_once_the_window_holds_enough_messages_and_the_failure_share_reaches_the_ratio()
    {
        var breaker = Breaker(new FakeTimeProvider());

        breaker.RecordSuccess();
        breaker.RecordTransientFailure();
        breaker.RecordTransientFailure();
        Assert.Equal(BreakerState.Closed, breaker.State); // 2 of 3 failed, but fewer than 4 messages

        breaker.RecordTransientFailure();
        Assert.Equal(BreakerState.Open, breaker.State); // 3 of 4
        Assert.Equal(1, breaker.Openings);
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
    public void After_the_break_one_probe_decides_a_failure_opens_it_again_a_success_closes_it()
    {
        var time = new FakeTimeProvider();
        using var metrics = new MetricRecorder(WorkflowTelemetry.BreakerTransitionsName);
        var breaker = Breaker(time, minimumThroughput: 2, ratio: 1);
        breaker.RecordTransientFailure();
        breaker.RecordTransientFailure();
        Assert.Equal(BreakerState.Open, breaker.State);

        // Still within the break: outcomes of messages that were running say nothing.
        time.Advance(TimeSpan.FromSeconds(29));
        breaker.RecordSuccess();
        Assert.Equal((BreakerState.Open, 0L), (breaker.State, breaker.Successes));

        time.Advance(TimeSpan.FromSeconds(1));
        breaker.RecordTransientFailure();
        Assert.Equal((BreakerState.Open, 2L), (breaker.State, breaker.Openings));

        time.Advance(TimeSpan.FromSeconds(30));
        breaker.RecordSuccess();
        Assert.Equal((BreakerState.Closed, 1L), (breaker.State, breaker.Successes));
        Assert.Equal(
            ["open", "half_open", "open", "half_open", "closed"],
            metrics.Of(WorkflowTelemetry.BreakerTransitionsName).Select(m => (string)m.Tags["state"]!));
    }

    [Fact]
    public void Disabled_it_never_opens()
    {
        var breaker = new WorkflowCircuitBreaker(Options.Create(new CircuitBreakerSettings { Enabled = false, MinimumThroughput = 2, FailureRatio = 0.5 }), new FakeTimeProvider());

        for (var i = 0; i < 10; i++)
        {
            breaker.RecordTransientFailure();
        }

        Assert.Equal(BreakerState.Closed, breaker.State);
    }

    [Theory]
    [InlineData("CircuitBreaker:MinimumThroughput", "1", "Setting 'CircuitBreaker:MinimumThroughput' = '1' is invalid")]
    [InlineData("Redelivery:TransientBudget", "-00:00:01", "Setting 'Redelivery:TransientBudget' = '-00:00:01' is invalid")]
    [InlineData("Redelivery:MaxDelay", "00:00:01", "MaxDelay")]
    public Task Workflow_refuses_a_bad_retry_or_breaker_setting(string key, string value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Workflow, new()
        {
            ["ServiceBus:ConnectionString"] = system.ServiceBus.ConnectionString,
            ["ServiceBus:QueueName"] = "no-such-queue",
            ["Backends:Delivery:BaseAddress"] = system.Delivery.BaseAddress.ToString(),
            ["Backends:Package:BaseAddress"] = system.Package.BaseAddress.ToString(),
            ["Backends:DroneScheduler:BaseAddress"] = system.DroneScheduler.BaseAddress.ToString(),
            ["Redelivery:BaseDelay"] = "00:00:02",
            [key] = value,
        }, expected);

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
