using System.Diagnostics;
using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.Gateway;
using DroneDelivery.LocalProcesses;
using DroneDelivery.ServiceDefaults.Http;
using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Services.Tests;

/// <summary>The gateway against real HTTP backends on 127.0.0.1 whose answers and timing the tests control.</summary>
public sealed class GatewayTests
{
    [Fact]
    public async Task The_invoice_aggregates_the_three_backends_summaries_for_the_owner_and_month()
    {
        await using var backends = await Backends.StartAsync();

        using var response = await backends.Gateway.Client.GetAsync("api/invoices/owner-0042?year=2025&month=3");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var invoice = await response.ReadAsync<Invoice>();
        Assert.Equal(
            new Invoice("owner-0042", 2025, 3, new InvoiceDeliveries(7), new InvoicePackages(5, 12.5), new InvoiceUtilization(88.25, 6.5)),
            invoice);
        Assert.All(backends.Queries, query => Assert.Equal("?ownerId=owner-0042&year=2025&month=3", query));
        Assert.Equal(3, backends.Queries.Count);
    }

    [Fact]
    public async Task The_backends_are_called_concurrently_so_the_invoice_takes_the_slowest_call_not_the_sum()
    {
        // Each backend answers only once all three requests have arrived: called one after the other,
        // the first could never see the others and the invoice would wait until the gateway gave up
        // on it. No clock is involved, so a busy machine cannot make this pass or fail.
        var arrived = 0;
        var allArrived = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var backends = await Backends.StartAsync(behaviour: async (backend, context) =>
        {
            if (Interlocked.Increment(ref arrived) == 3)
            {
                allArrived.TrySetResult();
            }

            await allArrived.Task.WaitAsync(context.RequestAborted);
            return null;
        });

        using var response = await backends.Gateway.Client.GetAsync("api/invoices/owner-1?year=2025&month=1");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(3, arrived);
    }

    [Fact]
    public async Task A_backend_failing_after_its_retries_makes_a_502_naming_it()
    {
        var calls = 0;
        await using var backends = await Backends.StartAsync(behaviour: (backend, _) =>
        {
            if (backend != "package")
            {
                return Task.FromResult<IResult?>(null);
            }

            Interlocked.Increment(ref calls);
            return Task.FromResult<IResult?>(Results.Problem(statusCode: 500, title: "disk on fire"));
        });

        using var response = await backends.Gateway.Client.GetAsync("api/invoices/owner-1?year=2025&month=1");

        Assert.Equal(HttpStatusCode.BadGateway, response.StatusCode);
        var problem = await response.ProblemAsync();
        Assert.Contains("package", problem.GetProperty("title").GetString());
        var failure = Assert.Single(problem.GetProperty("backends").EnumerateArray());
        Assert.Equal(("package", "Failed", 500), (failure.GetProperty("backend").GetString(), failure.GetProperty("outcome").GetString(), failure.GetProperty("statusCode").GetInt32()));
        Assert.Contains("disk on fire", failure.GetProperty("detail").GetString());
        Assert.Equal(1 + 2, calls);
    }

