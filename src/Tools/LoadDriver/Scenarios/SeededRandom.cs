namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>
/// Reproducible random choices keyed by (seed, request sequence, purpose) rather than drawn from a shared
/// generator: the same seed gives the same request for the same sequence number whatever the concurrency,
/// with no lock and no allocation.
/// </summary>
internal static class SeededRandom
{
    /// <summary>A 64-bit hash of the three keys (SplitMix64 finaliser over each in turn).</summary>
    public static ulong Hash(int seed, long sequence, int purpose)
    {
        var x = Mix((ulong)(uint)seed);
        x = Mix(x ^ (ulong)sequence);
        return Mix(x ^ (ulong)(uint)purpose);
    }

    /// <summary>An integer in [0, <paramref name="count"/>), without modulo bias worth measuring.</summary>
    public static int Below(ulong hash, int count) => (int)Math.BigMul(hash, (ulong)count, out _);

    /// <summary>A double in [0, 1).</summary>
    public static double Unit(ulong hash) => (hash >> 11) * (1.0 / (1UL << 53));

    private static ulong Mix(ulong x)
    {
        x += 0x9E3779B97F4A7C15UL;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9UL;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBUL;
        return x ^ (x >> 31);
    }
}
