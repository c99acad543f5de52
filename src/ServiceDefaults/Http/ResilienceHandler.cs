using System.Diagnostics.Metrics;
using System.Net;
using Microsoft.Extensions.Logging;
using Polly;
using Polly.CircuitBreaker;
using Polly.Retry;
using Polly.Timeout;

namespace DroneDelivery.ServiceDefaults.Http;

/// <summary>
/// Runs every outgoing request of one named HttpClient through a Polly v8 pipeline:
/// total timeout → retry (exponential, jittered, Retry-After aware) → circuit breaker → attempt timeout.
/// The request content is buffered once so each attempt sends an identical copy.
/// </summary>
internal sealed partial class ResilienceHandler : DelegatingHandler
{
    internal const string MeterName = "DroneDelivery.Http";
    internal const string EventsInstrument = "dronedelivery.http.resilience.events";

    private static readonly Meter Meter = new(MeterName);
    private static readonly Counter<long> Events = Meter.CreateCounter<long>(
        EventsInstrument, "{event}", "Retries, timeouts and circuit-breaker transitions of outgoing HTTP calls.");

    private static readonly ResiliencePropertyKey<HttpRequestMessage> RequestKey = new("request");

    private readonly ResiliencePipeline<HttpResponseMessage> _pipeline;
    private readonly bool _retryNonIdempotent;

    public ResilienceHandler(string clientName, ResilienceSettings settings, ILogger logger)
    {
        _retryNonIdempotent = settings.RetryNonIdempotentMethods;
        var builder = new ResiliencePipelineBuilder<HttpResponseMessage>()
            .AddTimeout(new TimeoutStrategyOptions
            {
                Timeout = settings.TotalRequestTimeout,
                OnTimeout = _ => Record(clientName, "total_timeout"),
            });
        if (settings.MaxRetryAttempts > 0)
        {
            builder.AddRetry(new RetryStrategyOptions<HttpResponseMessage>
            {
                MaxRetryAttempts = settings.MaxRetryAttempts,
                BackoffType = DelayBackoffType.Exponential,
                UseJitter = true,
                Delay = settings.RetryBaseDelay,
                MaxDelay = settings.TotalRequestTimeout,
                ShouldHandle = args => ValueTask.FromResult(IsRetryable(args.Context) && IsTransient(args.Outcome)),
                DelayGenerator = args => ValueTask.FromResult(RetryAfter(args.Outcome.Result)),
                OnRetry = args =>
                {
                    LogRetry(logger, clientName, args.AttemptNumber + 1, Describe(args.Outcome), args.RetryDelay.TotalMilliseconds);
                    args.Outcome.Result?.Dispose();
                    return Record(clientName, "retry");
                },
            });
        }

        _pipeline = builder
            .AddCircuitBreaker(new CircuitBreakerStrategyOptions<HttpResponseMessage>
            {
                FailureRatio = settings.CircuitBreakerFailureRatio,
                MinimumThroughput = settings.CircuitBreakerMinimumThroughput,
                SamplingDuration = settings.CircuitBreakerSamplingDuration,
                BreakDuration = settings.CircuitBreakerBreakDuration,
                ShouldHandle = args => ValueTask.FromResult(IsTransient(args.Outcome)),
                OnOpened = args =>
                {
                    LogCircuitOpened(logger, clientName, args.BreakDuration.TotalSeconds, Describe(args.Outcome));
                    return Record(clientName, "circuit_opened");
                },
                OnClosed = _ => Record(clientName, "circuit_closed"),
            })
            .AddTimeout(new TimeoutStrategyOptions
            {
                Timeout = settings.AttemptTimeout,
                OnTimeout = _ => Record(clientName, "attempt_timeout"),
            })
            .Build();
    }

    protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var snapshot = await RequestSnapshot.CreateAsync(request, cancellationToken).ConfigureAwait(false);
        var context = ResilienceContextPool.Shared.Get(cancellationToken);
        context.Properties.Set(RequestKey, request);
        try
        {
            var attempt = 0;
            var outcome = await _pipeline.ExecuteOutcomeAsync(
                async (ctx, state) =>
                {
                    // The first attempt sends the caller's request; later ones send fresh copies.
                    var message = attempt++ == 0 ? request : state.Snapshot.Create();
                    try
                    {
                        return Outcome.FromResult(await state.Handler.SendCoreAsync(message, ctx.CancellationToken).ConfigureAwait(false));
                    }
                    catch (Exception e)
                    {
                        return Outcome.FromException<HttpResponseMessage>(e);
                    }
                },
                context,
                (Handler: this, Snapshot: snapshot)).ConfigureAwait(false);
            outcome.ThrowIfException();
            return outcome.Result!;
        }
        finally
        {
            ResilienceContextPool.Shared.Return(context);
        }
    }

    private Task<HttpResponseMessage> SendCoreAsync(HttpRequestMessage request, CancellationToken cancellationToken) =>
        base.SendAsync(request, cancellationToken);

    private bool IsRetryable(ResilienceContext context)
    {
        if (_retryNonIdempotent || !context.Properties.TryGetValue(RequestKey, out var request))
        {
            return true;
        }

        var method = request.Method;
        return method == HttpMethod.Get || method == HttpMethod.Head || method == HttpMethod.Options ||
               method == HttpMethod.Put || method == HttpMethod.Delete;
    }

    /// <summary>Network errors, timeouts, 408, 429 and 5xx are worth another attempt; other answers are final.</summary>
    internal static bool IsTransient(Outcome<HttpResponseMessage> outcome) => outcome switch
    {
        { Exception: HttpRequestException or TimeoutRejectedException } => true,
        { Result: { } response } => response.StatusCode is HttpStatusCode.RequestTimeout or HttpStatusCode.TooManyRequests
                                    || (int)response.StatusCode >= 500,
        _ => false,
    };

    private static TimeSpan? RetryAfter(HttpResponseMessage? response)
    {
        var retryAfter = response?.Headers.RetryAfter;
        return retryAfter switch
        {
            { Delta: { } delta } => delta,
            { Date: { } date } => date - DateTimeOffset.UtcNow is { Ticks: > 0 } wait ? wait : TimeSpan.Zero,
            _ => null,
        };
    }

    private static string Describe(Outcome<HttpResponseMessage> outcome) =>
        outcome.Exception?.GetType().Name ?? $"HTTP {(int?)outcome.Result?.StatusCode}";

    private static ValueTask Record(string client, string kind)
    {
        Events.Add(1, new KeyValuePair<string, object?>("http.client.name", client), new KeyValuePair<string, object?>("event", kind));
        return ValueTask.CompletedTask;
    }

    [LoggerMessage(EventId = 2000, Level = LogLevel.Warning, Message = "HTTP client {ClientName}: attempt {Attempt} failed ({Outcome}); retrying in {DelayMs:0} ms")]
    private static partial void LogRetry(ILogger logger, string clientName, int attempt, string outcome, double delayMs);

    [LoggerMessage(EventId = 2001, Level = LogLevel.Warning, Message = "HTTP client {ClientName}: circuit opened for {BreakSeconds:0.#} s after {Outcome}")]
    private static partial void LogCircuitOpened(ILogger logger, string clientName, double breakSeconds, string outcome);

    /// <summary>An immutable copy of a request from which identical requests can be made for retries.</summary>
    private sealed class RequestSnapshot
    {
        private readonly HttpRequestMessage _original;
        private readonly byte[]? _content;
        private readonly KeyValuePair<string, IEnumerable<string>>[] _contentHeaders;

        private RequestSnapshot(HttpRequestMessage original, byte[]? content)
        {
            _original = original;
            _content = content;
            _contentHeaders = original.Content is null ? [] : [.. original.Content.Headers];
        }

        public static async Task<RequestSnapshot> CreateAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            byte[]? content = null;
            if (request.Content is not null)
            {
                // Buffers the body so the original content stays readable for the first attempt.
                await request.Content.LoadIntoBufferAsync(cancellationToken).ConfigureAwait(false);
                content = await request.Content.ReadAsByteArrayAsync(cancellationToken).ConfigureAwait(false);
            }

            return new RequestSnapshot(request, content);
        }

        public HttpRequestMessage Create()
        {
            var copy = new HttpRequestMessage(_original.Method, _original.RequestUri)
            {
                Version = _original.Version,
                VersionPolicy = _original.VersionPolicy,
            };
            foreach (var header in _original.Headers)
            {
                copy.Headers.TryAddWithoutValidation(header.Key, header.Value);
            }

            foreach (var option in _original.Options)
            {
                ((IDictionary<string, object?>)copy.Options)[option.Key] = option.Value;
            }

            if (_content is not null)
            {
                copy.Content = new ByteArrayContent(_content);
                foreach (var header in _contentHeaders)
                {
                    copy.Content.Headers.TryAddWithoutValidation(header.Key, header.Value);
                }
            }

            return copy;
        }
    }
}
