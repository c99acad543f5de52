using DroneDelivery.LocalProcesses;

namespace DroneDelivery.LocalProcesses.Tests;

public class FreePortTests
{
    [Fact]
    public void A_port_below_the_ephemeral_range_is_never_handed_out_twice_by_one_process()
    {
        // Random picks from ~20,000 free ports meet again within a few hundred draws (the birthday
        // bound), long before anyone binds them; two services of one render once got the same one.
        var ports = Enumerable.Range(0, 2_000).Select(_ => FreePort.NextOutsideEphemeralRange()).ToList();

        Assert.Equal(ports.Count, ports.Distinct().Count());
    }

    [Fact]
    public void An_ephemeral_port_is_never_handed_out_twice_by_one_process()
    {
        var ports = Enumerable.Range(0, 500).Select(_ => FreePort.Next()).ToList();

        Assert.Equal(ports.Count, ports.Distinct().Count());
    }
}
