using System.Net.Http.Headers;
using System.Net;
using System.Text.Json;
using DroneDelivery.LoadDriver.Running;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>
/// Follows accepted deliveries to completion by polling their status URLs, on connections of its own,
/// and records completion latency from each request's intended send time. Every follow is bounded by
/// <see cref="CompletionTracking.MaxWait"/>; cancelling the run abandons the rest.
/// </summary>
internal sealed class CompletionTracker : IAsyncDisposable
{
    private readonly CompletionTracking _options;
    private readonly RunRecorder _recorder;
    private readonly Clock _clock;
    private readonly TimeSpan _requestTimeout;
    private readonly CancellationToken _abort;
    private readonly HttpMessageInvoker _http;
    private readonly SemaphoreSlim _pollSlots;
    private readonly TaskCompletionSource _idle = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly long _maxWaitTicks;
    private int _pending;
    private int _draining;

    public CompletionTracker(CompletionTracking options, ScenarioRunContext context)
    {
        _options = options;
        _recorder = context.Recorder;
        _clock = context.Clock;
        _requestTimeout = context.Http.RequestTimeout;
        _abort = context.Abort;
        _http = DriverHttp.CreateInvoker(options.MaxConcurrentPolls, context.Http);
        _pollSlots = new SemaphoreSlim(options.MaxConcurrentPolls, options.MaxConcurrentPolls);
        _maxWaitTicks = Clock.FromTimeSpan(options.MaxWait);
    }

    /// <summary>Starts following one delivery, unless the tracking limit is reached.</summary>
    public void Track(Uri statusUri, long intendedTimestamp, AuthenticationHeaderValue? authorization = null)
    {
        if (_abort.IsCancellationRequested)
        {
            _recorder.CountAbandoned();
            return;
        }

        if (Interlocked.Increment(ref _pending) > _options.MaxTracked)
        {
            Release();
            _recorder.CountUntracked();
            return;
        }

        _recorder.CountTracked();
        _ = FollowAsync(statusUri, intendedTimestamp, authorization);
    }

    /// <summary>Completes when every followed delivery has completed, timed out or been abandoned.</summary>
    public Task DrainAsync(CancellationToken cancellationToken)
    {
        // Both sides use full fences (Exchange here, Decrement in Release), so one of them sees the other.
        Interlocked.Exchange(ref _draining, 1);
        if (Volatile.Read(ref _pending) == 0)
        {
            _idle.TrySetResult();
        }

        return _idle.Task.WaitAsync(cancellationToken);
    }

    /// <summary>Waits briefly for follows still unwinding after an abort, then closes the poll connections.</summary>
    public async ValueTask DisposeAsync()
    {
        Interlocked.Exchange(ref _draining, 1);
        if (Volatile.Read(ref _pending) == 0)
        {
            _idle.TrySetResult();
        }

        await Task.WhenAny(_idle.Task, Task.Delay(TimeSpan.FromSeconds(5), _clock.Time)).ConfigureAwait(false);
        _http.Dispose();
    }

    private async Task FollowAsync(Uri statusUri, long intendedTimestamp, AuthenticationHeaderValue? authorization)
    {
        try
        {
            var deadline = intendedTimestamp + _maxWaitTicks;
            while (true)
            {
                var remaining = deadline - _clock.Now;
                if (remaining <= 0)
                {
                    _recorder.CountTimedOut();
                    return;
                }

                var pause = Clock.ToTimeSpan(remaining);
                await Task.Delay(pause < _options.PollInterval ? pause : _options.PollInterval, _clock.Time, _abort).ConfigureAwait(false);
                if (await PollAsync(statusUri, deadline, authorization).ConfigureAwait(false) is { } completedAt)
                {
                    if (completedAt <= deadline)
                    {
                        _recorder.RecordCompletion(intendedTimestamp, completedAt);
                    }
                    else
                    {
                        _recorder.CountTimedOut();
                    }

                    return;
                }
            }
        }
        catch (OperationCanceledException) when (_abort.IsCancellationRequested)
        {
            _recorder.CountAbandoned();
        }
        finally
        {
            Release();
        }
    }

    /// <summary>One status request (with the requesting owner's token: a status is answered to its owner only); the time its completed answer arrived, or null to keep polling.</summary>
    private async Task<long?> PollAsync(Uri statusUri, long deadline, AuthenticationHeaderValue? authorization)
    {
        await _pollSlots.WaitAsync(_abort).ConfigureAwait(false);
        try
        {
            var untilDeadline = Clock.ToTimeSpan(Math.Max(deadline - _clock.Now, 0)) + TimeSpan.FromMilliseconds(100);
            using var limit = new CancellationTokenSource(untilDeadline < _requestTimeout ? untilDeadline : _requestTimeout, _clock.Time);
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(_abort, limit.Token);
            _recorder.CountPollRequest();
            using var request = new HttpRequestMessage(HttpMethod.Get, statusUri);
            request.Headers.Authorization = authorization;
            using var response = await _http.SendAsync(request, timeout.Token).ConfigureAwait(false);
            var answeredAt = _clock.Now;
            if (response.StatusCode == HttpStatusCode.NotFound)
            {
                await ResponseBody.DrainAsync(response, timeout.Token).ConfigureAwait(false);
                return null;
            }

            if (response.StatusCode != HttpStatusCode.OK)
            {
                await ResponseBody.DrainAsync(response, timeout.Token).ConfigureAwait(false);
                _recorder.CountPollError();
                _recorder.RecordErrorSample($"Status poll of {statusUri.AbsolutePath} answered {(int)response.StatusCode}.");
                return null;
            }

            var body = await response.Content.ReadAsByteArrayAsync(timeout.Token).ConfigureAwait(false);
            using var document = JsonDocument.Parse(body);
            return _options.IsCompleted(document.RootElement) ? answeredAt : null;
        }
        catch (OperationCanceledException) when (!_abort.IsCancellationRequested && _clock.Now >= deadline)
        {
            // Cut short by the maximum wait, not failed: the delivery counts as timed out instead.
            return null;
        }
        catch (OperationCanceledException) when (!_abort.IsCancellationRequested)
        {
            _recorder.CountPollError();
            _recorder.RecordErrorSample($"Status poll of {statusUri.AbsolutePath} timed out.");
            return null;
        }
        catch (Exception e) when (e is HttpRequestException or IOException or JsonException or ObjectDisposedException)
        {
            _recorder.CountPollError();
            _recorder.RecordErrorSample($"Status poll of {statusUri.AbsolutePath} failed: {e.Message}");
            return null;
        }
        finally
        {
            _pollSlots.Release();
        }
    }

    private void Release()
    {
        if (Interlocked.Decrement(ref _pending) == 0 && Volatile.Read(ref _draining) == 1)
        {
            _idle.TrySetResult();
        }
    }
}
