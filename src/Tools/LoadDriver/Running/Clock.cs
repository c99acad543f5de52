namespace DroneDelivery.LoadDriver.Running;

/// <summary>
/// The one clock the driver measures and waits with: monotonic timestamps from a <see cref="TimeProvider"/>
/// (the system's in production), in 100 ns ticks whatever the provider's own frequency, and the provider
/// itself for every wait, timer and time-out that decides what the run does.
/// </summary>
internal sealed class Clock(TimeProvider time)
{
    /// <summary>The provider behind the waits, timers and time-outs.</summary>
    public TimeProvider Time { get; } = time;

    /// <summary>Now, in 100 ns ticks on the provider's monotonic clock.</summary>
    public long Now => Time.GetElapsedTime(0, Time.GetTimestamp()).Ticks;

    /// <summary>Wall-clock time, for the report only.</summary>
    public DateTimeOffset UtcNow => Time.GetUtcNow();

    public static long ToMicroseconds(long ticks) => ticks / TimeSpan.TicksPerMicrosecond;

    public static long FromMicroseconds(long microseconds) => microseconds * TimeSpan.TicksPerMicrosecond;

    public static long FromTimeSpan(TimeSpan span) => span.Ticks;

    public static long FromSeconds(double seconds) => (long)(seconds * TimeSpan.TicksPerSecond);

    public static double ToSeconds(long ticks) => (double)ticks / TimeSpan.TicksPerSecond;

    public static TimeSpan ToTimeSpan(long ticks) => TimeSpan.FromTicks(ticks);
}
