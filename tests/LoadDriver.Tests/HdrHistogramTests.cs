using DroneDelivery.LoadDriver.Histograms;

namespace DroneDelivery.LoadDriver.Tests;

public class HdrHistogramTests
{
    private const long Hour = 3_600_000_000; // in microseconds

    [Fact]
    public void Percentiles_of_a_uniform_distribution_are_the_exact_ranks_within_precision()
    {
        var histogram = new HdrHistogram(1, Hour, 3);
        for (long value = 1; value <= 100_000; value++)
        {
            histogram.RecordValue(value);
        }

        Assert.Equal(100_000, histogram.TotalCount);
        Assert.Equal(1, histogram.Min);
        Assert.Equal(100_000, histogram.Max);
        foreach (var percentile in new[] { 50.0, 90, 99, 99.9, 99.99 })
        {
            // The value of rank ceil(p * N / 100) is that rank itself here; the histogram reports the top of
            // its sub-bucket, never above the largest value recorded.
            var exact = (long)Math.Ceiling(percentile * 100_000 / 100);
            Assert.Equal(Math.Min(histogram.HighestEquivalentValue(exact), 100_000), histogram.ValueAtPercentile(percentile));
            Assert.InRange(histogram.ValueAtPercentile(percentile), exact, exact * 1.001);
        }

        Assert.Equal(100_000, histogram.ValueAtPercentile(100));
        Assert.Equal(1, histogram.ValueAtPercentile(0));
        Assert.InRange(histogram.Mean, 50_000.5 * 0.999, 50_000.5 * 1.001);
        Assert.InRange(histogram.StdDeviation, 28_867.5 * 0.999, 28_867.5 * 1.001);
    }

