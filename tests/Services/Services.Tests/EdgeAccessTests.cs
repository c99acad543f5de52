using System.Net;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Contracts;
using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// Who may read what through the gateway (OWASP API1, object-level authorisation), the per-caller rate
/// limit, request size limits and CORS — on the gateway's real Program, its backends a stub.
/// </summary>
public sealed class EdgeAccessTests
{
    private static readonly DevelopmentCaller Owner1 = DevelopmentCaller.ForOwner("owner-0001");
    private static readonly DevelopmentCaller Owner2 = DevelopmentCaller.ForOwner("owner-0002");

    [Fact]
    public async Task Another_owners_invoice_is_403_and_no_backend_is_asked()
    {
        await using var edge = await EdgeBackends.StartAsync();

        using var response = await edge.Gateway.ClientAs(Owner1).GetAsync("api/invoices/owner-0002?year=2025&month=3");

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
        Assert.Contains("owner-0002", (await response.ProblemAsync()).GetProperty("detail").GetString());
        Assert.Empty(edge.Calls);
    }

    [Fact]
    public async Task An_owner_token_without_the_scope_is_403_even_for_its_own_invoice()
    {
        await using var edge = await EdgeBackends.StartAsync();
        var withoutScope = Owner1 with { Scopes = [ApiAccess.Scopes.DeliveriesWrite] };

        using var response = await edge.Gateway.ClientAs(withoutScope).GetAsync("api/invoices/owner-0001?year=2025&month=3");

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
        Assert.Empty(edge.Calls);
    }

    [Fact]
    public async Task The_read_all_role_reads_any_owners_invoice_and_a_token_without_owner_or_role_reads_none()
    {
        await using var edge = await EdgeBackends.StartAsync();
        var billing = new DevelopmentCaller("billing-app") { Roles = [ApiAccess.Roles.InvoicesReadAll] };
        var scopeOnly = new DevelopmentCaller("someone") { Scopes = [ApiAccess.Scopes.InvoicesRead] };

        using var allowed = await edge.Gateway.ClientAs(billing).GetAsync("api/invoices/owner-0042?year=2025&month=3");
        using var refused = await edge.Gateway.ClientAs(scopeOnly).GetAsync("api/invoices/owner-0042?year=2025&month=3");

        Assert.Equal(HttpStatusCode.OK, allowed.StatusCode);
        Assert.Equal("owner-0042", (await allowed.ReadAsync<Invoice>()).OwnerId);
        Assert.Equal(HttpStatusCode.Forbidden, refused.StatusCode);
    }

    [Fact]
    public async Task A_bad_owner_in_the_route_is_still_a_400_naming_it()
    {
        await using var edge = await EdgeBackends.StartAsync();

        using var response = await edge.Gateway.ClientAs(Owner1).GetAsync("api/invoices/owner%231?year=2025&month=3");

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(["ownerId"], await response.InvalidFieldsAsync());
    }

    [Fact]
    public async Task A_deliverys_status_is_answered_to_its_owner_and_is_404_for_anyone_else_as_for_an_unknown_one()
    {
        await using var edge = await EdgeBackends.StartAsync(new Dictionary<string, string> { ["d-1"] = "owner-0001" });

        using var own = await edge.Gateway.ClientAs(Owner1).GetAsync("api/deliveries/d-1/status");
        using var others = await edge.Gateway.ClientAs(Owner2).GetAsync("api/deliveries/d-1/status");
        using var unknown = await edge.Gateway.ClientAs(Owner2).GetAsync("api/deliveries/d-2/status");
        using var anonymous = await edge.Gateway.ClientAs(null).GetAsync("api/deliveries/d-1/status");

        Assert.Equal(HttpStatusCode.OK, own.StatusCode);
        Assert.Equal(EdgeBackends.Status("d-1", "owner-0001"), await own.ReadAsync<DeliveryStatus>());
        Assert.Equal(HttpStatusCode.NotFound, others.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, unknown.StatusCode);
        var (otherProblem, unknownProblem) = (await others.ProblemAsync(), await unknown.ProblemAsync());
        Assert.Equal(unknownProblem.GetProperty("title").GetString(), otherProblem.GetProperty("title").GetString());
        Assert.Equal(HttpStatusCode.Unauthorized, anonymous.StatusCode);
    }

