using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.LoadDriver;

/// <summary>A once-a-second view of a running load test, for a progress display.</summary>
/// <param name="Elapsed">Time since the start.</param>
/// <param name="LoadDuration">How long load is applied (the shape, cut short by the duration bound).</param>
/// <param name="Draining">Load has stopped; outstanding requests and completions are being waited for.</param>
/// <param name="Sent">Requests started so far.</param>
/// <param name="Requests">Requests finished so far.</param>
/// <param name="Successes">2xx responses so far.</param>
/// <param name="Errors">Failed requests so far.</param>
/// <param name="InFlight">Requests outstanding now.</param>
/// <param name="ActiveUsers">Closed model: users running now.</param>
/// <param name="TargetRate">Open model: the schedule's arrival rate now, requests per second.</param>
/// <param name="LastSecond">The last complete second.</param>
/// <param name="OverallP99Ms">99th percentile latency of the run so far, ms.</param>
/// <param name="Completed">delivery-requests with polling: deliveries seen completed so far.</param>
/// <param name="CompletionsPending">delivery-requests with polling: deliveries still being followed.</param>
public sealed record LoadProgress(
    TimeSpan Elapsed,
    TimeSpan LoadDuration,
    bool Draining,
    long Sent,
    long Requests,
    long Successes,
    long Errors,
    int InFlight,
    int? ActiveUsers,
    double? TargetRate,
    SecondSample? LastSecond,
    double? OverallP99Ms,
    long? Completed,
    long? CompletionsPending);
