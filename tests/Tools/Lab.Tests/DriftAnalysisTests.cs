using DroneDelivery.Lab.Soak;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// How the soak decides, on signals whose shape is known: sampled every 5 s over 10 minutes with a
/// 2-minute warm-up, as <c>soak --duration 00:10:00</c> samples them, with seeded noise.
/// </summary>
public sealed class DriftAnalysisTests
{
    private static readonly TimeSpan Duration = TimeSpan.FromMinutes(10);
    private static readonly TimeSpan WarmUp = DriftAnalysis.DefaultWarmUp(Duration);

    [Fact]
    public void A_flat_noisy_working_set_is_no_drift()
    {
        var verdict = Decide(Series(DriftSignalKind.WorkingSet, "workflow", t => 200, noise: 8));

        Assert.Equal(0, verdict.ExitCode);
        Assert.StartsWith("no drift found", verdict.Summary, StringComparison.Ordinal);
    }

    [Fact]
    public void A_working_set_growing_300_MB_an_hour_is_named_with_its_rate()
    {
        var verdict = Decide(Series(DriftSignalKind.WorkingSet, "delivery", t => 150 + (300.0 / 3600 * t), noise: 4));

        var finding = Assert.Single(verdict.Growing);
        Assert.Equal(1, verdict.ExitCode);
        Assert.InRange(300, finding.Whole!.SlopeLow * 3600, finding.Whole.SlopeHigh * 3600);
        Assert.InRange(finding.PerHour, 250, 350);
        Assert.Contains("delivery working set grows", verdict.Summary, StringComparison.Ordinal);
        Assert.Contains("MB/h", verdict.Summary, StringComparison.Ordinal);
    }

    [Fact]
    public void Growth_during_the_warm_up_only_is_no_drift()
    {
        // JIT, pools and the first collections: 120 MB more in the first minute, flat after it.
        var verdict = Decide(Series(DriftSignalKind.WorkingSet, "gateway", t => 100 + (120 * Math.Min(1, t / 60)), noise: 3));

        Assert.Equal(0, verdict.ExitCode);
    }

    [Fact]
    public void A_level_settling_towards_a_plateau_is_no_drift()
    {
        // Rising through the first half of the steady state, then flat: the later half's slope is not above zero.
        var verdict = Decide(Series(DriftSignalKind.WorkingSet, "package", t => 200 + (60 * (1 - Math.Exp(-(t - 120) / 40))), noise: 2));

        Assert.Equal(0, verdict.ExitCode);
    }

    [Fact]
    public void A_slope_below_the_material_growth_is_no_drift_however_sure()
    {
        // 10 MB/h on 400 MB, without noise: certain, but a tenth of the level per hour is 40 MB/h.
        var verdict = Decide(Series(DriftSignalKind.WorkingSet, "dronescheduler", t => 400 + (10.0 / 3600 * t), noise: 0));

        var finding = Assert.Single(verdict.Findings);
        Assert.True(finding.Whole!.SlopeLow > 0);
        Assert.False(finding.Grows);
        Assert.Equal(0, verdict.ExitCode);
    }

    [Fact]
    public void A_growing_backlog_and_p99_are_named_and_a_spiky_thread_pool_queue_is_not()
    {
        var random = new Random(7);
        var verdict = Decide(
            Series(DriftSignalKind.QueueDepth, "deliveryrequests", t => Math.Max(0, 2 * (t - 60)), noise: 20),
            Series(DriftSignalKind.LatencyP99, "requests", t => 80 + (0.1 * t), noise: 15),
            Series(DriftSignalKind.ThreadPoolQueue, "workflow", t => random.Next(20) == 0 ? random.Next(1, 40) : 0, noise: 0));

        Assert.Equal(["deliveryrequests queue depth", "requests p99 latency"], verdict.Growing.Select(f => f.Series.Name));
        Assert.Contains("messages/h", verdict.Summary, StringComparison.Ordinal);
        Assert.DoesNotContain("thread-pool", verdict.Summary, StringComparison.Ordinal);
    }