    [Fact]
    public async Task Over_the_rate_a_caller_gets_429_with_retry_after_until_its_window_ends_and_other_callers_do_not()
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 3, 1, 12, 0, 0, TimeSpan.Zero));
        await using var edge = await EdgeBackends.StartAsync(
            settings: new() { ["RateLimiting:PermitLimit"] = "3", ["RateLimiting:Window"] = "00:00:10" }, time: time);
        var owner1 = edge.Gateway.ClientAs(Owner1);
        const string Path = "api/invoices/owner-0001?year=2025&month=3";

        var first = new List<HttpStatusCode>();
        for (var i = 0; i < 3; i++)
        {
            first.Add((await owner1.GetAsync(Path)).StatusCode);
        }

        time.Advance(TimeSpan.FromSeconds(4));
        using var over = await owner1.GetAsync(Path);
        using var otherCaller = await edge.Gateway.ClientAs(Owner2).GetAsync("api/invoices/owner-0002?year=2025&month=3");
        time.Advance(TimeSpan.FromSeconds(6));
        using var nextWindow = await owner1.GetAsync(Path);

        Assert.Equal([HttpStatusCode.OK, HttpStatusCode.OK, HttpStatusCode.OK], first);
        Assert.Equal(HttpStatusCode.TooManyRequests, over.StatusCode);
        Assert.Equal(TimeSpan.FromSeconds(6), over.Headers.RetryAfter?.Delta);
        Assert.Equal("Too many requests", (await over.ProblemAsync()).GetProperty("title").GetString());
        Assert.Equal(HttpStatusCode.OK, otherCaller.StatusCode);
        Assert.Equal(HttpStatusCode.OK, nextWindow.StatusCode);
        Assert.Equal(5 * 3, edge.Calls.Count); // five invoices answered; the refused request reached no backend
    }

    [Fact]
    public async Task Requests_without_a_valid_token_are_limited_per_client_address()
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 3, 1, 12, 0, 0, TimeSpan.Zero));
        await using var edge = await EdgeBackends.StartAsync(
            settings: new() { ["RateLimiting:PermitLimit"] = "2", ["RateLimiting:Window"] = "00:01:00" }, time: time);
        var forged = edge.Gateway.ClientWithToken("Bearer forged.token.value");

        var statuses = new List<HttpStatusCode>();
        for (var i = 0; i < 3; i++)
        {
            statuses.Add((await forged.GetAsync("api/invoices/owner-0001?year=2025&month=3")).StatusCode);
        }

        Assert.Equal([HttpStatusCode.Unauthorized, HttpStatusCode.Unauthorized, HttpStatusCode.TooManyRequests], statuses);
    }

    [Fact]
    public async Task Headers_over_the_limit_are_refused_with_431()
    {
        await using var edge = await EdgeBackends.StartAsync(settings: new() { ["Hosting:MaxRequestHeadersTotalSize"] = "8192" });
        using var request = new HttpRequestMessage(HttpMethod.Get, "api/invoices/owner-0001?year=2025&month=3");
        request.Headers.TryAddWithoutValidation("X-Padding", new string('p', 10_000));

        using var response = await edge.Gateway.ClientAs(Owner1).SendAsync(request);

        Assert.Equal(HttpStatusCode.RequestHeaderFieldsTooLarge, response.StatusCode);
        Assert.Empty(edge.Calls);
    }

    [Fact]
    public async Task Cors_is_closed_by_default()
    {
        await using var edge = await EdgeBackends.StartAsync();

        using var response = await Preflight(edge.Gateway, "https://app.example.com");
        using var simple = await CrossOriginGet(edge.Gateway, "https://app.example.com");

        Assert.False(response.Headers.Contains("Access-Control-Allow-Origin"));
        Assert.False(simple.Headers.Contains("Access-Control-Allow-Origin"));
    }

    [Fact]
    public async Task Cors_allows_exactly_the_configured_origins()
    {
        await using var edge = await EdgeBackends.StartAsync(settings: new() { ["Cors:AllowedOrigins:0"] = "https://app.example.com" });

        using var allowed = await Preflight(edge.Gateway, "https://app.example.com");
        using var other = await Preflight(edge.Gateway, "https://evil.example.com");

        Assert.Equal(HttpStatusCode.NoContent, allowed.StatusCode);
        Assert.Equal("https://app.example.com", Assert.Single(allowed.Headers.GetValues("Access-Control-Allow-Origin")));
        Assert.Contains("authorization", string.Join(",", allowed.Headers.GetValues("Access-Control-Allow-Headers")), StringComparison.OrdinalIgnoreCase);
        Assert.False(other.Headers.Contains("Access-Control-Allow-Origin"));
    }

    private static Task<HttpResponseMessage> Preflight(ServiceApp app, string origin)
    {
        var request = new HttpRequestMessage(HttpMethod.Options, "api/invoices/owner-0001?year=2025&month=3");
        request.Headers.Add("Origin", origin);
        request.Headers.Add("Access-Control-Request-Method", "GET");
        request.Headers.Add("Access-Control-Request-Headers", "authorization");
        return app.ClientAs(null).SendAsync(request);
    }

    private static Task<HttpResponseMessage> CrossOriginGet(ServiceApp app, string origin)
    {
        var request = new HttpRequestMessage(HttpMethod.Get, "api/invoices/owner-0001?year=2025&month=3");
        request.Headers.Add("Origin", origin);
        return app.ClientAs(Owner1).SendAsync(request);
    }
}
