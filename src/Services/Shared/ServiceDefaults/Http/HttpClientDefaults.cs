using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Http;
using Microsoft.Extensions.Http.Resilience;
using Microsoft.Extensions.Options;
using DroneDelivery.ServiceDefaults.Settings;
using Polly;
using Polly.Registry;

namespace DroneDelivery.ServiceDefaults.Http;

internal static class HttpClientDefaults
{
    /// <summary>
    /// Every client from IHttpClientFactory gets a pooled <see cref="SocketsHttpHandler"/> whose
    /// connections are recycled (so DNS changes are honoured) and the standard resilience pipeline of
    /// Microsoft.Extensions.Http.Resilience configured for its name (<c>Resilience</c> section, refined
    /// per client with <c>services.Configure&lt;ResilienceSettings&gt;("name", ...)</c>).
    /// </summary>
    /// <remarks>
    /// The package's <c>AddStandardResilienceHandler()</c> called inside ConfigureHttpClientDefaults
    /// registers ONE pipeline, under ONE options name, for every client (the defaults builder has no
    /// client name): all clients would share one circuit breaker, so one failing backend would cut off
    /// the others, and a per-client override could not reach its pipeline. So each client name gets
    /// its own pipeline instead, from Polly's registry (which takes the TimeProvider and telemetry from
    /// DI), built from the package's standard strategy options and run by the package's
    /// <see cref="ResilienceHandler"/>.
    /// </remarks>
    public static void AddHttpClientDefaults(this IHostApplicationBuilder builder)
    {
        builder.AddSettings<HttpClientSettings>("HttpClient");
        builder.AddSettings<ResilienceSettings>("Resilience");
        builder.Services.AddHttpClient();
        builder.Services.AddResiliencePipelineRegistry<HttpClientPipelineKey>(
            // Polly's telemetry names the pipeline after the client (pipeline_name="delivery").
            options => options.BuilderNameFormatter = key => key.ClientName);
        builder.Services.ConfigureHttpClientDefaults(http =>
        {
            http.ConfigurePrimaryHttpMessageHandler(services =>
            {
                var settings = services.GetRequiredService<IOptions<HttpClientSettings>>().Value;
                return new SocketsHttpHandler
                {
                    PooledConnectionLifetime = settings.PooledConnectionLifetime,
                    PooledConnectionIdleTimeout = settings.PooledConnectionIdleTimeout,
                    ConnectTimeout = settings.ConnectTimeout,
                    MaxConnectionsPerServer = settings.MaxConnectionsPerServer,
                };
            });

            // The pooled handler recycles its own connections; the factory need not rotate handlers.
            http.SetHandlerLifetime(Timeout.InfiniteTimeSpan);

            // The factory's logging handlers write a start and an end line per request at Information, which the
            // services' log levels drop, and open a logging scope for every request whether or not anything is
            // logged in it: work on every call for nothing. Each call is traced and measured by OpenTelemetry's
            // HttpClient instrumentation, and a failure is logged where it is handled.
            http.RemoveAllLoggers();
        });
        builder.Services.AddSingleton<IHttpMessageHandlerBuilderFilter, ResilienceHandlerFilter>();
    }

