using System.Diagnostics;

namespace DroneDelivery.LoadDriver.Running;

/// <summary>Monotonic time from <see cref="Stopwatch"/> timestamps, the only clock the driver measures with.</summary>
internal static class Clock
{
    private static readonly double s_microsecondsPerTick = 1_000_000.0 / Stopwatch.Frequency;

    public static long Now => Stopwatch.GetTimestamp();

    public static long ToMicroseconds(long ticks) => (long)(ticks * s_microsecondsPerTick);

    public static long FromMicroseconds(long microseconds) => (long)(microseconds / s_microsecondsPerTick);

    public static long FromTimeSpan(TimeSpan span) => (long)(span.TotalSeconds * Stopwatch.Frequency);

    public static long FromSeconds(double seconds) => (long)(seconds * Stopwatch.Frequency);

    public static double ToSeconds(long ticks) => (double)ticks / Stopwatch.Frequency;

    public static TimeSpan ToTimeSpan(long ticks) => TimeSpan.FromSeconds(ToSeconds(ticks));
}
