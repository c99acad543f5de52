using System.Net;
using System.Text;
using DroneDelivery.ServiceDefaults.Http;
using DroneDelivery.TestSupport;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Http.Resilience;
using Microsoft.Extensions.Time.Testing;
using Polly.CircuitBreaker;

namespace DroneDelivery.ServiceDefaults.Tests;

public class ResilienceTests
{
    private static readonly Dictionary<string, string?> FastRetries = new()
    {
        ["Resilience:RetryBaseDelay"] = "00:00:00.010",
    };

    /// <summary>No back-off of its own: any wait a test sees comes from Retry-After or a timeout.</summary>
    private static readonly Dictionary<string, string?> ImmediateRetries = new()
    {
        ["Resilience:RetryBaseDelay"] = "00:00:00",
    };

    [Fact]
    public async Task Transient_failures_of_a_get_are_retried_until_it_succeeds()
    {
        var backend = new FlakyBackend(failures: 2);
        await using var service = await TestService.StartAsync(FastRetries, map: backend.Map);

        var response = await Client(service).GetAsync(new Uri(service.BaseAddress, "/flaky"));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(3, backend.Calls);
    }

    [Fact]
    public async Task A_post_is_not_retried_unless_configured()
    {
        var backend = new FlakyBackend(failures: int.MaxValue);
        await using var service = await TestService.StartAsync(FastRetries, map: backend.Map);

        var response = await Client(service).PostAsync(new Uri(service.BaseAddress, "/flaky"), new StringContent("x"));

        Assert.Equal(HttpStatusCode.ServiceUnavailable, response.StatusCode);
        Assert.Equal(1, backend.Calls);
    }

    [Fact]
    public async Task A_put_is_retried_as_idempotent()
    {
        var backend = new FlakyBackend(failures: 1);
        await using var service = await TestService.StartAsync(FastRetries, map: backend.Map);

        var response = await Client(service).PutAsync(new Uri(service.BaseAddress, "/flaky"), new StringContent("{}"));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(2, backend.Calls);
    }

    [Fact]
    public async Task A_retried_post_sends_the_same_body_every_time()
    {
        var backend = new FlakyBackend(failures: 2);
        await using var service = await TestService.StartAsync(
            new(FastRetries) { ["Resilience:RetryNonIdempotentMethods"] = "true" },
            map: backend.Map);

        var response = await Client(service).PostAsync(
            new Uri(service.BaseAddress, "/flaky"), new StringContent("{\"id\":\"d-1\"}", Encoding.UTF8, "application/json"));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(["{\"id\":\"d-1\"}", "{\"id\":\"d-1\"}", "{\"id\":\"d-1\"}"], backend.Bodies);
    }

    [Fact]
    public async Task A_retried_post_resends_a_streamed_body()
    {
        var backend = new FlakyBackend(failures: 2);
        await using var service = await TestService.StartAsync(
            new(FastRetries) { ["Resilience:RetryNonIdempotentMethods"] = "true" },
            map: backend.Map);

        // A stream that can be read once, as a request body forwarded from elsewhere would be.
        using var body = new ReadOnceStream(Encoding.UTF8.GetBytes("{\"id\":\"d-2\"}"));
        var content = new StreamContent(body);
        content.Headers.ContentType = new("application/json");
        var response = await Client(service).PostAsync(new Uri(service.BaseAddress, "/flaky"), content);

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(["{\"id\":\"d-2\"}", "{\"id\":\"d-2\"}", "{\"id\":\"d-2\"}"], backend.Bodies);
    }

