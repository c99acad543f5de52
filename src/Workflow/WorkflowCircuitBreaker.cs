using Microsoft.Extensions.Options;

namespace DroneDelivery.Workflow;

/// <summary>The breaker's states.</summary>
public enum BreakerState
{
    /// <summary>Messages are taken at Processor:MaxConcurrentCalls.</summary>
    Closed,

    /// <summary>No message is taken until CircuitBreaker:BreakDuration has passed.</summary>
    Open,

    /// <summary>Messages are taken one at a time until CircuitBreaker:ProbeMessages have succeeded.</summary>
    HalfOpen,
}

/// <summary>
/// Counts the outcome of each message over a sliding window on the injected clock and decides when the
/// processor must pause (<see cref="DeliveryProcessor"/> acts on it). Only outcomes that say something
/// about the backends count: a success, or a transient failure of a backend call.
/// </summary>
public sealed class WorkflowCircuitBreaker(IOptions<CircuitBreakerSettings> settings, TimeProvider time)
{
    private readonly CircuitBreakerSettings _settings = settings.Value;
    private readonly Lock _gate = new();
    private readonly Queue<(DateTimeOffset At, bool Failed)> _window = new();
    private int _failures;
    private int _probeSuccesses;
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public BreakerState State { get; private set; } = BreakerState.Closed;

    /// <summary>Records a message whose backend calls all answered (success or permanent refusal).</summary>
    public void RecordSuccess() => Record(failed: false);

    /// <summary>Records a message that failed because a backend failed transiently.</summary>
    public void RecordTransientFailure() => Record(failed: true);

    /// <summary>Completes when <see cref="State"/> changes next.</summary>
    public Task WaitForChangeAsync(CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            return _changed.Task.WaitAsync(cancellationToken);
        }
    }

    /// <summary>After the break: let messages through one at a time.</summary>
    public void HalfOpen()
    {
        lock (_gate)
        {
            if (State == BreakerState.Open)
            {
                _probeSuccesses = 0;
                MoveTo(BreakerState.HalfOpen);
            }
        }
    }

    private void Record(bool failed)
    {
        if (!_settings.Enabled)
        {
            return;
        }

        lock (_gate)
        {
            switch (State)
            {
                case BreakerState.Open:
                    // Messages still running when the breaker opened say nothing new.
                    return;
                case BreakerState.HalfOpen when failed:
                    MoveTo(BreakerState.Open);
                    return;
                case BreakerState.HalfOpen:
                    if (++_probeSuccesses >= _settings.ProbeMessages)
                    {
                        _window.Clear();
                        _failures = 0;
                        MoveTo(BreakerState.Closed);
                    }

                    return;
            }

            var now = time.GetUtcNow();
            _window.Enqueue((now, failed));
            _failures += failed ? 1 : 0;
            while (_window.TryPeek(out var oldest) && now - oldest.At > _settings.SamplingDuration)
            {
                _failures -= _window.Dequeue().Failed ? 1 : 0;
            }

            if (_window.Count >= _settings.MinimumThroughput && _failures >= _settings.FailureRatio * _window.Count)
            {
                _window.Clear();
                _failures = 0;
                MoveTo(BreakerState.Open);
            }
        }
    }

    private void MoveTo(BreakerState state)
    {
        State = state;
        WorkflowTelemetry.BreakerTransitions.Add(1, new KeyValuePair<string, object?>("state", StateTag(state)));
        var changed = _changed;
        _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        changed.SetResult();
    }

    /// <summary>The <c>state</c> tag of <see cref="WorkflowTelemetry.BreakerTransitionsName"/>.</summary>
    public static string StateTag(BreakerState state) => state switch
    {
        BreakerState.Open => "open",
        BreakerState.HalfOpen => "half_open",
        _ => "closed",
    };
}
