using System.Diagnostics;
using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Tests;

/// <summary>The time a process's threads waited for a core, read from Linux on real processes.</summary>
public sealed class RunQueueMeterTests
{
    [Fact]
    public void Schedstat_gives_the_time_on_a_core_and_the_time_waiting_for_one()
    {
        var time = RunQueueMeter.Parse("2504000000 1250000000 311\n");

        Assert.Equal(TimeSpan.FromSeconds(2.504), time!.Value.Ran);
        Assert.Equal(TimeSpan.FromSeconds(1.25), time.Value.Waited);
        Assert.Null(RunQueueMeter.Parse("garbage"));
    }

    [Fact]
    public async Task Two_busy_processes_sharing_one_core_each_wait_about_as_long_as_they_run()
    {
        Assert.True(File.Exists("/usr/bin/taskset"), "taskset (Debian's util-linux) is needed to hold two processes to one core");
        using var first = Busy();
        using var second = Busy();
        try
        {
            var meter = new RunQueueMeter();
            int[] pids = [first.Id, second.Id];
            meter.Sample(pids);
            var total = default(RunQueueMeter.SchedTime);
            var clock = Stopwatch.StartNew();
            // Polls until they have run 2 s between them, however long a busy machine takes to give them that.
            while (total.Ran < TimeSpan.FromSeconds(2) && clock.Elapsed < TimeSpan.FromMinutes(1))
            {
                await Task.Delay(TimeSpan.FromMilliseconds(200), CancellationToken.None);
                total += meter.Sample(pids);
            }

            // One core for two always-runnable processes: each waits while the other runs (about 1 s per second
            // run); other work on that core only adds to the wait.
            Assert.True(total.Ran >= TimeSpan.FromSeconds(2), $"they ran {total.Ran.TotalSeconds:0.00} s in a minute");
            Assert.True(total.Waited >= total.Ran * 0.6, $"they ran {total.Ran.TotalSeconds:0.00} s and waited {total.Waited.TotalSeconds:0.00} s");
        }
        finally
        {
            first.Kill();
            second.Kill();
        }
    }

    /// <summary>A shell loop with no system calls, held to the machine's first core.</summary>
    private static Process Busy() =>
        Process.Start(new ProcessStartInfo("/usr/bin/taskset", ["-c", "0", "sh", "-c", "while :; do :; done"]))
        ?? throw new InvalidOperationException("taskset did not start");
}