    [Fact]
    public void A_store_growing_with_the_data_written_is_reported_not_counted_as_drift()
    {
        var series = SoakSignals.Series(
            [Series(DriftSignalKind.WorkingSet, "redis", t => 90 + (260.0 / 3600 * t), noise: 1), Series(DriftSignalKind.WorkingSet, "workflow", t => 150, noise: 3)],
            [],
            0,
            []);

        var verdict = DriftAnalysis.Decide(series, WarmUp, Duration);

        Assert.Equal(0, verdict.ExitCode);
        Assert.Equal("redis", Assert.Single(verdict.StoresGrowing).Series.Subject);
        Assert.StartsWith("no drift found", verdict.Summary, StringComparison.Ordinal);
        Assert.Contains("stores holding the data the load writes: redis working set grows", verdict.Summary, StringComparison.Ordinal);
    }

    [Fact]
    public void Too_few_samples_in_the_steady_state_are_inconclusive()
    {
        var verdict = Decide(new DriftSeries(DriftSignalKind.WorkingSet, "redis", [(30, 10), (300, 11), (590, 12)]));

        Assert.False(Assert.Single(verdict.Findings).Measured);
        Assert.Equal(4, verdict.ExitCode);
        Assert.StartsWith("inconclusive", verdict.Summary, StringComparison.Ordinal);
    }

    [Fact]
    public void The_default_warm_up_is_a_fifth_at_least_a_minute_at_most_half()
    {
        Assert.Equal(TimeSpan.FromMinutes(2), DriftAnalysis.DefaultWarmUp(TimeSpan.FromMinutes(10)));
        Assert.Equal(TimeSpan.FromMinutes(1), DriftAnalysis.DefaultWarmUp(TimeSpan.FromMinutes(3)));
        Assert.Equal(TimeSpan.FromSeconds(45), DriftAnalysis.DefaultWarmUp(TimeSpan.FromSeconds(90)));
    }

    [Theory]
    [InlineData(1, 12.706)]
    [InlineData(10, 2.228)]
    [InlineData(30, 2.042)]
    [InlineData(31, 2.0395)]
    [InlineData(120, 1.980)]
    [InlineData(100_000, 1.960)]
    public void The_t_quantile_is_students(int degreesOfFreedom, double expected) =>
        Assert.InRange(LinearTrend.TQuantile95(degreesOfFreedom), expected - 0.001, expected + 0.001);

    [Fact]
    public void The_fitted_interval_holds_the_true_slope_about_95_times_in_100()
    {
        var held = 0;
        for (var seed = 0; seed < 400; seed++)
        {
            var random = new Random(seed);
            var points = Enumerable.Range(0, 12).Select(i => ((double)i, 3 + (0.5 * i) + Normal(random))).ToList();
            var trend = LinearTrend.Fit(points)!;
            held += trend.SlopeLow <= 0.5 && 0.5 <= trend.SlopeHigh ? 1 : 0;
        }

        Assert.InRange(held, 365, 392);
    }

    private static SoakVerdict Decide(params DriftSeries[] series) => DriftAnalysis.Decide(series, WarmUp, Duration);

    /// <summary>A signal sampled every 5 s for the whole soak: <paramref name="shape"/> plus seeded normal noise of that standard deviation.</summary>
    private static DriftSeries Series(DriftSignalKind kind, string subject, Func<double, double> shape, double noise)
    {
        var random = new Random(subject.Length);
        return new DriftSeries(kind, subject, [.. Enumerable.Range(0, (int)(Duration.TotalSeconds / 5)).Select(i => (i * 5.0, shape(i * 5.0) + (noise * Normal(random))))]);
    }

    private static double Normal(Random random) =>
        Math.Sqrt(-2 * Math.Log(1 - random.NextDouble())) * Math.Cos(2 * Math.PI * random.NextDouble());
}
