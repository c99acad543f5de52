using DroneDelivery.Lab.Measurement;
using Xunit;

namespace DroneDelivery.Lab.Tests;

public sealed class StallDetectorTests
{
    [Fact]
    public void Ticks_on_time_or_slightly_late_are_not_stalls_and_a_long_gap_is_reported_by_how_late_it_was()
    {
        var detector = new StallDetector(TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(0.25));
        detector.Start(TimeSpan.FromSeconds(10));

        Assert.Null(detector.Tick(TimeSpan.FromSeconds(11)));
        Assert.Null(detector.Tick(TimeSpan.FromSeconds(12.2)));
        Assert.Equal(3.5, detector.Tick(TimeSpan.FromSeconds(16.7))!.Value, precision: 6);
        // The next tick is measured from the late one, not from the schedule.
        Assert.Null(detector.Tick(TimeSpan.FromSeconds(17.7)));
    }
}
