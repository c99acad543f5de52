using System.Net;
using System.Text;
using DroneDelivery.ServiceDefaults.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Polly.CircuitBreaker;

namespace DroneDelivery.ServiceDefaults.Tests;

public class ResilienceTests
{
    private static readonly Dictionary<string, string?> FastRetries = new()
    {
        ["Resilience:RetryBaseDelay"] = "00:00:00.010",
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
    public async Task A_hung_attempt_is_cut_off_by_the_attempt_timeout_and_retried()
    {
        var backend = new FlakyBackend(failures: 0) { HangFirstCall = true };
        await using var service = await TestService.StartAsync(
            new(FastRetries) { ["Resilience:AttemptTimeout"] = "00:00:00.300" },
            map: backend.Map);

        var response = await Client(service).GetAsync(new Uri(service.BaseAddress, "/flaky"));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(2, backend.Calls);
    }

    [Fact]
    public async Task The_circuit_opens_after_repeated_failures_and_stops_calling_the_backend()
    {
        var backend = new FlakyBackend(failures: int.MaxValue);
        await using var service = await TestService.StartAsync(
            new()
            {
                ["Resilience:MaxRetryAttempts"] = "0",
                ["Resilience:CircuitBreakerMinimumThroughput"] = "2",
                ["Resilience:CircuitBreakerFailureRatio"] = "0.5",
                ["Resilience:CircuitBreakerBreakDuration"] = "00:01:00",
            },
            map: backend.Map);
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
    public async Task Connection_pool_settings_reach_the_primary_handler()
    {
        await using var service = await TestService.StartAsync(new()
        {
            ["HttpClient:PooledConnectionLifetime"] = "00:00:42",
            ["HttpClient:MaxConnectionsPerServer"] = "7",
            ["HttpClient:ConnectTimeout"] = "00:00:03",
        });

        var handler = service.App.Services.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler("backend");
        var chain = new List<HttpMessageHandler>();
        for (HttpMessageHandler? current = handler; current is not null; current = (current as DelegatingHandler)?.InnerHandler)
        {
            chain.Add(current);
        }

        var sockets = Assert.IsType<SocketsHttpHandler>(chain[^1]);
        Assert.Equal(TimeSpan.FromSeconds(42), sockets.PooledConnectionLifetime);
        Assert.Equal(7, sockets.MaxConnectionsPerServer);
        Assert.Equal(TimeSpan.FromSeconds(3), sockets.ConnectTimeout);
        Assert.Contains(chain, h => h is ResilienceHandler);
    }

    private static HttpClient Client(TestService service) =>
        service.App.Services.GetRequiredService<IHttpClientFactory>().CreateClient("backend");

    /// <summary>An endpoint that answers 503 a number of times, optionally hanging on the first call.</summary>
    private sealed class FlakyBackend(int failures)
    {
        private int _calls;

        public bool HangFirstCall { get; init; }

        public int Calls => _calls;

        public List<string> Bodies { get; } = [];

        public void Map(WebApplication app)
        {
            app.MapMethods("/flaky", ["GET", "POST"], async (HttpRequest request, CancellationToken cancellationToken) =>
            {
                var call = Interlocked.Increment(ref _calls);
                using var reader = new StreamReader(request.Body);
                var body = await reader.ReadToEndAsync(cancellationToken);
                lock (Bodies)
                {
                    Bodies.Add(body);
                }

                if (call == 1 && HangFirstCall)
                {
                    await Task.Delay(TimeSpan.FromSeconds(20), cancellationToken);
                }

                return call <= failures ? Results.StatusCode(503) : Results.Ok("fine");
            });
        }
    }
}
