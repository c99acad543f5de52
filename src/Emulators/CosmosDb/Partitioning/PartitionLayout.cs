using System.Globalization;

namespace DroneDelivery.Emulators.CosmosDb.Partitioning;

/// <summary>One physical partition's slice of the EPK space, <c>[MinInclusive, MaxExclusive)</c>.</summary>
internal sealed record EpkRange(string MinInclusive, string MaxExclusive)
{
    public bool Contains(string epk) =>
        string.CompareOrdinal(epk, MinInclusive) >= 0 && string.CompareOrdinal(epk, MaxExclusive) < 0;

    public bool Overlaps(EpkRange other) =>
        string.CompareOrdinal(other.MinInclusive, MaxExclusive) < 0 && string.CompareOrdinal(MinInclusive, other.MaxExclusive) < 0;

}

/// <summary>
/// Splits the EPK space into equal slices, one per physical partition, with the boundaries the
/// service itself uses: for hash version 2, <c>floor(i × 2^126 / N)</c> as 32 hex digits (the top two
/// bits of every V2 EPK are clear); for version 1, the binary encoding of <c>floor(i × 2^32 / N)</c>.
/// </summary>
internal sealed class PartitionLayout
{
    private readonly string[] _lowerBounds;

    private PartitionLayout(IReadOnlyList<EpkRange> ranges)
    {
        Ranges = ranges;
        _lowerBounds = [.. ranges.Select(r => r.MinInclusive)];
    }

    public IReadOnlyList<EpkRange> Ranges { get; }

    public static PartitionLayout Create(int partitionCount, int hashVersion)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(partitionCount, 1);
        var bounds = new List<string> { EffectivePartitionKey.Minimum };
        for (var i = 1; i < partitionCount; i++)
        {
            bounds.Add(hashVersion == 1 ? V1Boundary(i, partitionCount) : V2Boundary(i, partitionCount));
        }

        bounds.Add(EffectivePartitionKey.Maximum);
        var ranges = new List<EpkRange>(partitionCount);
        for (var i = 0; i < partitionCount; i++)
        {
            ranges.Add(new EpkRange(bounds[i], bounds[i + 1]));
        }

        return new PartitionLayout(ranges);
    }

    /// <summary>The index of the partition whose range contains <paramref name="epk"/>.</summary>
    public int Locate(string epk)
    {
        var low = 0;
        var high = _lowerBounds.Length - 1;
        while (low < high)
        {
            var mid = (low + high + 1) / 2;
            if (string.CompareOrdinal(_lowerBounds[mid], epk) <= 0)
            {
                low = mid;
            }
            else
            {
                high = mid - 1;
            }
        }

        return low;
    }

    private static string V2Boundary(int index, int count)
    {
        var value = (UInt128.One << 126) / (UInt128)count * (UInt128)index
            + ((UInt128.One << 126) % (UInt128)count * (UInt128)index / (UInt128)count);
        return value.ToString("X32", CultureInfo.InvariantCulture);
    }

    private static string V1Boundary(int index, int count) =>
        EffectivePartitionKey.V1Boundary(Math.Floor(index * 4294967296.0 / count));
}