    [Fact]
    public async Task A_503_with_retry_after_is_retried_only_once_that_time_has_passed()
    {
        var time = new FakeTimeProvider();
        var backend = new FlakyBackend(failures: 1, time) { RetryAfter = TimeSpan.FromSeconds(5) };
        await using var service = await TestService.StartAsync(
            ImmediateRetries, builder => builder.Services.AddSingleton<TimeProvider>(time), backend.Map);

        var call = Client(service).GetAsync(new Uri(service.BaseAddress, "/flaky"));
        Assert.True(await Eventually.TrueAsync(() => backend.Calls == 1, TimeSpan.FromSeconds(10)));

        Assert.True(await AdvanceUntilAsync(time, () => backend.Calls > 1, TimeSpan.FromSeconds(10)));

        // The backend stamps each call with the pipeline's clock, which only this test moves: without
        // Retry-After the retry would have followed at once (no base delay), stamped at 0 s.
        Assert.Equal(HttpStatusCode.OK, (await call).StatusCode);
        Assert.True(backend.CallTimes[1] - backend.CallTimes[0] >= TimeSpan.FromSeconds(5), $"retried after {backend.CallTimes[1] - backend.CallTimes[0]}");
    }

    [Fact]
    public async Task A_hung_attempt_is_cut_off_by_the_attempt_timeout_and_retried()
    {
        var time = new FakeTimeProvider();
        var backend = new FlakyBackend(failures: 0, time) { HangFirstCall = true };
        await using var service = await TestService.StartAsync(
            new(ImmediateRetries) { ["Resilience:AttemptTimeout"] = "00:00:00.300" },
            builder => builder.Services.AddSingleton<TimeProvider>(time),
            backend.Map);

        var call = Client(service).GetAsync(new Uri(service.BaseAddress, "/flaky"));
        await backend.FirstCallStarted.Task.WaitAsync(TimeSpan.FromSeconds(10));

        // The attempt hangs until the pipeline's clock passes the attempt timeout.
        Assert.True(await AdvanceUntilAsync(time, () => backend.Calls > 1, TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(50)));

        Assert.Equal(HttpStatusCode.OK, (await call).StatusCode);
        Assert.Equal(2, backend.Calls);
        Assert.True(backend.CallTimes[1] - backend.CallTimes[0] >= TimeSpan.FromMilliseconds(300));
    }

    [Fact]
    public async Task The_circuit_opens_after_repeated_failures_and_stops_calling_the_backend()
    {
        var backend = new FlakyBackend(failures: int.MaxValue);
        await using var service = await TestService.StartAsync(Breaking, map: backend.Map);
        var client = Client(service);
        var url = new Uri(service.BaseAddress, "/flaky");

        for (var i = 0; i < 2; i++)
        {
            await client.GetAsync(url);
        }

        var callsBeforeOpen = backend.Calls;
        await Assert.ThrowsAsync<BrokenCircuitException>(() => client.GetAsync(url));
        Assert.Equal(callsBeforeOpen, backend.Calls);
    }

    [Fact]
    public async Task Each_client_has_its_own_circuit()
    {
        var backend = new FlakyBackend(failures: int.MaxValue);
        await using var service = await TestService.StartAsync(Breaking, map: app =>
        {
            backend.Map(app);
            app.MapGet("/fine", () => "fine");
        });
        var factory = service.App.Services.GetRequiredService<IHttpClientFactory>();
        for (var i = 0; i < 2; i++)
        {
            await factory.CreateClient("failing").GetAsync(new Uri(service.BaseAddress, "/flaky"));
        }

        await Assert.ThrowsAsync<BrokenCircuitException>(() => factory.CreateClient("failing").GetAsync(new Uri(service.BaseAddress, "/flaky")));
        var other = await factory.CreateClient("healthy").GetAsync(new Uri(service.BaseAddress, "/fine"));

        Assert.Equal(HttpStatusCode.OK, other.StatusCode);
    }

    [Fact]
    public async Task One_named_client_can_override_the_pipeline()
    {
        var backend = new FlakyBackend(failures: int.MaxValue);
        await using var service = await TestService.StartAsync(
            FastRetries,
            builder => builder.Services.Configure<ResilienceSettings>("no-retries", settings => settings.MaxRetryAttempts = 0),
            backend.Map);
        var factory = service.App.Services.GetRequiredService<IHttpClientFactory>();

        await factory.CreateClient("no-retries").GetAsync(new Uri(service.BaseAddress, "/flaky"));
        Assert.Equal(1, backend.Calls);

        await factory.CreateClient("default-retries").GetAsync(new Uri(service.BaseAddress, "/flaky"));
        Assert.Equal(1 + 4, backend.Calls);
    }

