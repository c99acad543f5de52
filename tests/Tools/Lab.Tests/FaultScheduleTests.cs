using System.Collections.Concurrent;
using DroneDelivery.Lab.Chaos;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;
using Xunit;

namespace DroneDelivery.Lab.Tests;

public sealed class FaultScheduleTests
{
    private static readonly ChaosPlan Plan = new()
    {
        LoadDuration = TimeSpan.FromSeconds(100),
        Warmup = TimeSpan.FromSeconds(20),
        QuietTail = TimeSpan.FromSeconds(20),
        KillEvery = TimeSpan.FromSeconds(10),
        FaultWindow = TimeSpan.FromSeconds(8),
        RestartDelay = TimeSpan.FromSeconds(2),
    };

    [Fact]
    public void Every_other_fault_runs_once_in_its_own_slot_and_kills_alternate_between_workflow_and_backends_every_period()
    {
        var schedule = FaultSchedule.Build(Plan);

        var slotted = schedule.Where(f => FaultSchedule.SlottedFaults.Contains(f.Kind)).ToList();
        Assert.Equal(FaultSchedule.SlottedFaults, slotted.Select(f => f.Kind));
        // Fault phase 20–80 s, five slots of 12 s.
        Assert.Equal([20, 32, 44, 56, 68], slotted.Select(f => f.At.TotalSeconds));
        Assert.Equal(TimeSpan.FromSeconds(8), slotted.Single(f => f.Kind == FaultKind.CosmosErrors).Window);
        Assert.Equal(Plan.RestartDelay, slotted.Single(f => f.Kind == FaultKind.NodeLoss).Window);
        Assert.Equal(Plan.RestartDelay, slotted.Single(f => f.Kind == FaultKind.RestartRedis).Window);

        var kills = schedule.Where(f => f.Kind is FaultKind.KillWorkflow or FaultKind.KillBackend).ToList();
        Assert.Equal([25, 35, 45, 55, 65, 75], kills.Select(f => f.At.TotalSeconds));
        Assert.Equal(
            [FaultKind.KillWorkflow, FaultKind.KillBackend, FaultKind.KillWorkflow, FaultKind.KillBackend, FaultKind.KillWorkflow, FaultKind.KillBackend],
            kills.Select(f => f.Kind));
        Assert.All(schedule, f => Assert.InRange(f.At, Plan.Warmup, Plan.LoadDuration - Plan.QuietTail));
        Assert.Equal(schedule.OrderBy(f => f.At), schedule);
    }

    [Fact]
    public void A_load_too_short_for_every_fault_is_refused_naming_the_durations()
    {
        var plan = Plan with { LoadDuration = TimeSpan.FromSeconds(70) };

        Assert.Contains("leaves 30 s", plan.Problem(), StringComparison.Ordinal);
        Assert.Throws<ArgumentException>(() => FaultSchedule.Build(plan));
        Assert.NotNull((Plan with { KillEvery = TimeSpan.Zero }).Problem());
        Assert.Null(Plan.Problem());
    }

    [Fact]
    public async Task The_scheduler_starts_each_fault_at_its_time_on_the_time_provider_and_ends_it_after_its_window()
    {
        var time = new FakeTimeProvider();
        var injector = new RecordingInjector(time);
        var log = new ConcurrentQueue<string>();
        ScheduledFault[] schedule =
        [
            new(TimeSpan.FromSeconds(10), FaultKind.KillWorkflow, TimeSpan.FromSeconds(2)),
            new(TimeSpan.FromSeconds(11), FaultKind.CosmosErrors, TimeSpan.FromSeconds(5)),
        ];

        // Each step waits for the log line written once the fault's window timer is set, so the clock moves only then.
        var run = FaultScheduler.RunAsync(schedule, injector, time, log.Enqueue, CancellationToken.None);
        time.Advance(TimeSpan.FromSeconds(9.9));
        time.Advance(TimeSpan.FromSeconds(0.1));
        Assert.True(await Eventually.TrueAsync(() => log.Any(l => l.Contains("KillWorkflow at 10", StringComparison.Ordinal)), TimeSpan.FromSeconds(10)));
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.True(await Eventually.TrueAsync(() => log.Any(l => l.Contains("CosmosErrors at 11", StringComparison.Ordinal)), TimeSpan.FromSeconds(10)));
        time.Advance(TimeSpan.FromSeconds(1));
        Assert.True(await Eventually.TrueAsync(() => log.Any(l => l.Contains("KillWorkflow over at 12", StringComparison.Ordinal)), TimeSpan.FromSeconds(10)));
        Assert.False(run.IsCompleted);
        time.Advance(TimeSpan.FromSeconds(4));
        var records = await run.WaitAsync(TimeSpan.FromSeconds(10));

        // The times the injector saw: nothing started before its time, nothing ended before its window did.
        Assert.Equal(["start KillWorkflow at 10", "start CosmosErrors at 11", "end KillWorkflow at 12", "end CosmosErrors at 16"], injector.Events);
        Assert.Equal([(FaultKind.KillWorkflow, 10.0, 12.0, 1), (FaultKind.CosmosErrors, 11.0, 16.0, 0)],
            records.Select(r => (r.Kind, r.Started.TotalSeconds, r.Ended.TotalSeconds, r.ReplicasKilled)));
    }

    private sealed class RecordingInjector(FakeTimeProvider time) : IFaultInjector
    {
        private readonly ConcurrentQueue<string> _events = new();

        public IReadOnlyList<string> Events => [.. _events];

        public Task<(string Target, int ReplicasKilled)> StartAsync(ScheduledFault fault, CancellationToken cancellationToken)
        {
            _events.Enqueue($"start {fault.Kind} at {Now}");
            return Task.FromResult(("target", fault.Kind == FaultKind.KillWorkflow ? 1 : 0));
        }

        public Task EndAsync(ScheduledFault fault, CancellationToken cancellationToken)
        {
            _events.Enqueue($"end {fault.Kind} at {Now}");
            return Task.CompletedTask;
        }

        private double Now => (time.GetUtcNow() - time.Start).TotalSeconds;
    }
}
