using HdrHistogram;

namespace DroneDelivery.LoadDriver.Results;

/// <summary>Everything a load run measured. Histograms hold microseconds.</summary>
public sealed class LoadTestResult
{
    public required string Scenario { get; init; }

    public required Uri Target { get; init; }

    public required LoadShape Shape { get; init; }

    public required LoadBounds Bounds { get; init; }

    public required DateTimeOffset StartedAt { get; init; }

    /// <summary>Time from the start until load stopped.</summary>
    public required TimeSpan LoadDuration { get; init; }

    /// <summary>Time from the start until the run ended, draining included.</summary>
    public required TimeSpan TotalDuration { get; init; }

    public required StopReason StopReason { get; init; }

    public required LoadTotals Totals { get; init; }

    /// <summary>Finished requests by HTTP status (<c>"200"</c>, <c>"503"</c>, ...) or failure (<c>timeout</c>, <c>connection-error</c>, <c>client-error</c>, <c>cancelled</c>).</summary>
    public required IReadOnlyDictionary<string, long> StatusCounts { get; init; }

    /// <summary>
    /// Latency of every finished request, µs: from the intended send time (open model) or the actual send
    /// (closed model) to the end of the response body, or to the timeout or failure.
    /// </summary>
    public required HistogramBase RequestLatency { get; init; }

    /// <summary>Open model: how late requests were handed to the HTTP client against their intended time, µs.</summary>
    public HistogramBase? SendLag { get; init; }

    /// <summary>delivery-requests with polling: completion latency and what happened to each followed delivery.</summary>
    public CompletionResult? Completion { get; init; }

    public required IReadOnlyList<SecondSample> TimeSeries { get; init; }

    /// <summary>The first few distinct failure messages.</summary>
    public required IReadOnlyList<string> ErrorSamples { get; init; }

    /// <summary>The serialisable form written to result.json.</summary>
    public LoadReport ToReport() => LoadReport.From(this);

    /// <summary>Writes result.json, timeseries.csv, percentiles.csv and status-counts.csv into <paramref name="directory"/>.</summary>
    public IReadOnlyList<string> WriteFiles(string directory) => ToReport().WriteFiles(directory);
}

/// <summary>Completion of followed deliveries: counts, and latency from the request's intended send time, µs.</summary>
public sealed record CompletionResult(CompletionCounts Counts, HistogramBase Latency);
