using DroneDelivery.LoadDriver.Histograms;

namespace DroneDelivery.LoadDriver.Running;

/// <summary>The one histogram layout the driver records latencies in: microseconds, 1 µs to a day, 3 significant digits.</summary>
internal static class LatencyHistograms
{
    public const long HighestMicroseconds = 24L * 60 * 60 * 1_000_000;

    public static HdrHistogram Create() => new(1, HighestMicroseconds, 3);

    /// <summary>Microseconds between two timestamps, clamped to what the layout can hold.</summary>
    public static long Microseconds(long fromTimestamp, long toTimestamp) =>
        Math.Clamp(Clock.ToMicroseconds(toTimestamp - fromTimestamp), 0, HighestMicroseconds);
}
