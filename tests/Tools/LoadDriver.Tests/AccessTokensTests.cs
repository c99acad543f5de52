using System.Collections.Concurrent;
using DroneDelivery.Security.Tokens;
using DroneDelivery.LoadDriver.Cli;
using DroneDelivery.LoadDriver.Scenarios;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Time.Testing;
using Microsoft.IdentityModel.JsonWebTokens;
using Microsoft.IdentityModel.Tokens;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// Every simulated user is an owner and its requests carry its own token: the server here validates each
/// token as the services do (signature, issuer, audience) and compares its owner claim with the request's owner.
/// </summary>
public sealed class AccessTokensTests
{
    private static readonly DevelopmentIssuer Issuer = DevelopmentIssuer.Generate();

    [Fact]
    public async Task Each_invoice_request_carries_a_valid_token_of_the_owner_it_asks_for()
    {
        var seen = new ConcurrentQueue<(string PathOwner, string? TokenOwner, string? Scopes)>();
        await using var server = await LoopbackServer.StartAsync(app => app.MapGet("/api/invoices/{ownerId}", async (string ownerId, HttpContext context) =>
        {
            var (owner, scopes) = await ValidateAsync(context);
            seen.Enqueue((ownerId, owner, scopes));
            return Microsoft.AspNetCore.Http.Results.Ok();
        }));

        var result = await LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = new InvoiceScenario(new InvoiceScenarioOptions
            {
                Gateway = server.BaseUri,
                Owners = new SeededOwners("owner-{0:D4}", 20),
                Year = 2025,
                Tokens = AccessTokens.Minted(Issuer),
            }),
            Shape = ClosedLoad.Constant(4, TimeSpan.FromSeconds(30)),
            Bounds = new LoadBounds { MaxRequests = 200 },
        });

        Assert.Equal(200, result.Totals.Successes);
        Assert.Equal(200, seen.Count);
        Assert.All(seen, request => Assert.Equal(request.PathOwner, request.TokenOwner));
        Assert.All(seen, request => Assert.Equal(string.Join(' ', ApiAccess.Scopes.All), request.Scopes));
        Assert.True(seen.Select(r => r.PathOwner).Distinct().Count() > 10, "The requests did not spread over the owners.");
    }

    [Fact]
    public async Task Each_delivery_request_and_its_status_polls_carry_the_requesting_owners_token()
    {
        var posts = new ConcurrentQueue<(string? BodyOwner, string? TokenOwner)>();
        var polls = new ConcurrentQueue<(string Id, string? TokenOwner)>();
        var owners = new ConcurrentDictionary<string, string>();
        await using var server = await LoopbackServer.StartAsync(app =>
        {
            app.MapPost("/api/deliveryrequests", async (HttpContext context) =>
            {
                var (owner, _) = await ValidateAsync(context);
                using var body = await System.Text.Json.JsonDocument.ParseAsync(context.Request.Body);
                var bodyOwner = body.RootElement.GetProperty("ownerId").GetString();
                posts.Enqueue((bodyOwner, owner));
                var id = Guid.NewGuid().ToString("N");
                owners[id] = bodyOwner!;
                return Microsoft.AspNetCore.Http.Results.Accepted($"/api/deliveries/{id}/status");
            });
            app.MapGet("/api/deliveries/{id}/status", async (string id, HttpContext context) =>
            {
                var (owner, _) = await ValidateAsync(context);
                polls.Enqueue((id, owner));
                return Microsoft.AspNetCore.Http.Results.Json(new { stage = "Created" });
            });
        });

        var result = await LoadRunner.RunAsync(new LoadTestPlan
        {
            Scenario = new DeliveryRequestsScenario(new DeliveryRequestsScenarioOptions
            {
                Ingestion = server.BaseUri,
                Owners = new SeededOwners("owner-{0:D4}", 10),
                Tokens = AccessTokens.Minted(Issuer),
                Completion = new CompletionTracking { PollInterval = TimeSpan.FromMilliseconds(20), MaxWait = TimeSpan.FromSeconds(20) },
            }),
            Shape = ClosedLoad.Constant(2, TimeSpan.FromSeconds(30)),
            Bounds = new LoadBounds { MaxRequests = 40 },
        });

        Assert.Equal(40, result.Totals.Successes);
        Assert.Equal(40, result.Completion!.Counts.Completed);
        Assert.All(posts, post => Assert.Equal(post.BodyOwner, post.TokenOwner));
        Assert.All(polls, poll => Assert.Equal(owners[poll.Id], poll.TokenOwner));
    }

    [Fact]
    public void A_minted_token_is_reused_until_three_quarters_of_its_lifetime_then_renewed()
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero));
        var tokens = AccessTokens.Minted(DevelopmentIssuer.Generate(time: time));

        var first = tokens.For("owner-1")!;
        time.Advance(TimeSpan.FromMinutes(44));
        var reused = tokens.For("owner-1")!;
        var other = tokens.For("owner-2")!;
        time.Advance(TimeSpan.FromMinutes(2));
        var renewed = tokens.For("owner-1")!;

        Assert.Same(first, reused);
        Assert.NotEqual(first.Parameter, other.Parameter);
        Assert.NotEqual(first.Parameter, renewed.Parameter);
        Assert.Equal(time.GetUtcNow().UtcDateTime.AddHours(1), new JsonWebToken(renewed.Parameter).ValidTo, TimeSpan.FromSeconds(1));
    }

    [Fact]
    public void An_applications_token_from_a_credential_is_on_every_request_and_renewed_after_three_quarters_of_its_lifetime()
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero));
        var credential = new CountingCredential(time, TimeSpan.FromHours(1));
        var tokens = AccessTokens.FromCredential(credential, "api://dronedelivery-api/.default", time);

        var first = tokens.For("owner-1")!;
        var other = tokens.For("owner-2")!;
        time.Advance(TimeSpan.FromMinutes(44));
        var reused = tokens.For("owner-1")!;
        time.Advance(TimeSpan.FromMinutes(2));
        var renewed = tokens.For("owner-3")!;

        Assert.Equal("Bearer", first.Scheme);
        Assert.Equal("token-1", first.Parameter);
        Assert.Same(first, other);
        Assert.Same(first, reused);
        Assert.Equal("token-2", renewed.Parameter);
        Assert.Equal(["api://dronedelivery-api/.default", "api://dronedelivery-api/.default"], credential.Scopes);
    }

    [Fact]
    public void A_credential_that_gets_no_token_fails_before_any_request_is_sent()
    {
        var refused = new Azure.Identity.AuthenticationFailedException("AADSTS7000215: Invalid client secret provided.");

        var thrown = Assert.Throws<Azure.Identity.AuthenticationFailedException>(() => AccessTokens.FromCredential(new FailingCredential(refused), "api://x/.default"));

        Assert.Same(refused, thrown);
    }

    [Fact]
    public async Task The_command_line_asks_for_the_client_credentials_a_token_scope_needs()
    {
        // The variables are Azure.Identity's; this test's process does not set them.
        Assert.Null(Environment.GetEnvironmentVariable("AZURE_CLIENT_SECRET"));

        var missing = await RunAsync("invoice", "--rate", "20:500ms", "--token-scope", "api://x/.default", "--progress", "none");
        var both = await RunAsync("invoice", "--rate", "20:500ms", "--token-scope", "api://x/.default", "--token", "abc", "--progress", "none");

        Assert.Equal(LoadDriverCommand.InvalidPlanExitCode, missing.ExitCode);
        Assert.Contains("--token-scope needs the client app's credentials in AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET", missing.Error, StringComparison.Ordinal);
        Assert.Equal(1, both.ExitCode);
        Assert.Contains("Give one of", both.Error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_command_line_mints_from_a_key_file_and_refuses_an_unreadable_or_short_key()
    {
        using var keys = KeyFiles.Create();
        var (good, bad, directory) = (keys.Good, keys.Short, keys.Directory);
        var owners = new ConcurrentQueue<string?>();
        await using var server = await LoopbackServer.StartAsync(app => app.MapGet("/api/invoices/{ownerId}", async (HttpContext context) =>
        {
            owners.Enqueue((await ValidateAsync(context)).Owner);
            return Microsoft.AspNetCore.Http.Results.Ok();
        }));

        var ok = await RunAsync("invoice", "--target", server.BaseUri.AbsoluteUri, "--rate", "20:500ms", "--signing-key-file", good, "--out", Path.Combine(directory.FullName, "out"), "--progress", "none");
        var shortKey = await RunAsync("invoice", "--target", server.BaseUri.AbsoluteUri, "--rate", "20:500ms", "--signing-key-file", bad, "--progress", "none");
        var missing = await RunAsync("invoice", "--rate", "20:500ms", "--signing-key-file", Path.Combine(directory.FullName, "none"), "--progress", "none");
        var both = await RunAsync("invoice", "--rate", "20:500ms", "--signing-key-file", good, "--token", "abc", "--progress", "none");

        Assert.True(ok.ExitCode == 0, ok.Error);
        Assert.Equal(10, owners.Count);
        Assert.All(owners, owner => Assert.StartsWith("owner-", owner, StringComparison.Ordinal));
        Assert.Equal(LoadDriverCommand.InvalidPlanExitCode, shortKey.ExitCode);
        Assert.Contains("--signing-key-file", shortKey.Error, StringComparison.Ordinal);
        Assert.Contains("at least 32 bytes", shortKey.Error, StringComparison.Ordinal);
        Assert.Equal(LoadDriverCommand.InvalidPlanExitCode, missing.ExitCode);
        Assert.Contains("cannot read", missing.Error, StringComparison.Ordinal);
        Assert.Equal(1, both.ExitCode);
        Assert.Contains("Give one of --signing-key-file", both.Error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_token_command_prints_an_owners_or_an_operators_token_from_the_key_file()
    {
        using var keys = KeyFiles.Create();
        var (good, bad) = (keys.Good, keys.Short);
        var customer = await RunAsync("token", "--signing-key-file", good, "--owner", "owner-0042", "--lifetime", "10m");
        var application = await RunAsync("token", "--signing-key-file", good, "--operator");
        var neither = await RunAsync("token", "--signing-key-file", good);
        var shortKey = await RunAsync("token", "--signing-key-file", bad, "--owner", "owner-0042");

        Assert.True(customer.ExitCode == 0, customer.Error);
        var token = customer.Output.Trim();
        Assert.DoesNotContain('\n', token);
        var claims = await ValidateTokenAsync(token);
        Assert.Equal("owner-0042", claims[ApiAccess.OwnerClaim]);
        Assert.Equal(string.Join(' ', ApiAccess.Scopes.All), claims[ApiAccess.ScopeClaim]);
        var jwt = new JsonWebToken(token);
        Assert.Equal(TimeSpan.FromMinutes(10), jwt.ValidTo - jwt.ValidFrom);

        Assert.True(application.ExitCode == 0, application.Error);
        var operatorClaims = await ValidateTokenAsync(application.Output.Trim());
        Assert.False(operatorClaims.ContainsKey(ApiAccess.OwnerClaim));
        Assert.Equal(ApiAccess.Roles.All, new JsonWebToken(application.Output.Trim()).Claims.Where(c => c.Type == ApiAccess.RolesClaim).Select(c => c.Value));

        Assert.Equal(1, neither.ExitCode);
        Assert.Contains("--owner", neither.Error, StringComparison.Ordinal);
        Assert.Equal(LoadDriverCommand.InvalidPlanExitCode, shortKey.ExitCode);
        Assert.Contains("at least 32 bytes", shortKey.Error, StringComparison.Ordinal);
        Assert.Empty(shortKey.Output);
    }

    /// <summary>Validates the request's bearer token as the edge does; returns its owner and scope claims.</summary>
    private static async Task<(string? Owner, string? Scopes)> ValidateAsync(HttpContext context)
    {
        var header = context.Request.Headers.Authorization.ToString();
        Assert.StartsWith("Bearer ", header, StringComparison.Ordinal);
        var claims = await ValidateTokenAsync(header["Bearer ".Length..]);
        return (claims.TryGetValue(ApiAccess.OwnerClaim, out var owner) ? owner as string : null,
                claims.TryGetValue(ApiAccess.ScopeClaim, out var scopes) ? scopes as string : null);
    }

    /// <summary>Validates a token as the edge does (signature, issuer, audience, lifetime, HMAC-SHA256 only); returns its claims.</summary>
    private static async Task<IDictionary<string, object>> ValidateTokenAsync(string token)
    {
        var result = await new JsonWebTokenHandler().ValidateTokenAsync(token, new TokenValidationParameters
        {
            ValidIssuer = Issuer.Issuer,
            ValidAudience = Issuer.Audience,
            IssuerSigningKey = new SymmetricSecurityKey(Convert.FromBase64String(Issuer.SigningKey)),
            ValidAlgorithms = [SecurityAlgorithms.HmacSha256],
        });
        Assert.True(result.IsValid, result.Exception?.Message);
        return result.Claims;
    }

    /// <summary>A temporary directory with the issuer's key file and one too short (16 bytes), deleted on dispose.</summary>
    private sealed class KeyFiles : IDisposable
    {
        private KeyFiles(DirectoryInfo directory) => Directory = directory;

        public DirectoryInfo Directory { get; }

        public string Good => Path.Combine(Directory.FullName, "key");

        public string Short => Path.Combine(Directory.FullName, "short");

        public static KeyFiles Create()
        {
            var files = new KeyFiles(System.IO.Directory.CreateTempSubdirectory("load-driver-key"));
            File.WriteAllText(files.Good, Issuer.SigningKey + "\n");
            File.WriteAllText(files.Short, Convert.ToBase64String(new byte[16]));
            return files;
        }

        public void Dispose() => Directory.Delete(recursive: true);
    }

    private static async Task<(int ExitCode, string Output, string Error)> RunAsync(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var exitCode = await LoadDriverCommand.RunAsync(args, new CliConsole(output, error, IsTerminal: false));
        return (exitCode, output.ToString(), error.ToString());
    }
    /// <summary>A credential that hands out token-1, token-2, … valid for <paramref name="lifetime"/> on <paramref name="time"/>.</summary>
    private sealed class CountingCredential(TimeProvider time, TimeSpan lifetime) : Azure.Core.TokenCredential
    {
        public List<string> Scopes { get; } = [];

        public override Azure.Core.AccessToken GetToken(Azure.Core.TokenRequestContext requestContext, CancellationToken cancellationToken)
        {
            Scopes.AddRange(requestContext.Scopes);
            return new Azure.Core.AccessToken($"token-{Scopes.Count}", time.GetUtcNow() + lifetime);
        }

        public override ValueTask<Azure.Core.AccessToken> GetTokenAsync(Azure.Core.TokenRequestContext requestContext, CancellationToken cancellationToken) =>
            ValueTask.FromResult(GetToken(requestContext, cancellationToken));
    }

    private sealed class FailingCredential(Exception failure) : Azure.Core.TokenCredential
    {
        public override Azure.Core.AccessToken GetToken(Azure.Core.TokenRequestContext requestContext, CancellationToken cancellationToken) => throw failure;

        public override ValueTask<Azure.Core.AccessToken> GetTokenAsync(Azure.Core.TokenRequestContext requestContext, CancellationToken cancellationToken) => throw failure;
    }
}