    [Fact]
    public async Task A_disabled_pipeline_adds_no_handler()
    {
        await using var service = await TestService.StartAsync(configure: builder =>
            builder.Services.Configure<ResilienceSettings>("sdk-retries", settings => settings.Enabled = false));

        var factory = service.App.Services.GetRequiredService<IHttpMessageHandlerFactory>();

        Assert.DoesNotContain(Chain(factory.CreateHandler("sdk-retries")), h => h is ResilienceHandler);
        Assert.Contains(Chain(factory.CreateHandler("backend")), h => h is ResilienceHandler);
    }

    [Fact]
    public async Task Retries_are_exported_as_polly_metrics()
    {
        var backend = new FlakyBackend(failures: 1);
        await using var service = await TestService.StartAsync(FastRetries, map: backend.Map);

        Assert.Equal(HttpStatusCode.OK, (await Client(service).GetAsync(new Uri(service.BaseAddress, "/flaky"))).StatusCode);
        var text = await service.Client.GetStringAsync("/metrics");

        var retries = text.Split('\n').Where(line => line.StartsWith("resilience_polly_strategy_events_total{", StringComparison.Ordinal)).ToList();
        Assert.Contains(retries, line => line.Contains("event_name=\"OnRetry\"", StringComparison.Ordinal) && line.Contains("pipeline_name=\"backend\"", StringComparison.Ordinal));
        Assert.Contains("resilience_polly_pipeline_duration_milliseconds_bucket{", text);
    }

    [Fact]
    public async Task Connection_pool_settings_reach_the_primary_handler()
    {
        await using var service = await TestService.StartAsync(new()
        {
            ["HttpClient:PooledConnectionLifetime"] = "00:00:42",
            ["HttpClient:MaxConnectionsPerServer"] = "7",
            ["HttpClient:ConnectTimeout"] = "00:00:03",
        });

        var chain = Chain(service.App.Services.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler("backend"));

        var sockets = Assert.IsType<SocketsHttpHandler>(chain[^1]);
        Assert.Equal(TimeSpan.FromSeconds(42), sockets.PooledConnectionLifetime);
        Assert.Equal(7, sockets.MaxConnectionsPerServer);
        Assert.Equal(TimeSpan.FromSeconds(3), sockets.ConnectTimeout);
        Assert.Contains(chain, h => h is ResilienceHandler);
    }

    [Fact]
    public void Settings_map_onto_the_standard_pipeline_options()
    {
        var options = HttpClientDefaults.StandardOptions(new ResilienceSettings
        {
            TotalRequestTimeout = TimeSpan.FromSeconds(12),
            AttemptTimeout = TimeSpan.FromSeconds(4),
            MaxRetryAttempts = 5,
            RetryBaseDelay = TimeSpan.FromMilliseconds(250),
            CircuitBreakerFailureRatio = 0.3,
            CircuitBreakerMinimumThroughput = 40,
            CircuitBreakerSamplingDuration = TimeSpan.FromSeconds(20),
            CircuitBreakerBreakDuration = TimeSpan.FromSeconds(7),
        });

        Assert.Equal(TimeSpan.FromSeconds(12), options.TotalRequestTimeout.Timeout);
        Assert.Equal(TimeSpan.FromSeconds(4), options.AttemptTimeout.Timeout);
        Assert.Equal(5, options.Retry.MaxRetryAttempts);
        Assert.Equal(TimeSpan.FromMilliseconds(250), options.Retry.Delay);
        Assert.True(options.Retry.ShouldRetryAfterHeader);
        Assert.Equal(0.3, options.CircuitBreaker.FailureRatio);
        Assert.Equal(40, options.CircuitBreaker.MinimumThroughput);
        Assert.Equal(TimeSpan.FromSeconds(20), options.CircuitBreaker.SamplingDuration);
        Assert.Equal(TimeSpan.FromSeconds(7), options.CircuitBreaker.BreakDuration);
    }

