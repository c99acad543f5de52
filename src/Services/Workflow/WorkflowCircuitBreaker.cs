using Microsoft.Extensions.Options;
using Polly;
using Polly.CircuitBreaker;

namespace DroneDelivery.Workflow;

/// <summary>The breaker's states.</summary>
public enum BreakerState
{
    /// <summary>Messages are taken (at Processor:MaxConcurrentCalls once the ramp after a break is done).</summary>
    Closed,

    /// <summary>No message is taken until CircuitBreaker:BreakDuration has passed.</summary>
    Open,

    /// <summary>The break has passed: the next message's outcome decides (success closes, failure opens again).</summary>
    HalfOpen,
}

/// <summary>
/// Polly's circuit breaker over the outcome of each message, on the injected clock: it decides when the processor
/// must pause (<see cref="DeliveryProcessor"/> acts on it). Only outcomes that say something about the backends
/// count: a success, or a transient failure of a backend call. Each outcome is one execution of the breaker's
/// pipeline, so Polly's sampling (FailureRatio over SamplingDuration with MinimumThroughput, evaluated on a
/// failure), its break and its single half-open probe apply unchanged. An outcome recorded while the circuit is
/// open (a message still running when it opened) or while the half-open probe is in flight is dropped: it says
/// nothing new.
/// </summary>
public sealed class WorkflowCircuitBreaker
{
    private readonly bool _enabled;
    private readonly ResiliencePipeline<bool> _pipeline;
    private readonly Lock _gate = new();
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private long _successes;
    private long _openings;

    public WorkflowCircuitBreaker(IOptions<CircuitBreakerSettings> settings, TimeProvider time)
    {
        var options = settings.Value;
        _enabled = options.Enabled;
        _pipeline = new ResiliencePipelineBuilder<bool> { TimeProvider = time }
            .AddCircuitBreaker(new CircuitBreakerStrategyOptions<bool>
            {
                FailureRatio = options.FailureRatio,
                MinimumThroughput = options.MinimumThroughput,
                SamplingDuration = options.SamplingDuration,
                BreakDuration = options.BreakDuration,
                // The executed callback returns whether the message failed transiently.
                ShouldHandle = static args => ValueTask.FromResult(args.Outcome.Result),
                OnOpened = _ =>
                {
                    Interlocked.Increment(ref _openings);
                    return MoveTo(BreakerState.Open);
                },
                OnHalfOpened = _ => MoveTo(BreakerState.HalfOpen),
                OnClosed = _ => MoveTo(BreakerState.Closed),
            })
            .Build();
    }

    public BreakerState State { get; private set; } = BreakerState.Closed;

    /// <summary>Successes recorded so far (what the ramp after a break counts).</summary>
    public long Successes => Interlocked.Read(ref _successes);

    /// <summary>Times the circuit has opened so far.</summary>
    public long Openings => Interlocked.Read(ref _openings);

    /// <summary>Records a message whose backend calls all answered (success or permanent refusal).</summary>
    public void RecordSuccess() => Record(failed: false);

    /// <summary>Records a message that failed because a backend failed transiently.</summary>
    public void RecordTransientFailure() => Record(failed: true);

    /// <summary>Completes at the next change of <see cref="State"/> or the next success recorded.</summary>
    public Task WaitForChangeAsync(CancellationToken cancellationToken)
    {
        lock (_gate)
        {
            return _changed.Task.WaitAsync(cancellationToken);
        }
    }

    private void Record(bool failed)
    {
        if (!_enabled)
        {
            return;
        }

        try
        {
            _pipeline.Execute(static failed => failed, failed);
        }
        catch (BrokenCircuitException)
        {
            return;
        }

        if (!failed)
        {
            Interlocked.Increment(ref _successes);
            Signal();
        }
    }

    private ValueTask MoveTo(BreakerState state)
    {
        State = state;
        WorkflowTelemetry.BreakerTransitions.Add(1, new KeyValuePair<string, object?>("state", StateTag(state)));
        Signal();
        return ValueTask.CompletedTask;
    }

    private void Signal()
    {
        TaskCompletionSource changed;
        lock (_gate)
        {
            changed = _changed;
            _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

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
