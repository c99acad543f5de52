using DroneDelivery.LoadDriver.Results;
using HdrHistogram;

namespace DroneDelivery.LoadDriver.Running;

/// <summary>Live gauges the recorder samples at the end of every second.</summary>
internal interface ILoadGauges
{
    /// <summary>Closed model: users running; null for the open model.</summary>
    int? ActiveUsers { get; }

    int InFlight { get; }

    /// <summary>Open model: requests intended in the given second; null for the closed model.</summary>
    double? TargetRateInSecond(int second);
}

/// <summary>
/// Everything measured during a run: latency histograms, per-status counts and a per-second time series.
/// Thread-safe; one short lock per event, and the per-second roll-over (a few tens of microseconds) happens
/// at most once a second.
/// </summary>
internal sealed class RunRecorder
{
    private const int MaxErrorSamples = 10;

    private readonly Lock _lock = new();
    private readonly long _startTimestamp;
    private readonly ILoadGauges _gauges;
    private readonly HistogramBase _latency = LatencyHistograms.Create();
    private readonly HistogramBase _secondLatency = LatencyHistograms.Create();
    private readonly HistogramBase _sendLag = LatencyHistograms.Create();
    private readonly HistogramBase _completionLatency = LatencyHistograms.Create();
    private readonly long[] _statusCounts = new long[600];
    private readonly List<SecondSample> _series = [];
    private readonly List<string> _errorSamples = [];

    private long _timeouts;
    private long _connectionErrors;
    private long _clientErrors;
    private long _cancelled;
    private long _successes;
    private long _errors;

    private int _second;
    private long _secondRequests;
    private long _secondSuccesses;
    private long _secondErrors;
    private long _secondCompletions;

    private long _tracked;
    private long _completed;
    private long _timedOut;
    private long _abandoned;
    private long _untracked;
    private long _rejected;
    private long _pollRequests;
    private long _pollErrors;

    public RunRecorder(long startTimestamp, ILoadGauges gauges)
    {
        _startTimestamp = startTimestamp;
        _gauges = gauges;
    }

    public long StartTimestamp => _startTimestamp;

    public void RecordRequest(RequestOutcome outcome, long measuredFromTimestamp, long endTimestamp)
    {
        var microseconds = LatencyHistograms.Microseconds(measuredFromTimestamp, endTimestamp);
        lock (_lock)
        {
            RollTo(SecondOf(endTimestamp));
            switch (outcome.Kind)
            {
                case OutcomeKind.Cancelled:
                    _cancelled++;
                    return;
                case OutcomeKind.Response when outcome.StatusCode is >= 0 and < 600:
                    _statusCounts[outcome.StatusCode]++;
                    break;
                case OutcomeKind.Response:
                    _clientErrors++;
                    break;
                case OutcomeKind.Timeout:
                    _timeouts++;
                    break;
                case OutcomeKind.ConnectionError:
                    _connectionErrors++;
                    break;
                default:
                    _clientErrors++;
                    break;
            }

            // Every finished request counts in the latency, failures included: a timeout that is left
            // out would make a stalled system look fast.
            _latency.RecordValue(microseconds);
            _secondLatency.RecordValue(microseconds);
            _secondRequests++;
            if (outcome.IsSuccess)
            {
                _successes++;
                _secondSuccesses++;
            }
            else
            {
                _errors++;
                _secondErrors++;
            }
        }
    }

    /// <summary>Open model: how late the driver handed a request to the HTTP client, against its intended time.</summary>
    public void RecordSendLag(long intendedTimestamp, long sentTimestamp)
    {
        var microseconds = LatencyHistograms.Microseconds(intendedTimestamp, sentTimestamp);
        lock (_lock)
        {
            _sendLag.RecordValue(microseconds);
        }
    }

    /// <summary>Keeps the first few distinct failure messages, for the report.</summary>
    public void RecordErrorSample(string message)
    {
        lock (_lock)
        {
            if (_errorSamples.Count < MaxErrorSamples && !_errorSamples.Contains(message))
            {
                _errorSamples.Add(message);
            }
        }
    }

    public void RecordCompletion(long intendedTimestamp, long completedTimestamp)
    {
        var microseconds = LatencyHistograms.Microseconds(intendedTimestamp, completedTimestamp);
        lock (_lock)
        {
            RollTo(SecondOf(completedTimestamp));
            _completionLatency.RecordValue(microseconds);
            _completed++;
            _secondCompletions++;
        }
    }

    public void CountTracked() => Interlocked.Increment(ref _tracked);

    public void CountTimedOut() => Interlocked.Increment(ref _timedOut);

    public void CountAbandoned() => Interlocked.Increment(ref _abandoned);

    public void CountUntracked() => Interlocked.Increment(ref _untracked);

    public void CountRejected() => Interlocked.Increment(ref _rejected);

    public void CountPollRequest() => Interlocked.Increment(ref _pollRequests);

    public void CountPollError() => Interlocked.Increment(ref _pollErrors);

