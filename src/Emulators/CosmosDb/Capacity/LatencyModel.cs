using DroneDelivery.Emulators.CosmosDb.Configuration;

namespace DroneDelivery.Emulators.CosmosDb.Capacity;

/// <summary>
/// The account's latency model: the settings every container without its own follows (replaceable at run
/// time) and the random source of the exponentially distributed delays.
/// </summary>
internal sealed class LatencyModel(LatencyOptions settings, int? seed)
{
    private readonly Lock _sync = new();
    private readonly Random _random = seed is { } value ? new Random(value) : new Random();
    private LatencyOptions _settings = settings;

    /// <summary>The account-wide settings: the start-up options' object until <see cref="Replace"/> swaps in a copy of others.</summary>
    public LatencyOptions Settings => Volatile.Read(ref _settings);

    public void Replace(LatencyOptions settings) => Volatile.Write(ref _settings, Copy(settings));

    /// <summary>
    /// How long a served request takes under <paramref name="settings"/>: for each physical partition it
    /// visited, the fixed delay and an exponential draw, plus the per-document delay.
    /// </summary>
    public TimeSpan Served(LatencyOptions settings, int partitions, int documents)
    {
        var milliseconds = (settings.FixedMilliseconds * partitions) + (settings.PerDocumentMilliseconds * documents);
        if (settings.ExponentialMeanMilliseconds > 0)
        {
            lock (_sync)
            {
                for (var i = 0; i < partitions; i++)
                {
                    // Inverse transform: 1 − U is in (0, 1], so the logarithm is finite.
                    milliseconds -= settings.ExponentialMeanMilliseconds * Math.Log(1 - _random.NextDouble());
                }
            }
        }

        return Milliseconds(milliseconds);
    }

    public static TimeSpan Throttled(LatencyOptions settings) => Milliseconds(settings.ThrottledMilliseconds);

    public static TimeSpan Milliseconds(double milliseconds) => TimeSpan.FromTicks((long)(milliseconds * TimeSpan.TicksPerMillisecond));

    private static LatencyOptions Copy(LatencyOptions settings) => new()
    {
        FixedMilliseconds = settings.FixedMilliseconds,
        ExponentialMeanMilliseconds = settings.ExponentialMeanMilliseconds,
        PerDocumentMilliseconds = settings.PerDocumentMilliseconds,
        ThrottledMilliseconds = settings.ThrottledMilliseconds,
    };
}