    [Fact]
    public async Task A_backend_answer_naming_a_property_twice_is_not_read_and_makes_a_502_naming_it()
    {
        // Which count would win is up to the reader; the gateway reads neither.
        await using var backends = await Backends.StartAsync(behaviour: (backend, _) => Task.FromResult<IResult?>(backend != "delivery" ? null
            : Results.Text("""{"ownerId":"owner-1","year":2025,"month":1,"count":7,"count":9999}""", "application/json")));

        using var response = await backends.Gateway.Client.GetAsync("api/invoices/owner-1?year=2025&month=1");

        Assert.Equal(HttpStatusCode.BadGateway, response.StatusCode);
        var failure = Assert.Single((await response.ProblemAsync()).GetProperty("backends").EnumerateArray());
        Assert.Equal(("delivery", "Failed"), (failure.GetProperty("backend").GetString(), failure.GetProperty("outcome").GetString()));
        Assert.Contains("Duplicate property 'count'", failure.GetProperty("detail").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_hung_backend_makes_a_504_within_its_own_timeout()
    {
        await using var backends = await Backends.StartAsync(
            behaviour: async (backend, context) =>
            {
                if (backend == "dronescheduler")
                {
                    await Task.Delay(TimeSpan.FromSeconds(30), context.RequestAborted);
                }

                return null;
            },
            settings: new() { ["Backends:DroneScheduler:Timeout"] = "00:00:00.400" });

        var stopwatch = Stopwatch.StartNew();
        using var response = await backends.Gateway.Client.GetAsync("api/invoices/owner-1?year=2025&month=1");

        Assert.Equal(HttpStatusCode.GatewayTimeout, response.StatusCode);
        Assert.True(stopwatch.Elapsed < TimeSpan.FromSeconds(10), $"took {stopwatch.Elapsed}");
        var failure = Assert.Single((await response.ProblemAsync()).GetProperty("backends").EnumerateArray());
        Assert.Equal(("dronescheduler", "TimedOut"), (failure.GetProperty("backend").GetString(), failure.GetProperty("outcome").GetString()));
    }

    [Fact]
    public async Task An_unreachable_backend_makes_a_502()
    {
        await using var backends = await Backends.StartAsync(settings: new() { ["Backends:Delivery:BaseAddress"] = $"http://127.0.0.1:{FreePort.Next()}/" });

        using var response = await backends.Gateway.Client.GetAsync("api/invoices/owner-1?year=2025&month=1");

        Assert.Equal(HttpStatusCode.BadGateway, response.StatusCode);
        var failure = Assert.Single((await response.ProblemAsync()).GetProperty("backends").EnumerateArray());
        Assert.Equal("delivery", failure.GetProperty("backend").GetString());
        Assert.Contains("connection failed", failure.GetProperty("detail").GetString());
    }

    [Theory]
    [InlineData("api/invoices/owner-1?year=2025", "month")]
    [InlineData("api/invoices/owner-1?year=twenty&month=0", "month,year")]
    [InlineData("api/invoices/owner%231?year=2025&month=1", "ownerId")]
    public async Task A_bad_request_is_a_400_naming_each_parameter_and_calls_no_backend(string path, string fields)
    {
        await using var backends = await Backends.StartAsync();

        using var response = await backends.Gateway.Client.GetAsync(path);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(fields.Split(','), await response.InvalidFieldsAsync());
        Assert.Empty(backends.Queries);
    }

    [Fact]
    public async Task Backend_addresses_and_timeouts_reach_the_http_clients()
    {
        await using var gateway = await ServiceApp.StartAsync(Definitions.Gateway, new Dictionary<string, string?>
        {
            ["Backends:Delivery:BaseAddress"] = "http://delivery.example:8080/prefix",
            ["Backends:Package:Timeout"] = "00:00:02.500",
            ["Resilience:AttemptTimeout"] = "00:00:05",
        });
        var clients = gateway.Services.GetRequiredService<IHttpClientFactory>();
        var resilience = gateway.Services.GetRequiredService<IOptionsMonitor<ResilienceSettings>>();

        Assert.Equal(new Uri("http://delivery.example:8080/prefix/"), clients.CreateClient("delivery").BaseAddress);
        Assert.Equal(new Uri("http://package/"), clients.CreateClient("package").BaseAddress);
        Assert.Equal(TimeSpan.FromSeconds(2.5), resilience.Get("package").TotalRequestTimeout);
        Assert.Equal(TimeSpan.FromSeconds(2.5), resilience.Get("package").AttemptTimeout);
        Assert.Equal(TimeSpan.FromSeconds(30), resilience.Get("delivery").TotalRequestTimeout);
        Assert.Equal(TimeSpan.FromSeconds(5), resilience.Get("delivery").AttemptTimeout);
    }

    [Theory]
    [InlineData("Backends:Delivery:BaseAddress", "delivery:8080", "Setting 'Backends:Delivery:BaseAddress'")]
    [InlineData("Backends:Package:BaseAddress", "ftp://package/", "Setting 'Backends:Package:BaseAddress'")]
    [InlineData("Backends:DroneScheduler:Timeout", "00:00:00", "Setting 'Backends:DroneScheduler:Timeout' = '00:00:00' is invalid")]
    [InlineData("Backends:Drones:BaseAddress", "http://x/", "Drones")]
    public Task Gateway_refuses_a_bad_setting(string key, string value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Gateway, new() { [key] = value }, expected);

    /// <summary>Three stub backends answering the summaries, and a gateway pointed at them.</summary>
    private sealed class Backends : IAsyncDisposable
    {
        private readonly List<StubServer> _servers;
        private readonly System.Collections.Concurrent.ConcurrentQueue<string> _queries;

        private Backends(List<StubServer> servers, System.Collections.Concurrent.ConcurrentQueue<string> queries, ServiceApp gateway)
        {
            _servers = servers;
            _queries = queries;
            Gateway = gateway;
        }

        public ServiceApp Gateway { get; }

        public IReadOnlyCollection<string> Queries => _queries;

        /// <param name="behaviour">Runs first on every request; a non-null result replaces the normal answer.</param>
        public static async Task<Backends> StartAsync(
            Func<string, HttpContext, Task<IResult?>>? behaviour = null, Dictionary<string, string?>? settings = null)
        {
            var queries = new System.Collections.Concurrent.ConcurrentQueue<string>();
            behaviour ??= (_, _) => Task.FromResult<IResult?>(null);

            Delegate Handler(string backend, Func<string, int, int, object> answer) => async (HttpContext context, string ownerId, int year, int month) =>
            {
                queries.Enqueue(context.Request.QueryString.Value!);
                return await behaviour(backend, context) ?? Results.Json(answer(ownerId, year, month), ContractJson.Options);
            };

            var delivery = await StubServer.StartAsync(app => app.MapGet(Routes.Deliveries.Summary,
                Handler("delivery", (o, y, m) => new DeliverySummary(o, y, m, 7))));
            var package = await StubServer.StartAsync(app => app.MapGet(Routes.Packages.Summary,
                Handler("package", (o, y, m) => new PackageSummary(o, y, m, 5, 12.5))));
            var drones = await StubServer.StartAsync(app => app.MapGet(Routes.DroneDeliveries.Utilization,
                Handler("dronescheduler", (o, y, m) => new DroneUtilization(o, y, m, 88.25, 6.5))));
            var all = new Dictionary<string, string?>
            {
                ["Backends:Delivery:BaseAddress"] = delivery.BaseAddress.ToString(),
                ["Backends:Package:BaseAddress"] = package.BaseAddress.ToString(),
                ["Backends:DroneScheduler:BaseAddress"] = drones.BaseAddress.ToString(),
                ["Resilience:MaxRetryAttempts"] = "2",
                ["Resilience:RetryBaseDelay"] = "00:00:00.010",
            };
            foreach (var (key, value) in settings ?? [])
            {
                all[key] = value;
            }

            var gateway = await ServiceApp.StartAsync(Definitions.Gateway, all);
            return new Backends([delivery, package, drones], queries, gateway);
        }

        public async ValueTask DisposeAsync()
        {
            await Gateway.DisposeAsync();
            foreach (var server in _servers)
            {
                await server.DisposeAsync();
            }
        }
    }
}