    /// <summary>
    /// The package's standard pipeline options for one client's settings. Its rate limiter (a
    /// concurrency limiter of 1000 permits with no queue) is left out of the pipeline: under the
    /// lab's load a service fans out more concurrent calls than that to one backend and would
    /// refuse them itself; concurrency is bounded by <see cref="HttpClientSettings.MaxConnectionsPerServer"/>
    /// and by each service's own limits instead.
    /// </summary>
    internal static HttpStandardResilienceOptions StandardOptions(ResilienceSettings settings)
    {
        var options = new HttpStandardResilienceOptions();
        options.TotalRequestTimeout.Timeout = settings.TotalRequestTimeout;
        options.AttemptTimeout.Timeout = settings.AttemptTimeout;

        options.Retry.MaxRetryAttempts = Math.Max(1, settings.MaxRetryAttempts);
        options.Retry.Delay = settings.RetryBaseDelay;
        options.Retry.MaxDelay = settings.TotalRequestTimeout;
        if (!settings.RetryNonIdempotentMethods)
        {
            // Not DisableForUnsafeHttpMethods(): that also stops retrying PUT and DELETE, which are
            // idempotent here (the workflow's PUT of a drone assignment relies on being retried).
#pragma warning disable EXTEXP0001 // experimental in the package, stable in behaviour
            options.Retry.DisableFor(HttpMethod.Post, HttpMethod.Patch, HttpMethod.Connect);
#pragma warning restore EXTEXP0001
        }

        options.CircuitBreaker.FailureRatio = settings.CircuitBreakerFailureRatio;
        options.CircuitBreaker.MinimumThroughput = settings.CircuitBreakerMinimumThroughput;
        options.CircuitBreaker.SamplingDuration = settings.CircuitBreakerSamplingDuration;
        options.CircuitBreaker.BreakDuration = settings.CircuitBreakerBreakDuration;
        return options;
    }

    /// <summary>
    /// Total timeout → retry (exponential, jittered, Retry-After first; none when
    /// <see cref="ResilienceSettings.MaxRetryAttempts"/> is 0) → circuit breaker → attempt timeout:
    /// the package's standard order.
    /// </summary>
    internal static void AddStandardStrategies(ResiliencePipelineBuilder<HttpResponseMessage> pipeline, ResilienceSettings settings)
    {
        var options = StandardOptions(settings);
        pipeline.AddTimeout(options.TotalRequestTimeout);
        if (settings.MaxRetryAttempts > 0)
        {
            pipeline.AddRetry(options.Retry);
        }

        pipeline
            .AddCircuitBreaker(options.CircuitBreaker)
            .AddTimeout(options.AttemptTimeout);
    }

    /// <summary>A client's pipeline in Polly's registry.</summary>
    internal readonly record struct HttpClientPipelineKey(string ClientName);

    private sealed class ResilienceHandlerFilter(
        IOptionsMonitor<ResilienceSettings> settings,
        ResiliencePipelineRegistry<HttpClientPipelineKey> registry) : IHttpMessageHandlerBuilderFilter
    {
        public Action<HttpMessageHandlerBuilder> Configure(Action<HttpMessageHandlerBuilder> next) => builder =>
        {
            next(builder);
            var name = builder.Name ?? Options.DefaultName;
            var clientSettings = settings.Get(name);
            if (clientSettings.Enabled)
            {
                var pipeline = registry.GetOrAddPipeline<HttpResponseMessage>(
                    new HttpClientPipelineKey(name.Length == 0 ? "default" : name),
                    pipeline => AddStandardStrategies(pipeline, clientSettings));
                builder.AdditionalHandlers.Add(new RetriedBodyBuffer(clientSettings.RetryNonIdempotentMethods && clientSettings.MaxRetryAttempts > 0));
                builder.AdditionalHandlers.Add(new ResilienceHandler(pipeline));
            }
        };
    }

    /// <summary>
    /// The package's handler sends the same request message again on a retry, and a streamed body
    /// (a non-seekable <see cref="StreamContent"/>) cannot be read twice: the retry would fail with
    /// "the stream was already consumed". A body of a request that may be retried is therefore read
    /// into memory once, before the first attempt, and every attempt sends that copy.
    /// </summary>
    private sealed class RetriedBodyBuffer(bool retriesNonIdempotentMethods) : DelegatingHandler
    {
        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            if (request.Content is { } content && MayBeRetried(request.Method))
            {
                await content.LoadIntoBufferAsync(cancellationToken).ConfigureAwait(false);
            }

            return await base.SendAsync(request, cancellationToken).ConfigureAwait(false);
        }

        private bool MayBeRetried(HttpMethod method) =>
            retriesNonIdempotentMethods || (method != HttpMethod.Post && method != HttpMethod.Patch && method != HttpMethod.Connect);
    }
}
