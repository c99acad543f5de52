using System.Globalization;
using System.Text.Json;
using System.Text.Json.Serialization;
using DroneDelivery.LoadDriver.Running;
using HdrHistogram;

namespace DroneDelivery.LoadDriver.Results;

/// <summary>
/// The files a run writes, and the form they can be read back in: <c>result.json</c> (this record) plus
/// <c>timeseries.csv</c>, <c>percentiles.csv</c> and <c>status-counts.csv</c>. Latencies are milliseconds.
/// </summary>
public sealed record LoadReport
{
    public const string JsonFileName = "result.json";
    public const string TimeSeriesFileName = "timeseries.csv";
    public const string PercentilesFileName = "percentiles.csv";
    public const string StatusCountsFileName = "status-counts.csv";

    public required string Scenario { get; init; }

    public required string Target { get; init; }

    public required ShapeReport Shape { get; init; }

    public required BoundsReport Bounds { get; init; }

    public required DateTimeOffset StartedAt { get; init; }

    public required double LoadSeconds { get; init; }

    public required double TotalSeconds { get; init; }

    public required StopReason StopReason { get; init; }

    public required LoadTotals Totals { get; init; }

    public required IReadOnlyDictionary<string, long> StatusCounts { get; init; }

    /// <summary>Request latency (see <see cref="LoadTestResult.RequestLatency"/>).</summary>
    public required LatencyReport Latency { get; init; }

    /// <summary>Open model only: lateness of sends against the schedule.</summary>
    public LatencyReport? SendLag { get; init; }

    /// <summary>delivery-requests with polling only.</summary>
    public CompletionReport? Completion { get; init; }

    public required IReadOnlyList<string> ErrorSamples { get; init; }

    public required IReadOnlyList<SecondSample> TimeSeries { get; init; }

    public static LoadReport From(LoadTestResult result)
    {
        ArgumentNullException.ThrowIfNull(result);
        return new LoadReport
        {
            Scenario = result.Scenario,
            Target = result.Target.AbsoluteUri,
            Shape = ShapeReport.From(result.Shape),
            Bounds = new BoundsReport(result.Bounds.MaxRequests, result.Bounds.MaxDuration.TotalSeconds),
            StartedAt = result.StartedAt,
            LoadSeconds = result.LoadDuration.TotalSeconds,
            TotalSeconds = result.TotalDuration.TotalSeconds,
            StopReason = result.StopReason,
            Totals = result.Totals,
            StatusCounts = result.StatusCounts,
            Latency = LatencyReport.From(result.RequestLatency),
            SendLag = result.SendLag is null ? null : LatencyReport.From(result.SendLag),
            Completion = result.Completion is null ? null : new CompletionReport(result.Completion.Counts, LatencyReport.From(result.Completion.Latency)),
            ErrorSamples = result.ErrorSamples,
            TimeSeries = result.TimeSeries,
        };
    }

    public static LoadReport ReadJson(Stream stream) =>
        JsonSerializer.Deserialize(stream, LoadReportJsonContext.Default.LoadReport)
        ?? throw new JsonException("The file holds no load report.");

    public static LoadReport ReadJson(string path)
    {
        using var stream = File.OpenRead(path);
        return ReadJson(stream);
    }

    public void WriteJson(Stream stream) => JsonSerializer.Serialize(stream, this, LoadReportJsonContext.Default.LoadReport);

    /// <summary>One row per second: the throughput, users/rate and latency over time.</summary>
    public void WriteTimeSeriesCsv(TextWriter writer)
    {
        writer.WriteLine("second,interval_s,requests,successes,errors,active_users,target_rate,in_flight,p50_ms,p99_ms,max_ms,completions");
        foreach (var s in TimeSeries)
        {
            writer.WriteLine(string.Join(
                ',',
                Number((long)s.Second),
                Number(s.IntervalSeconds),
                Number(s.Requests),
                Number(s.Successes),
                Number(s.Errors),
                Number(s.ActiveUsers),
                Number(s.TargetRate),
                Number((long)s.InFlight),
                Number(s.P50Ms),
                Number(s.P99Ms),
                Number(s.MaxMs),
                Number(s.Completions)));
        }
    }

    /// <summary>The percentile spectrum of each latency histogram, for latency-by-percentile plots.</summary>
    public void WritePercentilesCsv(TextWriter writer)
    {
        writer.WriteLine("histogram,percentile,value_ms,count_at_or_below");
        WriteSpectrum(writer, "request", Latency);
        if (Completion is not null)
        {
            WriteSpectrum(writer, "completion", Completion.Latency);
        }

        if (SendLag is not null)
        {
            WriteSpectrum(writer, "send-lag", SendLag);
        }
    }

    public void WriteStatusCountsCsv(TextWriter writer)
    {
        writer.WriteLine("status,count");
        foreach (var (status, count) in StatusCounts)
        {
            writer.WriteLine($"{status},{Number(count)}");
        }
    }