    private static readonly Dictionary<string, string?> Breaking = new()
    {
        ["Resilience:MaxRetryAttempts"] = "0",
        ["Resilience:CircuitBreakerMinimumThroughput"] = "2",
        ["Resilience:CircuitBreakerFailureRatio"] = "0.5",
        ["Resilience:CircuitBreakerBreakDuration"] = "00:01:00",
    };

    private static HttpClient Client(TestService service) =>
        service.App.Services.GetRequiredService<IHttpClientFactory>().CreateClient("backend");

    private static List<HttpMessageHandler> Chain(HttpMessageHandler handler)
    {
        var chain = new List<HttpMessageHandler>();
        for (HttpMessageHandler? current = handler; current is not null; current = (current as DelegatingHandler)?.InnerHandler)
        {
            chain.Add(current);
        }

        return chain;
    }

    /// <summary>
    /// Moves the pipeline's clock forward a step at a time, giving the service a moment of real time
    /// after each step, until <paramref name="condition"/> holds or <paramref name="limit"/> has passed
    /// on that clock. A timer the pipeline starts late only fires later, never earlier.
    /// </summary>
    private static async Task<bool> AdvanceUntilAsync(FakeTimeProvider time, Func<bool> condition, TimeSpan limit, TimeSpan? step = null)
    {
        var advanced = TimeSpan.Zero;
        var increment = step ?? TimeSpan.FromMilliseconds(250);
        while (advanced + increment <= limit)
        {
            time.Advance(increment);
            advanced += increment;
            if (await Eventually.TrueAsync(condition, TimeSpan.FromMilliseconds(40), TimeSpan.FromMilliseconds(5)))
            {
                return true;
            }
        }

        return condition();
    }

    /// <summary>An endpoint that answers 503 a number of times, optionally hanging on the first call.</summary>
    private sealed class FlakyBackend(int failures, TimeProvider? time = null)
    {
        private readonly TimeProvider _time = time ?? TimeProvider.System;
        private int _calls;

        public bool HangFirstCall { get; init; }

        public TimeSpan? RetryAfter { get; init; }

        public int Calls => _calls;

        public List<string> Bodies { get; } = [];

        /// <summary>When each call arrived, on the test's clock.</summary>
        public List<DateTimeOffset> CallTimes { get; } = [];

        public TaskCompletionSource FirstCallStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Map(WebApplication app)
        {
            app.MapMethods("/flaky", ["GET", "POST", "PUT"], async (HttpRequest request, HttpResponse response, CancellationToken cancellationToken) =>
            {
                lock (Bodies)
                {
                    CallTimes.Add(_time.GetUtcNow());
                }

                var call = Interlocked.Increment(ref _calls);
                using var reader = new StreamReader(request.Body);
                var body = await reader.ReadToEndAsync(cancellationToken);
                lock (Bodies)
                {
                    Bodies.Add(body);
                }

                if (call == 1)
                {
                    FirstCallStarted.TrySetResult();
                    if (HangFirstCall)
                    {
                        await Task.Delay(TimeSpan.FromSeconds(20), cancellationToken);
                    }
                }

                if (call > failures)
                {
                    return Results.Ok("fine");
                }

                if (RetryAfter is { } retryAfter)
                {
                    response.Headers.RetryAfter = ((int)retryAfter.TotalSeconds).ToString(System.Globalization.CultureInfo.InvariantCulture);
                }

                return Results.StatusCode(503);
            });
        }
    }

    /// <summary>A non-seekable stream over some bytes.</summary>
    private sealed class ReadOnceStream(byte[] bytes) : MemoryStream(bytes)
    {
        public override bool CanSeek => false;

        public override long Seek(long offset, SeekOrigin loc) => throw new NotSupportedException();

        public override long Position
        {
            get => base.Position;
            set => throw new NotSupportedException();
        }
    }
}
