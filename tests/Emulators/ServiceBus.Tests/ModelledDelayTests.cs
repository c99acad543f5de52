using System.Diagnostics;
using DroneDelivery.Emulators.Hosting;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>The emulators' injected latency is a floor, even on a clock whose timers fire early.</summary>
public sealed class ModelledDelayTests
{
    [Fact]
    public async Task A_latency_is_never_cut_short_by_a_timer_that_fires_early()
    {
        var clock = Stopwatch.StartNew();

        await ModelledDelay.AtLeastAsync(TimeSpan.FromMilliseconds(60), new EarlyTimers(TimeSpan.FromMilliseconds(20)));

        Assert.True(clock.Elapsed >= TimeSpan.FromMilliseconds(60), $"took {clock.Elapsed.TotalMilliseconds:0} ms");
    }

    [Fact]
    public async Task No_latency_is_no_wait()
    {
        var task = ModelledDelay.AtLeastAsync(TimeSpan.Zero, new EarlyTimers(TimeSpan.FromMilliseconds(20)));

        Assert.True(task.IsCompletedSuccessfully);
        await task;
    }

    /// <summary>The system's clock, whose timers fire <paramref name="early"/> before they are due (as a coarse clock tick may).</summary>
    private sealed class EarlyTimers(TimeSpan early) : TimeProvider
    {
        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period) =>
            System.CreateTimer(callback, state, dueTime > early ? dueTime - early : TimeSpan.Zero, period);
    }
}
