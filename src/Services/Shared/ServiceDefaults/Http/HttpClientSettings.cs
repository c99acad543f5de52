using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.ServiceDefaults.Http;

/// <summary>Connection pooling for every outgoing HttpClient (section <c>HttpClient</c>).</summary>
public sealed class HttpClientSettings
{
    /// <summary>
    /// How long a pooled connection is reused before it is replaced. Bounded so that DNS changes
    /// (pods rescheduled behind a Service) are honoured. Default 2 minutes.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:01", "01:00:00")]
    public TimeSpan PooledConnectionLifetime { get; set; } = TimeSpan.FromMinutes(2);

    /// <summary>How long an idle pooled connection is kept. Default 1 minute.</summary>
    [Range(typeof(TimeSpan), "00:00:01", "01:00:00")]
    public TimeSpan PooledConnectionIdleTimeout { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>Time allowed to establish a TCP connection. Default 5 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00.100", "00:01:00")]
    public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Maximum concurrent connections to one server (count). Default 1024.</summary>
    [Range(1, 65535)]
    public int MaxConnectionsPerServer { get; set; } = 1024;
}

/// <summary>
/// The standard resilience pipeline of every outgoing HttpClient (section <c>Resilience</c>;
/// Microsoft.Extensions.Http.Resilience): a total timeout around retries with exponential back-off
/// and jitter (a Retry-After header wins), a circuit breaker, and a timeout per attempt. A service
/// can override it for one named client (e.g. a per-backend timeout); each client name has its own
/// pipeline and circuit.
/// </summary>
public sealed class ResilienceSettings : IValidatableObject
{
    /// <summary>Whether the pipeline runs at all. Default true; a client whose SDK retries by itself turns it off.</summary>
    public bool Enabled { get; set; } = true;

    /// <summary>Limit for a whole call including retries. Default 30 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "00:10:00")]
    public TimeSpan TotalRequestTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Limit for one attempt. Default 10 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "00:10:00")]
    public TimeSpan AttemptTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>Retries after the first attempt (count; 0 disables retrying). Default 3.</summary>
    [Range(0, 10)]
    public int MaxRetryAttempts { get; set; } = 3;

    /// <summary>Base delay of the exponential back-off (jittered; a Retry-After header wins). Default 2 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00", "00:01:00")]
    public TimeSpan RetryBaseDelay { get; set; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Whether POST and PATCH (not idempotent) are retried too. Default false: only GET, HEAD,
    /// OPTIONS, PUT and DELETE are retried. The body of a request that may be retried is read into
    /// memory before the first attempt, so a retry resends it even when it was a stream.
    /// </summary>
    public bool RetryNonIdempotentMethods { get; set; }

    /// <summary>Failure ratio within the sampling window that opens the circuit (0–1). Default 0.1.</summary>
    [Range(0.01, 1.0)]
    public double CircuitBreakerFailureRatio { get; set; } = 0.1;

    /// <summary>Calls needed in the window before the circuit may open (count). Default 100.</summary>
    [Range(2, 100_000)]
    public int CircuitBreakerMinimumThroughput { get; set; } = 100;

    /// <summary>Window over which the failure ratio is measured. Default 30 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00.500", "00:10:00")]
    public TimeSpan CircuitBreakerSamplingDuration { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long the circuit stays open before a trial call. Default 5 seconds.</summary>
    [Range(typeof(TimeSpan), "00:00:00.500", "00:10:00")]
    public TimeSpan CircuitBreakerBreakDuration { get; set; } = TimeSpan.FromSeconds(5);

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (AttemptTimeout > TotalRequestTimeout)
        {
            yield return new ValidationResult(
                $"AttemptTimeout ({AttemptTimeout}) must not exceed TotalRequestTimeout ({TotalRequestTimeout}).",
                [nameof(AttemptTimeout)]);
        }
    }
}
