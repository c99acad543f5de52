using System.Net.Sockets;
using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.LoadDriver.Running;

/// <summary>
/// One execution of a <see cref="LoadTestPlan"/>: applies the shape, stops at the first bound, drains
/// outstanding requests (each bounded by the request timeout), lets the scenario finish its own work,
/// and hands back the measurements.
/// </summary>
internal sealed class LoadRun : ILoadGauges, IAsyncDisposable
{
    private static readonly TimeSpan ControllerTick = TimeSpan.FromMilliseconds(50);
    private static readonly TimeSpan ProgressTick = TimeSpan.FromSeconds(1);

    private readonly LoadTestPlan _plan;
    private readonly Clock _clock;
    private readonly IProgress<LoadProgress>? _progress;
    private readonly CancellationToken _cancellation;
    private readonly CancellationTokenSource _stopSending = new();
    private ITimer? _durationTimer;
    private readonly CancellationTokenSource _abort;
    private readonly TaskCompletionSource _idle = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly List<Task> _users = [];
    private readonly HttpMessageInvoker _http;
    private readonly TimeSpan _loadDuration;
    private readonly long _loadDurationTicks;
    private readonly StopReason _timeStopReason;
    private long _startTimestamp;
    private RunRecorder _recorder = null!;
    private ScenarioRun _scenarioRun = null!;
    private long _claimed;
    private int _inFlight;
    private int _activeUsers;
    private int _targetUsers;
    private int _sendingStopped;
    private int _stopReason = -1;
    private int _draining;

    public LoadRun(LoadTestPlan plan, Clock clock, IProgress<LoadProgress>? progress, CancellationToken cancellation)
    {
        _plan = plan;
        _clock = clock;
        _progress = progress;
        _cancellation = cancellation;
        _abort = CancellationTokenSource.CreateLinkedTokenSource(cancellation);
        _loadDuration = plan.Shape.Duration <= plan.Bounds.MaxDuration ? plan.Shape.Duration : plan.Bounds.MaxDuration;
        _loadDurationTicks = Clock.FromTimeSpan(_loadDuration);
        _timeStopReason = plan.Bounds.MaxDuration < plan.Shape.Duration ? StopReason.MaxDuration : StopReason.Completed;
        var concurrency = plan.Shape switch
        {
            ClosedLoad closed => closed.PeakUsers,
            _ => plan.Http.MaxInFlight,
        };
        _http = DriverHttp.CreateInvoker(plan.Http.MaxConnections ?? concurrency, plan.Http);
    }

    int? ILoadGauges.ActiveUsers => _plan.Shape switch
    {
        ClosedLoad => Volatile.Read(ref _activeUsers),
        // Users on a schedule: how many are asking now (the in-flight limit).
        OpenLoad { RatePerUser: not null } open => open.UsersAt(Min(Clock.ToTimeSpan(_clock.Now - _startTimestamp), open.Duration - TimeSpan.FromTicks(1))),
        _ => null,
    };

    int ILoadGauges.InFlight => Volatile.Read(ref _inFlight);

    double? ILoadGauges.TargetRateInSecond(int second) => _plan.Shape switch
    {
        OpenLoad open when second * TimeSpan.TicksPerSecond < _loadDuration.Ticks =>
            open.ArrivalsBy(Min(TimeSpan.FromSeconds(second + 1), _loadDuration)) - open.ArrivalsBy(TimeSpan.FromSeconds(second)),
        OpenLoad => 0,
        _ => null,
    };

