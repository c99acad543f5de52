using HdrHistogram;

namespace DroneDelivery.LoadDriver.Running;

/// <summary>The one histogram layout the driver records latencies in: microseconds, 1 µs to a day, 3 significant digits.</summary>
public static class LatencyHistograms
{
    public const long HighestMicroseconds = 24L * 60 * 60 * 1_000_000;

    public static HistogramBase Create() => new LongHistogram(1, HighestMicroseconds, 3);

    /// <summary>Microseconds between two timestamps, clamped to what the layout can hold.</summary>
    internal static long Microseconds(long fromTimestamp, long toTimestamp) =>
        Math.Clamp(Clock.ToMicroseconds(toTimestamp - fromTimestamp), 0, HighestMicroseconds);

    /// <summary>The smallest value recorded (within the histogram's precision), 0 when empty; the package reports only the maximum.</summary>
    public static long GetMinValue(this HistogramBase histogram) =>
        histogram.TotalCount == 0 ? 0 : histogram.LowestEquivalentValue(histogram.RecordedValues().First().ValueIteratedTo);

    /// <summary>How many recorded values lie above <paramref name="value"/> (beyond its equivalence range).</summary>
    public static long CountAbove(this HistogramBase histogram, long value) =>
        histogram.RecordedValues().Where(v => v.ValueIteratedTo > histogram.HighestEquivalentValue(value)).Sum(v => v.CountAtValueIteratedTo);
}
