using System.Numerics;

namespace DroneDelivery.LoadDriver.Histograms;

/// <summary>
/// A High Dynamic Range histogram of non-negative integer values (the load driver records
/// microseconds). It stands in for the HdrHistogram NuGet package, which this repository's package
/// mirror does not carry, and follows that design: values fall into log-linear buckets, each bucket
/// split into linear sub-buckets, so every recorded value is kept with a relative precision of
/// <c>10^-SignificantDigits</c> across the whole range from the lowest discernible to the highest
/// trackable value, in a fixed amount of memory and with constant-time recording.
/// Not thread-safe: callers serialise access (or record into one histogram per thread and merge).
/// </summary>
public sealed class HdrHistogram
{
    private readonly int _unitMagnitude;
    private readonly int _subBucketHalfCountMagnitude;
    private readonly int _subBucketCount;
    private readonly int _subBucketHalfCount;
    private readonly long _subBucketMask;
    private readonly int _leadingZeroCountBase;
    private readonly long[] _counts;
    private long _totalCount;
    private long _min = long.MaxValue;
    private long _max;
    private int _highestUsedIndex = -1;

    /// <param name="lowestDiscernibleValue">The smallest value told apart from 0 (at least 1).</param>
    /// <param name="highestTrackableValue">The largest value that can be recorded (at least twice the lowest).</param>
    /// <param name="significantDigits">Decimal digits of precision kept for every value, 0 to 5 (default 3: 0.1 %).</param>
    public HdrHistogram(long lowestDiscernibleValue, long highestTrackableValue, int significantDigits = 3)
    {
        if (lowestDiscernibleValue < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(lowestDiscernibleValue), lowestDiscernibleValue, "The lowest discernible value must be at least 1.");
        }

        if (highestTrackableValue < 2 * lowestDiscernibleValue)
        {
            throw new ArgumentOutOfRangeException(nameof(highestTrackableValue), highestTrackableValue, "The highest trackable value must be at least twice the lowest discernible value.");
        }

        if (significantDigits is < 0 or > 5)
        {
            throw new ArgumentOutOfRangeException(nameof(significantDigits), significantDigits, "Significant digits must be between 0 and 5.");
        }

        LowestDiscernibleValue = lowestDiscernibleValue;
        HighestTrackableValue = highestTrackableValue;
        SignificantDigits = significantDigits;

        // The smallest power of two of sub-buckets that resolves 2 * 10^digits distinct values within one bucket.
        var largestValueWithSingleUnitResolution = 2 * (long)Math.Pow(10, significantDigits);
        var subBucketCountMagnitude = 64 - BitOperations.LeadingZeroCount((ulong)(largestValueWithSingleUnitResolution - 1));
        _subBucketHalfCountMagnitude = Math.Max(subBucketCountMagnitude, 1) - 1;
        _unitMagnitude = BitOperations.Log2((ulong)lowestDiscernibleValue);
        if (_unitMagnitude + _subBucketHalfCountMagnitude > 61)
        {
            throw new ArgumentOutOfRangeException(nameof(lowestDiscernibleValue), lowestDiscernibleValue, "The lowest discernible value is too large for this many significant digits.");
        }