    public async Task<LoadTestResult> ExecuteAsync()
    {
        var startedAt = _clock.UtcNow;
        _startTimestamp = _clock.Now;
        _recorder = new RunRecorder(_startTimestamp, this);
        _scenarioRun = _plan.Scenario.Start(new ScenarioRunContext(_recorder, _plan.Http, _clock, _abort.Token));
        await using var cancelRegistration = _cancellation.Register(() => Stop(StopReason.Cancelled)).ConfigureAwait(false);
        var durationTimer = _clock.Time.CreateTimer(_ => OnDurationElapsed(), null, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        _durationTimer = durationTimer;
        await using var disposeDurationTimer = durationTimer.ConfigureAwait(false);
        durationTimer.Change(_loadDuration, Timeout.InfiniteTimeSpan);
        using var progressStop = new CancellationTokenSource();
        var progressTask = ReportProgressAsync(progressStop.Token);

        long unsent = 0;
        long loadEnd;
        try
        {
            unsent = _plan.Shape switch
            {
                ClosedLoad closed => await RunClosedAsync(closed).ConfigureAwait(false),
                OpenLoad open => await RunOpenAsync(open).ConfigureAwait(false),
                _ => throw new ArgumentException($"Unknown load shape {_plan.Shape.GetType().Name}."),
            };
            loadEnd = _clock.Now;
            Interlocked.Exchange(ref _draining, 1);
            await DrainRequestsAsync().ConfigureAwait(false);
            await DrainScenarioAsync().ConfigureAwait(false);
        }
        finally
        {
            await progressStop.CancelAsync().ConfigureAwait(false);
            await progressTask.ConfigureAwait(false);
        }

        var end = _clock.Now;
        var recorded = _recorder.Finish(end);
        var loadSeconds = Math.Max(Clock.ToSeconds(loadEnd - _startTimestamp), 1e-3);
        var requests = recorded.Successes + recorded.Errors;
        var sent = Math.Min(Interlocked.Read(ref _claimed), _plan.Bounds.MaxRequests);
        return new LoadTestResult
        {
            Scenario = _plan.Scenario.Name,
            Target = _plan.Scenario.Target,
            Shape = _plan.Shape,
            Bounds = _plan.Bounds,
            StartedAt = startedAt,
            LoadDuration = Clock.ToTimeSpan(loadEnd - _startTimestamp),
            TotalDuration = Clock.ToTimeSpan(end - _startTimestamp),
            StopReason = (StopReason)Volatile.Read(ref _stopReason),
            Totals = new LoadTotals(
                Sent: sent,
                Requests: requests,
                Successes: recorded.Successes,
                Errors: recorded.Errors,
                Timeouts: recorded.Timeouts,
                ConnectionErrors: recorded.ConnectionErrors,
                ClientErrors: recorded.ClientErrors,
                Cancelled: recorded.Cancelled,
                Unsent: unsent,
                RequestsPerSecond: requests / loadSeconds,
                SuccessesPerSecond: recorded.Successes / loadSeconds),
            StatusCounts = recorded.StatusCounts,
            RequestLatency = recorded.Latency,
            SendLag = _plan.Shape is OpenLoad ? recorded.SendLag : null,
            Completion = _plan.Scenario is DeliveryRequestsScenario { Options.Completion: not null }
                ? new CompletionResult(recorded.Completion, recorded.CompletionLatency)
                : null,
            TimeSeries = recorded.TimeSeries,
            ErrorSamples = recorded.ErrorSamples,
        };
    }

    public async ValueTask DisposeAsync()
    {
        if (_scenarioRun is not null)
        {
            await _scenarioRun.DisposeAsync().ConfigureAwait(false);
        }

        _http.Dispose();
        _stopSending.Dispose();
        _abort.Dispose();
    }

    private static TimeSpan Min(TimeSpan a, TimeSpan b) => a < b ? a : b;

    /// <summary>
    /// Timers run on a coarser clock than the one the driver measures with and can fire a millisecond
    /// early; the load phase ends only once the measuring clock says its duration has passed.
    /// </summary>
    private void OnDurationElapsed()
    {
        var remaining = UntilEnd();
        if (remaining > TimeSpan.Zero)
        {
            _durationTimer?.Change(remaining + TimeSpan.FromMilliseconds(1), Timeout.InfiniteTimeSpan);
            return;
        }

        Stop(_timeStopReason);
    }

    /// <summary>Records the first reason to stop and stops starting new requests.</summary>
    private void Stop(StopReason reason)
    {
        if (Interlocked.CompareExchange(ref _stopReason, (int)reason, -1) == -1)
        {
            _stopSending.Cancel();
        }

        if (reason == StopReason.Cancelled)
        {
            _abort.Cancel();
        }
    }

    /// <summary>Claims the next sequence number, or returns -1 when a bound says no more requests may start.</summary>
    private long TryClaimRequest()
    {
        if (_stopSending.IsCancellationRequested)
        {
            return -1;
        }

        if (_clock.Now - _startTimestamp >= _loadDurationTicks)
        {
            Stop(_timeStopReason);
            return -1;
        }

        var sequence = Interlocked.Increment(ref _claimed) - 1;
        if (sequence >= _plan.Bounds.MaxRequests)
        {
            Stop(StopReason.MaxRequests);
            return -1;
        }

        if (sequence == _plan.Bounds.MaxRequests - 1)
        {
            Stop(StopReason.MaxRequests);
        }

        return sequence;
    }

    // ---- closed model ----

    private async Task<long> RunClosedAsync(ClosedLoad shape)
    {
        var running = new int[shape.PeakUsers];
        using var tick = new PeriodicTimer(ControllerTick, _clock.Time);
        do
        {
            var target = shape.UsersAt(Clock.ToTimeSpan(_clock.Now - _startTimestamp));
            Volatile.Write(ref _targetUsers, target);
            for (var user = 0; user < target && !_stopSending.IsCancellationRequested; user++)
            {
                if (Interlocked.CompareExchange(ref running[user], 1, 0) == 0)
                {
                    _users.Add(RunUserAsync(user, shape.ThinkTime, running));
                }
            }
        }
        while (await WaitForTickAsync(tick).ConfigureAwait(false));

        // Users finish their last request while the run drains, so slow last responses do not stretch the load phase.
        return 0;
    }

    private async Task<bool> WaitForTickAsync(PeriodicTimer tick)
    {
        try
        {
            return await tick.WaitForNextTickAsync(_stopSending.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    private async Task RunUserAsync(int user, TimeSpan thinkTime, int[] running)
    {
        Interlocked.Increment(ref _activeUsers);
        try
        {
            // A user stops when the load stops or the count drops below its number (ramping down).
            while (user < Volatile.Read(ref _targetUsers))
            {
                var sequence = TryClaimRequest();
                if (sequence < 0)
                {
                    return;
                }

                var start = _clock.Now;
                await ExecuteRequestAsync(sequence, start, start).ConfigureAwait(false);
                if (thinkTime > TimeSpan.Zero)
                {
                    try
                    {
                        await Task.Delay(thinkTime, _clock.Time, _stopSending.Token).ConfigureAwait(false);
                    }
                    catch (OperationCanceledException)
                    {
                        return;
                    }
                }
            }
        }
        finally
        {
            Interlocked.Decrement(ref _activeUsers);
            Volatile.Write(ref running[user], 0);
        }
    }

    // ---- open model ----

    /// <returns>Requests the schedule intended before the end but never sent (in-flight limit reached).</returns>
    private async Task<long> RunOpenAsync(OpenLoad shape)
    {
        var slots = new InFlightLimit(Limit(shape, TimeSpan.Zero));
        var endSeconds = _loadDuration.TotalSeconds;
        long sequence = 0;
        long missed = 0;
        while (true)
        {
            if (sequence >= _plan.Bounds.MaxRequests)
            {
                Stop(StopReason.MaxRequests);
                break;
            }

            var offset = shape.IntendedSeconds(sequence);
            if (offset is not { } seconds || seconds >= endSeconds)
            {
                Stop(_timeStopReason);
                break;
            }

            // The schedule is absolute: a late wake-up sends everything already due at once, and each
            // request's latency still starts at its own intended time. The schedule itself ends the load
            // (the duration timer serves the closed model), so only cancellation interrupts these waits.
            var intended = _startTimestamp + Clock.FromSeconds(seconds);
            try
            {
                await WaitUntilAsync(intended).ConfigureAwait(false);
                if (shape.RatePerUser is not null)
                {
                    // Users: one request each at a time; an arrival due while all of them wait is missed.
                    slots.SetLimit(Limit(shape, TimeSpan.FromSeconds(seconds)));
                    if (!slots.TryTake())
                    {
                        missed++;
                        sequence++;
                        continue;
                    }
                }
                else if (!await WaitForSlotAsync(slots).ConfigureAwait(false))
                {
                    // The in-flight limit held until the end: what is left of the schedule goes unsent.
                    Stop(_timeStopReason);
                    break;
                }
            }
            catch (OperationCanceledException)
            {
                break;
            }

            _recorder.RecordSendLag(intended, _clock.Now);
            Interlocked.Increment(ref _claimed);
            _ = SendScheduledAsync(sequence, intended, slots);
            sequence++;
        }

        if (Volatile.Read(ref _stopReason) == (int)StopReason.Cancelled)
        {
            return 0;
        }

        if (Volatile.Read(ref _stopReason) == (int)_timeStopReason)
        {
            // The last send comes up to one interval before the end; the load phase still lasts its duration.
            try
            {
                await WaitUntilAsync(_startTimestamp + _loadDurationTicks).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return 0;
            }
        }

        // Everything the schedule meant to send before the end (and within the request bound) that did not go out.
        var intendedTotal = Math.Min((long)Math.Ceiling(shape.ArrivalsBy(_loadDuration) - 1e-9), _plan.Bounds.MaxRequests);
        return Math.Max(intendedTotal - sequence, 0) + missed;
    }

    private async Task WaitUntilAsync(long timestamp)
    {
        while (true)
        {
            var remaining = timestamp - _clock.Now;
            if (remaining <= 0)
            {
                return;
            }

            // Timer waits may overshoot by a millisecond or so; the schedule absorbs it (see above).
            var milliseconds = Math.Max(1, Math.Ceiling(Clock.ToSeconds(remaining) * 1000));
            await Task.Delay(TimeSpan.FromMilliseconds(milliseconds), _clock.Time, _abort.Token).ConfigureAwait(false);
        }
    }

    /// <summary>Takes an in-flight slot, waiting for one at most until the end of the load; false if none came.</summary>
    private async Task<bool> WaitForSlotAsync(InFlightLimit slots)
    {
        if (slots.TryTake())
        {
            return true;
        }

        var untilEnd = UntilEnd();
        if (untilEnd <= TimeSpan.Zero)
        {
            return false;
        }

        using var end = new CancellationTokenSource(untilEnd, _clock.Time);
        using var wait = CancellationTokenSource.CreateLinkedTokenSource(_abort.Token, end.Token);
        try
        {
            await slots.TakeAsync(wait.Token).ConfigureAwait(false);
            return true;
        }
        catch (OperationCanceledException) when (!_abort.IsCancellationRequested)
        {
            return false;
        }
    }

    /// <summary>The most requests in flight at <paramref name="elapsed"/>: the users asking then, within <see cref="HttpSettings.MaxInFlight"/>.</summary>
    private int Limit(OpenLoad shape, TimeSpan elapsed) =>
        Math.Min(_plan.Http.MaxInFlight, shape.UsersAt(Min(elapsed, shape.Duration - TimeSpan.FromTicks(1))) ?? int.MaxValue);

    private TimeSpan UntilEnd() => Clock.ToTimeSpan(Math.Max(_startTimestamp + _loadDurationTicks - _clock.Now, 0));

    private async Task SendScheduledAsync(long sequence, long intendedTimestamp, InFlightLimit slots)
    {
        try
        {
            await ExecuteRequestAsync(sequence, intendedTimestamp, intendedTimestamp).ConfigureAwait(false);
        }
        finally
        {
            slots.Return();
        }
    }

    // ---- both models ----

    private async Task ExecuteRequestAsync(long sequence, long intendedTimestamp, long measureFromTimestamp)
    {
        Interlocked.Increment(ref _inFlight);
        try
        {
            RequestOutcome outcome;
            using (var limit = new CancellationTokenSource(_plan.Http.RequestTimeout, _clock.Time))
            using (var expiry = CancellationTokenSource.CreateLinkedTokenSource(_abort.Token, limit.Token))
            {
                try
                {
                    var status = await _scenarioRun.SendAsync(_http, sequence, intendedTimestamp, expiry.Token).ConfigureAwait(false);
                    outcome = RequestOutcome.Response(status);
                }
                catch (OperationCanceledException) when (_abort.IsCancellationRequested)
                {
                    outcome = RequestOutcome.Cancelled;
                }
                catch (OperationCanceledException) when (expiry.IsCancellationRequested)
                {
                    outcome = RequestOutcome.Timeout;
                }
                catch (Exception e) when (e is HttpRequestException or IOException or SocketException || IsConnectTimeout(e))
                {
                    outcome = RequestOutcome.ConnectionError;
                    _recorder.RecordErrorSample(Describe(e));
                }
                catch (Exception e)
                {
                    // A failure of the driver itself must not end the run silently; it is counted and sampled.
                    outcome = RequestOutcome.ClientError;
                    _recorder.RecordErrorSample($"{e.GetType().Name}: {e.Message}");
                }
            }

            _recorder.RecordRequest(outcome, measureFromTimestamp, _clock.Now);
        }
        finally
        {
            if (Interlocked.Decrement(ref _inFlight) == 0 && Volatile.Read(ref _sendingStopped) == 1)
            {
                _idle.TrySetResult();
            }
        }
    }

    /// <summary>
    /// The handler reports a connection not established within its connect time-out as a cancellation
    /// wrapping a <see cref="TimeoutException"/>; neither of our tokens was cancelled, and the target
    /// never saw the request, so it is a connection failure, not a timed-out request.
    /// </summary>
    private static bool IsConnectTimeout(Exception e) => e is OperationCanceledException { InnerException: TimeoutException };

    private static string Describe(Exception e)
    {
        var message = e.Message;
        for (var inner = e.InnerException; inner is not null; inner = inner.InnerException)
        {
            message += $" ({inner.Message})";
        }

        return $"{e.GetType().Name}: {message}";
    }

    /// <summary>Waits for outstanding requests (each bounded by the request timeout), then aborts any left.</summary>
    private async Task DrainRequestsAsync()
    {
        Interlocked.Exchange(ref _sendingStopped, 1);
        if (Volatile.Read(ref _inFlight) == 0)
        {
            _idle.TrySetResult();
        }

        // Closed-model users issue their own requests (one may be starting right now), so the run is idle
        // once they have all left; the open model's only sender, the schedule loop, has already returned.
        var outstanding = _users.Count > 0 ? Task.WhenAll(_users) : _idle.Task;
        try
        {
            await outstanding.WaitAsync(_plan.Http.RequestTimeout + TimeSpan.FromSeconds(1), _clock.Time, _abort.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is TimeoutException or OperationCanceledException)
        {
            await _abort.CancelAsync().ConfigureAwait(false);
            // Cancelled requests finish at once; the wait only guards against a handler that ignores cancellation.
            await Task.WhenAny(outstanding, Task.Delay(TimeSpan.FromSeconds(5), _clock.Time)).ConfigureAwait(false);
        }
    }

    /// <summary>Lets the scenario finish following what it accepted; its own bounds apply, and cancellation abandons it.</summary>
    private async Task DrainScenarioAsync()
    {
        try
        {
            await _scenarioRun.DrainAsync(_abort.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (_abort.IsCancellationRequested)
        {
        }
    }

    private async Task ReportProgressAsync(CancellationToken stop)
    {
        if (_progress is null)
        {
            return;
        }

        using var tick = new PeriodicTimer(ProgressTick, _clock.Time);
        try
        {
            while (await tick.WaitForNextTickAsync(stop).ConfigureAwait(false))
            {
                _progress.Report(CurrentProgress());
            }
        }
        catch (OperationCanceledException)
        {
        }

        // However short the run or slow the machine, the last state is reported once.
        _progress.Report(CurrentProgress());
    }

    private LoadProgress CurrentProgress()
    {
        var now = _clock.Now;
        var snapshot = _recorder.Snapshot(now);
        var elapsed = Clock.ToTimeSpan(now - _startTimestamp);
        var gauges = (ILoadGauges)this;
        var completion = _plan.Scenario is DeliveryRequestsScenario { Options.Completion: not null };
        return new LoadProgress(
            Elapsed: elapsed,
            LoadDuration: _loadDuration,
            Draining: Volatile.Read(ref _draining) == 1,
            Sent: Math.Min(Interlocked.Read(ref _claimed), _plan.Bounds.MaxRequests),
            Requests: snapshot.Requests,
            Successes: snapshot.Successes,
            Errors: snapshot.Errors,
            InFlight: gauges.InFlight,
            ActiveUsers: gauges.ActiveUsers,
            TargetRate: _plan.Shape is OpenLoad open ? open.RateAt(elapsed) : null,
            LastSecond: snapshot.LastSecond,
            OverallP99Ms: snapshot.OverallP99Ms,
            Completed: completion ? snapshot.Completed : null,
            CompletionsPending: completion ? snapshot.CompletionsPending : null);
    }
}