    /// <summary>Closes the seconds that have passed and returns a snapshot for progress reporting.</summary>
    public RecorderSnapshot Snapshot(long nowTimestamp)
    {
        lock (_lock)
        {
            RollTo(SecondOf(nowTimestamp));
            return new RecorderSnapshot(
                Requests: _successes + _errors,
                Successes: _successes,
                Errors: _errors,
                LastSecond: _series.Count > 0 ? _series[^1] : null,
                OverallP99Ms: _latency.TotalCount > 0 ? ToMilliseconds(_latency.GetValueAtPercentile(99)) : null,
                Completed: Interlocked.Read(ref _completed),
                CompletionsPending: Interlocked.Read(ref _tracked) - Interlocked.Read(ref _completed) - Interlocked.Read(ref _timedOut) - Interlocked.Read(ref _abandoned));
        }
    }

    /// <summary>Closes the time series at <paramref name="endTimestamp"/> (a partial last second included) and returns the totals.</summary>
    public RecordedRun Finish(long endTimestamp)
    {
        lock (_lock)
        {
            var elapsedSeconds = Clock.ToSeconds(endTimestamp - _startTimestamp);
            RollTo(SecondOf(endTimestamp));
            var partial = elapsedSeconds - _second;
            if (partial > 0.001 || _secondRequests > 0 || _secondCompletions > 0)
            {
                _series.Add(CloseSecond(Math.Clamp(partial, 0.001, 1)));
            }

            var statusCounts = new SortedDictionary<string, long>(StringComparer.Ordinal);
            for (var status = 0; status < _statusCounts.Length; status++)
            {
                if (_statusCounts[status] > 0)
                {
                    statusCounts[status.ToString(System.Globalization.CultureInfo.InvariantCulture)] = _statusCounts[status];
                }
            }

            AddIfAny(statusCounts, RequestOutcome.TimeoutLabel, _timeouts);
            AddIfAny(statusCounts, RequestOutcome.ConnectionErrorLabel, _connectionErrors);
            AddIfAny(statusCounts, RequestOutcome.ClientErrorLabel, _clientErrors);
            AddIfAny(statusCounts, RequestOutcome.CancelledLabel, _cancelled);

            return new RecordedRun(
                Successes: _successes,
                Errors: _errors,
                Timeouts: _timeouts,
                ConnectionErrors: _connectionErrors,
                ClientErrors: _clientErrors,
                Cancelled: _cancelled,
                StatusCounts: statusCounts,
                Latency: _latency.Copy(),
                SendLag: _sendLag.Copy(),
                CompletionLatency: _completionLatency.Copy(),
                Completion: new CompletionCounts(_tracked, _completed, _timedOut, _abandoned, _untracked, _rejected, _pollRequests, _pollErrors),
                TimeSeries: [.. _series],
                ErrorSamples: [.. _errorSamples]);
        }
    }

    internal static double ToMilliseconds(long microseconds) => microseconds / 1000.0;

    private static void AddIfAny(SortedDictionary<string, long> counts, string label, long count)
    {
        if (count > 0)
        {
            counts[label] = count;
        }
    }

    private int SecondOf(long timestamp) => (int)Math.Max(0, Clock.ToSeconds(timestamp - _startTimestamp));

    private void RollTo(int second)
    {
        while (_second < second)
        {
            _series.Add(CloseSecond(1));
            _second++;
        }
    }

    private SecondSample CloseSecond(double intervalSeconds)
    {
        var hasLatency = _secondLatency.TotalCount > 0;
        var sample = new SecondSample(
            Second: _second,
            IntervalSeconds: intervalSeconds,
            Requests: _secondRequests,
            Successes: _secondSuccesses,
            Errors: _secondErrors,
            ActiveUsers: _gauges.ActiveUsers,
            TargetRate: _gauges.TargetRateInSecond(_second),
            InFlight: _gauges.InFlight,
            P50Ms: hasLatency ? ToMilliseconds(_secondLatency.GetValueAtPercentile(50)) : null,
            P99Ms: hasLatency ? ToMilliseconds(_secondLatency.GetValueAtPercentile(99)) : null,
            MaxMs: hasLatency ? ToMilliseconds(_secondLatency.GetMaxValue()) : null,
            Completions: _secondCompletions);
        _secondLatency.Reset();
        _secondRequests = 0;
        _secondSuccesses = 0;
        _secondErrors = 0;
        _secondCompletions = 0;
        return sample;
    }
}

internal sealed record RecorderSnapshot(
    long Requests,
    long Successes,
    long Errors,
    SecondSample? LastSecond,
    double? OverallP99Ms,
    long Completed,
    long CompletionsPending);

internal sealed record RecordedRun(
    long Successes,
    long Errors,
    long Timeouts,
    long ConnectionErrors,
    long ClientErrors,
    long Cancelled,
    IReadOnlyDictionary<string, long> StatusCounts,
    HistogramBase Latency,
    HistogramBase SendLag,
    HistogramBase CompletionLatency,
    CompletionCounts Completion,
    IReadOnlyList<SecondSample> TimeSeries,
    IReadOnlyList<string> ErrorSamples);