        _subBucketCount = 1 << (_subBucketHalfCountMagnitude + 1);
        _subBucketHalfCount = _subBucketCount / 2;
        _subBucketMask = ((long)_subBucketCount - 1) << _unitMagnitude;
        _leadingZeroCountBase = 64 - _unitMagnitude - _subBucketHalfCountMagnitude - 1;
        var bucketCount = BucketsNeededToCover(highestTrackableValue);
        _counts = new long[(bucketCount + 1) * _subBucketHalfCount];
    }

    public long LowestDiscernibleValue { get; }

    public long HighestTrackableValue { get; }

    public int SignificantDigits { get; }

    public long TotalCount => _totalCount;

    /// <summary>The smallest value recorded, exactly; 0 when empty.</summary>
    public long Min => _totalCount == 0 ? 0 : _min;

    /// <summary>The largest value recorded, exactly; 0 when empty.</summary>
    public long Max => _totalCount == 0 ? 0 : _max;

    /// <summary>Memory held by the counts, in bytes.</summary>
    public int FootprintBytes => _counts.Length * sizeof(long);

    public void RecordValue(long value) => RecordValueWithCount(value, 1);

    public void RecordValueWithCount(long value, long count)
    {
        if (value < 0 || value > HighestTrackableValue)
        {
            throw new ArgumentOutOfRangeException(nameof(value), value, $"Values must be between 0 and {HighestTrackableValue}.");
        }

        ArgumentOutOfRangeException.ThrowIfNegative(count);
        if (count == 0)
        {
            return;
        }

        var index = CountsIndexOf(value);
        _counts[index] += count;
        _totalCount += count;
        _highestUsedIndex = Math.Max(_highestUsedIndex, index);
        _min = Math.Min(_min, value);
        _max = Math.Max(_max, value);
    }

    /// <summary>
    /// Records <paramref name="value"/> and, when it exceeds <paramref name="expectedInterval"/>, the values
    /// <c>value - k * expectedInterval</c> down to the interval: the samples a client that sends every
    /// <paramref name="expectedInterval"/> would have seen had it kept sending while this response was
    /// outstanding. This corrects coordinated omission after the fact for a closed loop; an open-model
    /// driver that measures from the intended send time does not need it.
    /// </summary>
    public void RecordValueWithExpectedInterval(long value, long expectedInterval)
    {
        RecordValue(value);
        if (expectedInterval <= 0)
        {
            return;
        }

        for (var missing = value - expectedInterval; missing >= expectedInterval; missing -= expectedInterval)
        {
            RecordValue(missing);
        }
    }

    /// <summary>
    /// The value below or at which <paramref name="percentile"/> percent of recorded values fall: the highest
    /// value equivalent (within the precision) to the recorded value at that rank, clamped to the exact
    /// recorded minimum and maximum so a percentile never lies outside what was seen. 0 when empty.
    /// </summary>
    public long ValueAtPercentile(double percentile)
    {
        if (double.IsNaN(percentile))
        {
            throw new ArgumentOutOfRangeException(nameof(percentile), percentile, "The percentile must be a number between 0 and 100.");
        }

        if (_totalCount == 0)
        {
            return 0;
        }

        var (index, _) = IndexAtPercentile(percentile);
        return ReportedValueAt(index, percentile);
    }

    /// <summary>The mean of the recorded values, each counted at the middle of its equivalent range; 0 when empty.</summary>
    public double Mean
    {
        get
        {
            if (_totalCount == 0)
            {
                return 0;
            }

            double sum = 0;
            for (var i = 0; i <= _highestUsedIndex; i++)
            {
                if (_counts[i] != 0)
                {
                    sum += _counts[i] * (double)MedianEquivalentValue(ValueFromIndex(i));
                }
            }

            return sum / _totalCount;
        }
    }

    /// <summary>The standard deviation of the recorded values, on the same basis as <see cref="Mean"/>.</summary>
    public double StdDeviation
    {
        get
        {
            if (_totalCount == 0)
            {
                return 0;
            }

            var mean = Mean;
            double sumOfSquares = 0;
            for (var i = 0; i <= _highestUsedIndex; i++)
            {
                if (_counts[i] != 0)
                {
                    var deviation = MedianEquivalentValue(ValueFromIndex(i)) - mean;
                    sumOfSquares += _counts[i] * deviation * deviation;
                }
            }

            return Math.Sqrt(sumOfSquares / _totalCount);
        }
    }

    /// <summary>How many recorded values are equivalent to <paramref name="value"/> (fall in its sub-bucket).</summary>
    public long CountAtValue(long value)
    {
        if (value < 0 || value > HighestTrackableValue)
        {
            throw new ArgumentOutOfRangeException(nameof(value), value, $"Values must be between 0 and {HighestTrackableValue}.");
        }

        return _counts[CountsIndexOf(value)];
    }

    /// <summary>
    /// How many recorded values lie between <paramref name="low"/> and <paramref name="high"/>, both inclusive,
    /// to the histogram's precision (whole sub-buckets of both ends are counted).
    /// </summary>
    public long CountBetweenValues(long low, long high)
    {
        if (low < 0 || high > HighestTrackableValue || low > high)
        {
            throw new ArgumentOutOfRangeException(nameof(low), $"Need 0 <= low <= high <= {HighestTrackableValue} (got {low} and {high}).");
        }

        long count = 0;
        var last = Math.Min(CountsIndexOf(high), _highestUsedIndex);
        for (var i = CountsIndexOf(low); i <= last; i++)
        {
            count += _counts[i];
        }

        return count;
    }

    /// <summary>The smallest value that shares <paramref name="value"/>'s sub-bucket.</summary>
    public long LowestEquivalentValue(long value)
    {
        var bucketIndex = BucketIndexOf(value);
        return (long)SubBucketIndexOf(value, bucketIndex) << (bucketIndex + _unitMagnitude);
    }

    /// <summary>The largest value that shares <paramref name="value"/>'s sub-bucket.</summary>
    public long HighestEquivalentValue(long value) => LowestEquivalentValue(value) + SizeOfEquivalentValueRange(value) - 1;

    /// <summary>The middle of <paramref name="value"/>'s sub-bucket.</summary>
    public long MedianEquivalentValue(long value) => LowestEquivalentValue(value) + (SizeOfEquivalentValueRange(value) >> 1);

    /// <summary>The width of <paramref name="value"/>'s sub-bucket: values closer than this may be recorded as one.</summary>
    public long SizeOfEquivalentValueRange(long value)
    {
        var bucketIndex = BucketIndexOf(value);
        var subBucketIndex = SubBucketIndexOf(value, bucketIndex);
        var adjustedBucket = subBucketIndex >= _subBucketCount ? bucketIndex + 1 : bucketIndex;
        return 1L << (_unitMagnitude + adjustedBucket);
    }

    /// <summary>True when both values fall in the same sub-bucket, so the histogram cannot tell them apart.</summary>
    public bool ValuesAreEquivalent(long value1, long value2) => LowestEquivalentValue(value1) == LowestEquivalentValue(value2);

    /// <summary>
    /// Adds every value recorded in <paramref name="other"/>. Histograms of the same layout add counts
    /// directly; otherwise each of the other's sub-buckets is re-recorded at its representative value.
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">The other holds values above this one's highest trackable value.</exception>
    public void Add(HdrHistogram other)
    {
        ArgumentNullException.ThrowIfNull(other);
        if (other._totalCount == 0)
        {
            return;
        }

        if (other.Max > HighestTrackableValue)
        {
            throw new ArgumentOutOfRangeException(nameof(other), other.Max, $"The other histogram holds values above this one's highest trackable value {HighestTrackableValue}.");
        }

        var min = Math.Min(_min, other._min);
        var max = Math.Max(_max, other._max);
        if (HasSameLayoutAs(other))
        {
            for (var i = 0; i <= other._highestUsedIndex; i++)
            {
                _counts[i] += other._counts[i];
            }

            _totalCount += other._totalCount;
            _highestUsedIndex = Math.Max(_highestUsedIndex, other._highestUsedIndex);
        }
        else
        {
            for (var i = 0; i <= other._highestUsedIndex; i++)
            {
                if (other._counts[i] != 0)
                {
                    RecordValueWithCount(Math.Min(other.ValueFromIndex(i), HighestTrackableValue), other._counts[i]);
                }
            }
        }

        // Re-recording stores representative values; the exact extremes are known, so keep them.
        _min = min;
        _max = max;
    }

    /// <summary>A new histogram with the same layout and contents.</summary>
    public HdrHistogram Copy()
    {
        var copy = new HdrHistogram(LowestDiscernibleValue, HighestTrackableValue, SignificantDigits);
        copy.Add(this);
        return copy;
    }

    /// <summary>A new, empty histogram with the same layout.</summary>
    public HdrHistogram CreateEmptyCopy() => new(LowestDiscernibleValue, HighestTrackableValue, SignificantDigits);

    public void Reset()
    {
        if (_highestUsedIndex >= 0)
        {
            Array.Clear(_counts, 0, _highestUsedIndex + 1);
        }

        _totalCount = 0;
        _min = long.MaxValue;
        _max = 0;
        _highestUsedIndex = -1;
    }

    /// <summary>
    /// The percentile spectrum the HdrHistogram tools print: percentiles that close half the remaining
    /// distance to 100 in <paramref name="ticksPerHalfDistance"/> steps (0, 12.9, 24.2, ..., 50, ..., 75, ...),
    /// down to the last recorded value, then 100.
    /// </summary>
    public IReadOnlyList<PercentileValue> PercentileDistribution(int ticksPerHalfDistance = 5)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(ticksPerHalfDistance, 1);
        var points = new List<PercentileValue>();
        if (_totalCount == 0)
        {
            return points;
        }

        // Stop once one more tick would resolve less than a single recorded value.
        var lastUsefulPercentile = 100.0 * (1 - 1.0 / _totalCount);
        for (var tick = 0; ; tick++)
        {
            var percentile = 100.0 * (1 - Math.Pow(0.5, (double)tick / ticksPerHalfDistance));
            if (percentile > lastUsefulPercentile || tick > 64 * ticksPerHalfDistance)
            {
                break;
            }

            points.Add(PointAt(percentile));
        }

        points.Add(PointAt(100));
        return points;
    }

    internal static long CountAtPercentile(double percentile, long totalCount)
    {
        // Decimal keeps 99.9 % of 1000 at exactly 999 where double arithmetic gives 999.0000000000001.
        var count = (long)decimal.Ceiling((decimal)percentile * totalCount / 100m);
        return Math.Max(count, 1);
    }

    // The counts index holding the value of rank ceil(percentile * total / 100), and the number of values up to it.
    private (int Index, long Cumulative) IndexAtPercentile(double percentile)
    {
        var countAtPercentile = CountAtPercentile(Math.Clamp(percentile, 0, 100), _totalCount);
        long cumulative = 0;
        for (var i = 0; i <= _highestUsedIndex; i++)
        {
            cumulative += _counts[i];
            if (cumulative >= countAtPercentile)
            {
                return (i, cumulative);
            }
        }

        return (_highestUsedIndex, cumulative);
    }

    private PercentileValue PointAt(double percentile)
    {
        var (index, cumulative) = IndexAtPercentile(percentile);
        return new PercentileValue(percentile, ReportedValueAt(index, percentile), cumulative);
    }

    // Percentile 0 is the lowest value of its sub-bucket (as in HdrHistogram), every other the highest;
    // both clamped to the exact extremes.
    private long ReportedValueAt(int index, double percentile)
    {
        var value = ValueFromIndex(index);
        var equivalent = percentile <= 0 ? LowestEquivalentValue(value) : HighestEquivalentValue(value);
        return Math.Clamp(equivalent, Min, Max);
    }

    private bool HasSameLayoutAs(HdrHistogram other) =>
        other._unitMagnitude == _unitMagnitude
        && other._subBucketHalfCountMagnitude == _subBucketHalfCountMagnitude
        && other._highestUsedIndex < _counts.Length;

    private int BucketsNeededToCover(long value)
    {
        var smallestUntrackableValue = (long)_subBucketCount << _unitMagnitude;
        var bucketsNeeded = 1;
        while (smallestUntrackableValue <= value)
        {
            if (smallestUntrackableValue > long.MaxValue / 2)
            {
                return bucketsNeeded + 1;
            }

            smallestUntrackableValue <<= 1;
            bucketsNeeded++;
        }

        return bucketsNeeded;
    }

    private int BucketIndexOf(long value) =>
        _leadingZeroCountBase - BitOperations.LeadingZeroCount((ulong)(value | _subBucketMask));

    private int SubBucketIndexOf(long value, int bucketIndex) => (int)((ulong)value >> (bucketIndex + _unitMagnitude));

    private int CountsIndexOf(long value)
    {
        var bucketIndex = BucketIndexOf(value);
        var subBucketIndex = SubBucketIndexOf(value, bucketIndex);
        // Bucket 0 uses all its sub-buckets; every higher bucket only its upper half (the lower half
        // would repeat values the previous bucket already resolves more finely).
        return ((bucketIndex + 1) << _subBucketHalfCountMagnitude) + (subBucketIndex - _subBucketHalfCount);
    }

    private long ValueFromIndex(int index)
    {
        var bucketIndex = (index >> _subBucketHalfCountMagnitude) - 1;
        var subBucketIndex = (index & (_subBucketHalfCount - 1)) + _subBucketHalfCount;
        if (bucketIndex < 0)
        {
            subBucketIndex -= _subBucketHalfCount;
            bucketIndex = 0;
        }

        return (long)subBucketIndex << (bucketIndex + _unitMagnitude);
    }
}

/// <summary>One point of a percentile spectrum: the value at <see cref="Percentile"/> and how many values lie at or below it.</summary>
public readonly record struct PercentileValue(double Percentile, long Value, long CountAtOrBelow);
