namespace DroneDelivery.LoadDriver.Results;

/// <summary>Why a run stopped sending load.</summary>
public enum StopReason
{
    /// <summary>The load shape ran to its end.</summary>
    Completed,

    /// <summary><see cref="LoadBounds.MaxRequests"/> requests were sent.</summary>
    MaxRequests,

    /// <summary><see cref="LoadBounds.MaxDuration"/> passed before the shape ended.</summary>
    MaxDuration,

    /// <summary>The caller cancelled the run; the results cover what happened until then.</summary>
    Cancelled,
}

/// <summary>Request counts for a whole run.</summary>
/// <param name="Sent">Requests the driver started (polls excluded).</param>
/// <param name="Requests">Requests that finished: <c>Successes + Errors</c>.</param>
/// <param name="Successes">2xx responses.</param>
/// <param name="Errors">Non-2xx responses plus timeouts, connection errors and client errors.</param>
/// <param name="Timeouts">Requests with no complete response within the request timeout.</param>
/// <param name="ConnectionErrors">Requests whose connection failed.</param>
/// <param name="ClientErrors">Requests the driver itself failed to build or read (see the error samples).</param>
/// <param name="Cancelled">Requests still outstanding when the run was cancelled or its drain time ran out.</param>
/// <param name="Unsent">Open model: requests the schedule intended before the end that were never sent because the in-flight limit was reached.</param>
/// <param name="RequestsPerSecond">Finished requests per second of load.</param>
/// <param name="SuccessesPerSecond">2xx responses per second of load: the throughput.</param>
public sealed record LoadTotals(
    long Sent,
    long Requests,
    long Successes,
    long Errors,
    long Timeouts,
    long ConnectionErrors,
    long ClientErrors,
    long Cancelled,
    long Unsent,
    double RequestsPerSecond,
    double SuccessesPerSecond);

/// <summary>What happened to the deliveries whose completion was followed by polling.</summary>
/// <param name="Tracked">Accepted deliveries whose status was polled.</param>
/// <param name="Completed">Of those, seen completed within the maximum wait.</param>
/// <param name="TimedOut">Of those, not completed within the maximum wait.</param>
/// <param name="Abandoned">Of those, still pending when the run was cancelled.</param>
/// <param name="Untracked">Accepted deliveries not followed: no Location header, or the tracking limit was reached.</param>
/// <param name="Rejected">Accepted deliveries whose Location pointed at a host other than the targets.</param>
/// <param name="PollRequests">Status requests sent (not counted as load).</param>
/// <param name="PollErrors">Status requests that failed or answered something other than 200 or 404.</param>
public sealed record CompletionCounts(
    long Tracked,
    long Completed,
    long TimedOut,
    long Abandoned,
    long Untracked,
    long Rejected,
    long PollRequests,
    long PollErrors);