    /// <summary>Writes the four files into <paramref name="directory"/> (created if needed) and returns their paths.</summary>
    public IReadOnlyList<string> WriteFiles(string directory)
    {
        Directory.CreateDirectory(directory);
        var json = Path.Combine(directory, JsonFileName);
        using (var stream = File.Create(json))
        {
            WriteJson(stream);
        }

        var timeSeries = WriteText(directory, TimeSeriesFileName, WriteTimeSeriesCsv);
        var percentiles = WriteText(directory, PercentilesFileName, WritePercentilesCsv);
        var statusCounts = WriteText(directory, StatusCountsFileName, WriteStatusCountsCsv);
        return [json, timeSeries, percentiles, statusCounts];
    }

    private static string WriteText(string directory, string name, Action<TextWriter> write)
    {
        var path = Path.Combine(directory, name);
        using var writer = new StreamWriter(path);
        writer.NewLine = "\n";
        write(writer);
        return path;
    }

    private static void WriteSpectrum(TextWriter writer, string name, LatencyReport latency)
    {
        foreach (var point in latency.Percentiles)
        {
            writer.WriteLine($"{name},{Number(point.Percentile)},{Number(point.ValueMs)},{Number(point.CountAtOrBelow)}");
        }
    }

    private static string Number(long value) => value.ToString(CultureInfo.InvariantCulture);

    private static string Number(int? value) => value?.ToString(CultureInfo.InvariantCulture) ?? "";

    private static string Number(double? value) => value is { } v ? Math.Round(v, 6).ToString(CultureInfo.InvariantCulture) : "";
}

/// <summary>The load shape as written in the report.</summary>
/// <param name="Model"><c>closed</c> or <c>open</c>.</param>
public sealed record ShapeReport(
    string Model,
    int? UsersFrom,
    int? UsersTo,
    double? ThinkTimeMs,
    double? RateFrom,
    double? RateTo,
    double RampSeconds,
    double HoldSeconds)
{
    /// <summary>Open model with users: requests per second each user asks for (<see cref="OpenLoad.RatePerUser"/>).</summary>
    public double? RatePerUser { get; init; }

    public static ShapeReport From(LoadShape shape) => shape switch
    {
        ClosedLoad c => new ShapeReport("closed", c.UsersFrom, c.UsersTo, c.ThinkTime.TotalMilliseconds, null, null, c.Ramp.TotalSeconds, c.Hold.TotalSeconds),
        OpenLoad o => new ShapeReport("open", null, null, null, o.RateFrom, o.RateTo, o.Ramp.TotalSeconds, o.Hold.TotalSeconds) { RatePerUser = o.RatePerUser },
        _ => throw new ArgumentException($"Unknown load shape {shape.GetType().Name}.", nameof(shape)),
    };
}

public sealed record BoundsReport(long MaxRequests, double MaxDurationSeconds);

/// <summary>A latency histogram summarised in milliseconds, with its percentile spectrum.</summary>
public sealed record LatencyReport(
    long Count,
    double MinMs,
    double MeanMs,
    double StdDevMs,
    double P50Ms,
    double P90Ms,
    double P99Ms,
    double P999Ms,
    double P9999Ms,
    double MaxMs,
    IReadOnlyList<PercentileReport> Percentiles)
{
    /// <summary>Summarises a histogram of microseconds.</summary>
    public static LatencyReport From(HistogramBase microseconds)
    {
        ArgumentNullException.ThrowIfNull(microseconds);
        if (microseconds.TotalCount == 0)
        {
            // Nothing was recorded (every request failed, or none completed): HdrHistogram has no
            // percentiles to give and throws if asked.
            return new LatencyReport(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, []);
        }

        return new LatencyReport(
            microseconds.TotalCount,
            Ms(microseconds.GetMinValue()),
            microseconds.GetMean() / 1000.0,
            microseconds.GetStdDeviation() / 1000.0,
            Ms(microseconds.GetValueAtPercentile(50)),
            Ms(microseconds.GetValueAtPercentile(90)),
            Ms(microseconds.GetValueAtPercentile(99)),
            Ms(microseconds.GetValueAtPercentile(99.9)),
            Ms(microseconds.GetValueAtPercentile(99.99)),
            Ms(microseconds.GetMaxValue()),
            // HdrHistogram's own spectrum: 5 steps per halving of the distance to 100 %.
            [.. microseconds.Percentiles(5).Select(p => new PercentileReport(p.PercentileLevelIteratedTo, Ms(p.ValueIteratedTo), p.TotalCountToThisValue))]);
    }

    private static double Ms(long microseconds) => microseconds / 1000.0;
}

public sealed record PercentileReport(double Percentile, double ValueMs, long CountAtOrBelow);

public sealed record CompletionReport(CompletionCounts Counts, LatencyReport Latency);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, WriteIndented = true, UseStringEnumConverter = true)]
[JsonSerializable(typeof(LoadReport))]
internal sealed partial class LoadReportJsonContext : JsonSerializerContext;
