using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.Workflow;

/// <summary>
/// How the workflow retries a message after a transient failure (section <c>Redelivery</c>): instead of
/// abandoning it to be delivered again at once, it schedules a copy for later, with exponential back-off
/// and jitter, and completes the original. A transient cause is final only once
/// <see cref="TransientBudget"/> has passed since the first attempt, however many attempts that took.
/// </summary>
public sealed class RedeliverySettings : IValidatableObject
{
    /// <summary>Back-off before the second attempt (10 ms – 10 min). Default 00:00:02. Doubles with each attempt; the wait is drawn between half of it and all of it.</summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "00:10:00")]
    public TimeSpan BaseDelay { get; set; } = TimeSpan.FromSeconds(2);

    /// <summary>Longest back-off between two attempts (10 ms – 1 h, ≥ BaseDelay). Default 00:01:00.</summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "01:00:00")]
    public TimeSpan MaxDelay { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// How long after a message's first attempt transient failures are still retried (0 – 7 days; 0 = the
    /// first transient failure is final). Default 00:10:00. Past it the work done is undone and the message
    /// dead-lettered with <c>TransientFailuresExhausted</c>.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00", "7.00:00:00")]
    public TimeSpan TransientBudget { get; set; } = TimeSpan.FromMinutes(10);

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (MaxDelay < BaseDelay)
        {
            yield return new ValidationResult($"MaxDelay ({MaxDelay}) must not be shorter than BaseDelay ({BaseDelay}).", [nameof(MaxDelay)]);
        }
    }
}

/// <summary>
/// The workflow's circuit breaker (section <c>CircuitBreaker</c>, Polly's): when, on a transient failure, the share
/// of messages that failed transiently over <see cref="SamplingDuration"/> reaches <see cref="FailureRatio"/> (with
/// at least <see cref="MinimumThroughput"/> messages), the processor stops taking messages for
/// <see cref="BreakDuration"/>, then takes them one at a time, without prefetch, until <see cref="ProbeMessages"/>
/// have succeeded, then resumes at Processor:MaxConcurrentCalls. The first message after the break is the
/// half-open probe: its transient failure opens the breaker again.
/// </summary>
public sealed class CircuitBreakerSettings
{
    /// <summary>Whether the breaker may pause the processor. Default true.</summary>
    public bool Enabled { get; set; } = true;

    /// <summary>Share of messages failing transiently that opens the breaker (fraction, 0.01 – 1). Default 0.5.</summary>
    [Range(0.01, 1.0)]
    public double FailureRatio { get; set; } = 0.5;

    /// <summary>Fewest messages in the sampling window before the breaker may open (count, 2 – 100000; Polly's minimum is 2). Default 20.</summary>
    [Range(2, 100_000)]
    public int MinimumThroughput { get; set; } = 20;

    /// <summary>The window over which the failure share is measured (1 s – 10 min). Default 00:00:30.</summary>
    [Range(typeof(TimeSpan), "00:00:01", "00:10:00")]
    public TimeSpan SamplingDuration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long the processor takes no messages once the breaker opens (1 s – 1 h). Default 00:00:30.</summary>
    [Range(typeof(TimeSpan), "00:00:01", "01:00:00")]
    public TimeSpan BreakDuration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Messages that must succeed, taken one at a time, before full concurrency resumes (count, 1 – 1000). Default 5.</summary>
    [Range(1, 1000)]
    public int ProbeMessages { get; set; } = 5;
}