    [Fact]
    public void Values_below_the_first_bucket_boundary_are_kept_exactly()
    {
        var histogram = new HdrHistogram(1, Hour, 3);
        for (long value = 0; value < 2048; value++)
        {
            histogram.RecordValue(value);
            Assert.Equal(value, histogram.LowestEquivalentValue(value));
            Assert.Equal(value, histogram.HighestEquivalentValue(value));
        }

        Assert.Equal(1023, histogram.ValueAtPercentile(50));
        Assert.Equal(2027, histogram.ValueAtPercentile(99));
    }

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(5)]
    public void Every_percentile_is_within_the_significant_digits_of_the_exact_value(int digits)
    {
        var histogram = new HdrHistogram(1, Hour, digits);
        var random = new Random(digits);
        var values = new long[20_000];
        for (var i = 0; i < values.Length; i++)
        {
            // Log-uniform from 1 µs to an hour, so every bucket gets values.
            values[i] = (long)Math.Exp(random.NextDouble() * Math.Log(Hour));
            histogram.RecordValue(values[i]);
        }

        Array.Sort(values);
        var tolerance = Math.Pow(10, -digits);
        foreach (var percentile in new[] { 1.0, 10, 25, 50, 75, 90, 99, 99.9, 99.99 })
        {
            var exact = values[(int)Math.Ceiling(percentile * values.Length / 100) - 1];
            var reported = histogram.ValueAtPercentile(percentile);
            Assert.InRange(reported, exact, exact + Math.Max(exact * tolerance, 0));
        }

        foreach (var value in values)
        {
            Assert.InRange(histogram.HighestEquivalentValue(value) - value, 0, value * tolerance);
            Assert.InRange(value - histogram.LowestEquivalentValue(value), 0, value * tolerance);
        }
    }

    [Fact]
    public void Recording_with_an_expected_interval_back_fills_what_a_stalled_client_missed()
    {
        // The classic case: 10,000 responses of 1 ms every 10 ms, then one stall of 100 s.
        var raw = new HdrHistogram(1, Hour, 3);
        var corrected = new HdrHistogram(1, Hour, 3);
        for (var i = 0; i < 10_000; i++)
        {
            raw.RecordValue(1_000);
            corrected.RecordValueWithExpectedInterval(1_000, 10_000);
        }

        raw.RecordValue(100_000_000);
        corrected.RecordValueWithExpectedInterval(100_000_000, 10_000);

        Assert.Equal(10_001, raw.TotalCount);
        Assert.Equal(raw.HighestEquivalentValue(1_000), raw.ValueAtPercentile(99.99));

        // The stall adds 100,000,000 - k * 10,000 for k = 1..9,999: 10,000 values spread evenly up to 100 s.
        Assert.Equal(20_000, corrected.TotalCount);
        Assert.Equal(corrected.HighestEquivalentValue(1_000), corrected.ValueAtPercentile(50));
        AssertWithinPrecision(50_000_000, corrected.ValueAtPercentile(75));
        AssertWithinPrecision(80_000_000, corrected.ValueAtPercentile(90));
        AssertWithinPrecision(98_000_000, corrected.ValueAtPercentile(99));
        Assert.Equal(100_000_000, corrected.Max);
    }

    [Fact]
    public void Adding_histograms_gives_the_same_result_as_recording_everything_in_one()
    {
        var random = new Random(7);
        var first = new HdrHistogram(1, Hour, 3);
        var second = new HdrHistogram(1, Hour, 3);
        var all = new HdrHistogram(1, Hour, 3);
        for (var i = 0; i < 10_000; i++)
        {
            var value = random.NextInt64(1, 10_000_000);
            (i % 3 == 0 ? first : second).RecordValue(value);
            all.RecordValue(value);
        }

        first.Add(second);

        Assert.Equal(all.TotalCount, first.TotalCount);
        Assert.Equal(all.Min, first.Min);
        Assert.Equal(all.Max, first.Max);
        Assert.Equal(all.Mean, first.Mean, 6);
        Assert.Equal(all.PercentileDistribution(), first.PercentileDistribution());
    }

    [Fact]
    public void Adding_a_histogram_of_another_layout_keeps_its_values_within_its_precision()
    {
        var coarse = new HdrHistogram(1, Hour, 2);
        foreach (var value in new long[] { 5, 1_234, 98_765, 5_000_000 })
        {
            coarse.RecordValue(value);
        }

        var fine = new HdrHistogram(1, Hour, 3);
        fine.Add(coarse);

        Assert.Equal(4, fine.TotalCount);
        Assert.Equal(5, fine.Min);
        Assert.Equal(5_000_000, fine.Max);
        AssertWithinPrecision(1_234, fine.ValueAtPercentile(50), digits: 2);
        AssertWithinPrecision(98_765, fine.ValueAtPercentile(75), digits: 2);
    }

    [Fact]
    public void Percentile_ranks_have_no_floating_point_off_by_one()
    {
        // 99.9 / 100 * 1000 is 999.0000000000001 in doubles; the rank must still be 999.
        Assert.Equal(999, HdrHistogram.CountAtPercentile(99.9, 1000));
        Assert.Equal(1, HdrHistogram.CountAtPercentile(0, 1000));

        var histogram = new HdrHistogram(1, Hour, 3);
        for (long value = 1; value <= 1000; value++)
        {
            histogram.RecordValue(value);
        }

        Assert.Equal(999, histogram.ValueAtPercentile(99.9));
    }

    [Fact]
    public void The_percentile_distribution_runs_from_the_minimum_to_the_maximum()
    {
        var histogram = new HdrHistogram(1, Hour, 3);
        for (long value = 1; value <= 1000; value++)
        {
            histogram.RecordValue(value * 1000);
        }

        var points = histogram.PercentileDistribution();

        Assert.Equal(0, points[0].Percentile);
        Assert.Equal(1000, points[0].Value);
        Assert.Equal(100, points[^1].Percentile);
        Assert.Equal(1_000_000, points[^1].Value);
        Assert.Equal(1000, points[^1].CountAtOrBelow);
        Assert.Contains(points, p => p.Percentile == 50);
        Assert.Contains(points, p => p.Percentile == 75);
        Assert.True(points.Zip(points.Skip(1)).All(pair => pair.First.Value <= pair.Second.Value && pair.First.Percentile < pair.Second.Percentile));
    }

    [Fact]
    public void Counts_between_values_include_both_ends()
    {
        var histogram = new HdrHistogram(1, Hour, 3);
        for (long value = 1; value <= 1000; value++)
        {
            histogram.RecordValue(value);
        }

        Assert.Equal(1000, histogram.CountBetweenValues(0, Hour));
        Assert.Equal(101, histogram.CountBetweenValues(100, 200));
        Assert.Equal(1, histogram.CountBetweenValues(1000, 1000));
        Assert.Equal(0, histogram.CountBetweenValues(1001, Hour));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.CountBetweenValues(10, 5));
    }

    [Fact]
    public void Reset_empties_the_histogram()
    {
        var histogram = new HdrHistogram(1, Hour, 3);
        histogram.RecordValue(42);
        histogram.RecordValue(4_200_000);

        histogram.Reset();

        Assert.Equal(0, histogram.TotalCount);
        Assert.Equal(0, histogram.Max);
        Assert.Equal(0, histogram.ValueAtPercentile(99));
        Assert.Equal(0, histogram.CountAtValue(42));
        histogram.RecordValue(7);
        Assert.Equal(7, histogram.ValueAtPercentile(100));
    }

    [Fact]
    public void A_larger_lowest_discernible_value_groups_values_by_its_unit()
    {
        // The unit is the largest power of two not above the lowest discernible value: 512 for 1000.
        var histogram = new HdrHistogram(1000, Hour, 3);
        histogram.RecordValue(1_100);
        histogram.RecordValue(1_500);

        Assert.True(histogram.ValuesAreEquivalent(1_100, 1_500));
        Assert.False(histogram.ValuesAreEquivalent(1_500, 1_600));
        Assert.Equal(2, histogram.CountAtValue(1_024));
        Assert.Equal(512, histogram.SizeOfEquivalentValueRange(1_500));
    }

    [Fact]
    public void Values_outside_the_trackable_range_are_rejected()
    {
        var histogram = new HdrHistogram(1, 1_000_000, 3);

        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.RecordValue(-1));
        Assert.Throws<ArgumentOutOfRangeException>(() => histogram.RecordValue(1_000_001));
        histogram.RecordValue(1_000_000);
        Assert.Equal(1_000_000, histogram.Max);
    }

    [Theory]
    [InlineData(0, 1000, 3)]
    [InlineData(10, 19, 3)]
    [InlineData(1, 1000, 6)]
    [InlineData(1, 1000, -1)]
    public void Invalid_layouts_are_rejected(long lowest, long highest, int digits)
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new HdrHistogram(lowest, highest, digits));
    }

    [Fact]
    public void The_footprint_is_fixed_by_the_layout_not_the_values()
    {
        var histogram = new HdrHistogram(1, Hour, 3);
        var before = histogram.FootprintBytes;
        for (var i = 0; i < 100_000; i++)
        {
            histogram.RecordValue(i * 1000L);
        }

        Assert.Equal(before, histogram.FootprintBytes);
        // 2048 sub-buckets (3 digits), buckets up to an hour: (22 + 1) * 1024 counts of 8 bytes.
        Assert.Equal(23 * 1024 * 8, before);
    }

    private static void AssertWithinPrecision(long expected, long actual, int digits = 3) =>
        Assert.InRange(actual, expected * (1 - Math.Pow(10, -digits)), expected * (1 + Math.Pow(10, -digits)));
}
