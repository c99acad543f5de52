using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Tests;

public sealed class MachineCpuTests
{
    [Fact]
    public void The_aggregate_line_of_proc_stat_gives_busy_niced_and_steal_seconds()
    {
        // user nice system idle iowait irq softirq steal guest guest_nice, in 1/100 s
        var cpu = MachineCpu.Parse("cpu  1000 50 250 9000 30 7 13 40 0 0");

        Assert.NotNull(cpu);
        Assert.Equal(12.5, cpu.Value.Busy, precision: 6);
        Assert.Equal(0.5, cpu.Value.Niced, precision: 6);
        Assert.Equal(0.4, cpu.Value.Steal, precision: 6);
        Assert.Null(MachineCpu.Parse("cpu0 1 2 3 4 5 6 7 8"));
        Assert.Null(MachineCpu.Parse(null));
    }

    [Fact]
    public void This_machine_reports_its_cpu_time_and_it_grows()
    {
        var before = MachineCpu.Read();
        var until = DateTime.UtcNow.AddMilliseconds(300);
        while (DateTime.UtcNow < until)
        {
            // Busy for a while, so the machine's busy time must grow.
        }

        var after = MachineCpu.Read();

        Assert.NotNull(before);
        var spent = after!.Value - before!.Value;
        Assert.True(spent.Busy + spent.Niced > 0);
    }
}
