namespace DroneDelivery.LoadDriver.Results;

/// <summary>
/// One second of a run, counted by when requests finished. The last sample may cover less than a
/// second (<see cref="IntervalSeconds"/>); samples continue while the run drains, with no new load.
/// </summary>
/// <param name="Second">Seconds since the start of the run (0-based).</param>
/// <param name="IntervalSeconds">Length of the sample: 1, except possibly the last.</param>
/// <param name="Requests">Requests that finished (any outcome except cancelled).</param>
/// <param name="Successes">Of those, 2xx responses.</param>
/// <param name="Errors">Of those, non-2xx responses, timeouts and connection errors.</param>
/// <param name="ActiveUsers">Closed model: users running at the end of the second; null for the open model.</param>
/// <param name="TargetRate">Open model: requests the schedule intended to send in this second; null for the closed model.</param>
/// <param name="InFlight">Requests outstanding at the end of the second.</param>
/// <param name="P50Ms">Median latency of this second's requests, ms; null when none finished.</param>
/// <param name="P99Ms">99th percentile latency of this second's requests, ms; null when none finished.</param>
/// <param name="MaxMs">Largest latency of this second's requests, ms; null when none finished.</param>
/// <param name="Completions">delivery-requests with polling: deliveries seen completed in this second.</param>
public sealed record SecondSample(
    int Second,
    double IntervalSeconds,
    long Requests,
    long Successes,
    long Errors,
    int? ActiveUsers,
    double? TargetRate,
    int InFlight,
    double? P50Ms,
    double? P99Ms,
    double? MaxMs,
    long Completions);
