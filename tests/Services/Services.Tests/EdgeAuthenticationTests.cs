using System.Net;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authentication.JwtBearer;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using Microsoft.IdentityModel.Tokens;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// The public edge authenticates every API call with a JWT bearer token whose signature, issuer, audience
/// and lifetime are validated (RFC 6750: a missing or invalid token is 401 with <c>WWW-Authenticate: Bearer</c>),
/// shown on the gateway's real Program; Ingestion runs the same code (<see cref="IngestionAccessTests"/>).
/// </summary>
public sealed class EdgeAuthenticationTests
{
    private const string Invoice = "api/invoices/owner-0001?year=2025&month=3";

    private static readonly DevelopmentCaller Owner1 = DevelopmentCaller.ForOwner("owner-0001");

    [Fact]
    public async Task A_request_without_a_token_is_401_with_a_bearer_challenge_and_calls_no_backend()
    {
        await using var edge = await EdgeBackends.StartAsync();

        using var response = await edge.Gateway.ClientAs(null).GetAsync(Invoice);

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        Assert.Equal("Bearer", Assert.Single(response.Headers.WwwAuthenticate).Scheme);
        Assert.Equal(401, (await response.ProblemAsync()).GetProperty("status").GetInt32());
        Assert.Empty(edge.Calls);
    }

    [Fact]
    public async Task The_owners_own_token_reads_its_invoice()
    {
        await using var edge = await EdgeBackends.StartAsync();

        using var response = await edge.Gateway.ClientAs(Owner1).GetAsync(Invoice);

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
    }

    public static TheoryData<string, string> BadTokens() => new()
    {
        { "signed with another key", "signature" },
        { "another audience", "audience" },
        { "another issuer", "issuer" },
        { "alg none, unsigned", "signature" },
        { "payload changed after signing", "signature" },
        { "HS512 with the right key", "signature" }, // only HS256 is accepted: no key signs HS512
        { "no expiry", "expiration" },
        { "not valid yet", "not valid before" },
    };

    [Theory]
    [MemberData(nameof(BadTokens))]
    public async Task A_token_that_fails_a_check_is_401_naming_the_check(string kind, string named)
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 3, 1, 12, 0, 0, TimeSpan.Zero));
        await using var edge = await EdgeBackends.StartAsync(time: time);
        var issuer = edge.Gateway.Issuer!;
        var token = kind switch
        {
            "signed with another key" => TestAccess.Impostor(time).Issue(Owner1),
            "another audience" => new DevelopmentIssuer(Key(issuer), issuer.Issuer, "someone-else", time).Issue(Owner1),
            "another issuer" => new DevelopmentIssuer(Key(issuer), "https://impostor.example/", issuer.Audience, time).Issue(Owner1),
            "alg none, unsigned" => Unsigned(issuer.Issue(Owner1)),
            "payload changed after signing" => WithPayload(issuer.Issue(Owner1), payload => payload.Replace("owner-0001", "owner-0002", StringComparison.Ordinal)),
            "HS512 with the right key" => Handcrafted(issuer, "HS512", Claims(issuer, time.GetUtcNow(), TimeSpan.FromHours(1))),
            "no expiry" => Handcrafted(issuer, "HS256", Claims(issuer, time.GetUtcNow(), null)),
            "not valid yet" => Handcrafted(issuer, "HS256", Claims(issuer, time.GetUtcNow().AddMinutes(10), TimeSpan.FromHours(1))),
            _ => throw new ArgumentOutOfRangeException(nameof(kind)),
        };

        using var response = await edge.Gateway.ClientWithToken("Bearer " + token).GetAsync(Invoice);

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        var challenge = Assert.Single(response.Headers.WwwAuthenticate);
        Assert.Contains("invalid_token", challenge.Parameter);
        Assert.True(challenge.Parameter!.Contains(named, StringComparison.OrdinalIgnoreCase), $"The challenge does not name the {named}: {challenge.Parameter}");
        Assert.Empty(edge.Calls);
    }

    [Fact]
    public async Task A_token_is_accepted_until_its_expiry_plus_the_clock_skew_then_refused_on_the_services_clock()
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 3, 1, 12, 0, 0, TimeSpan.Zero));
        await using var edge = await EdgeBackends.StartAsync(settings: new() { ["Authentication:ClockSkew"] = "00:00:30" }, time: time);
        var client = edge.Gateway.ClientWithToken("Bearer " + edge.Gateway.Issuer!.Issue(Owner1, TimeSpan.FromMinutes(5)));

        time.Advance(TimeSpan.FromMinutes(5) + TimeSpan.FromSeconds(29));
        using var withinSkew = await client.GetAsync(Invoice);
        time.Advance(TimeSpan.FromSeconds(2));
        using var expired = await client.GetAsync(Invoice);

        Assert.Equal(HttpStatusCode.OK, withinSkew.StatusCode);
        Assert.Equal(HttpStatusCode.Unauthorized, expired.StatusCode);
        Assert.Contains("expired", Assert.Single(expired.Headers.WwwAuthenticate).Parameter);
    }

    [Theory]
    [InlineData("Basic b3duZXI6c2VjcmV0")]
    [InlineData("Bearer")]
    [InlineData("Bearer not.a.jwt")]
    [InlineData("Bearer ....")]
    [InlineData("Bearer eyJhbGciOiJIUzI1NiJ9")]
    public async Task A_malformed_authorization_header_is_401(string header)
    {
        await using var edge = await EdgeBackends.StartAsync();

        using var response = await edge.Gateway.ClientWithToken(header).GetAsync(Invoice);

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        Assert.Empty(edge.Calls);
    }

    [Fact]
    public async Task Health_metrics_and_the_api_document_need_no_token()
    {
        await using var edge = await EdgeBackends.StartAsync(settings: new() { [SystemFixture.ApiReferenceEnabled] = "true" });
        var anonymous = edge.Gateway.ClientAs(null);

        Assert.Equal(HttpStatusCode.OK, (await anonymous.GetAsync("health/live")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await anonymous.GetAsync("metrics")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await anonymous.GetAsync("openapi/v1.json")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await anonymous.GetAsync("scalar/v1")).StatusCode);
    }

    [Fact]
    public async Task An_openid_connect_authority_gives_the_signing_keys_and_the_issuer()
    {
        // A real discovery document and JWKS on 127.0.0.1 (loopback: the only place http is allowed), and
        // an RS256 token signed with the key it publishes; the same token with another RSA key is refused.
        using var rsa = RSA.Create(2048);
        using var other = RSA.Create(2048);
        var key = new RsaSecurityKey(rsa) { KeyId = "key-1" };
        await using var authority = await StubServer.StartAsync(app =>
        {
            app.MapGet("/.well-known/openid-configuration", (HttpContext context) => Results.Json(new Dictionary<string, object>
            {
                ["issuer"] = "https://issuer.example/",
                ["jwks_uri"] = $"http://{context.Request.Host}/keys",
            }));
            app.MapGet("/keys", () => Results.Text(
                JsonSerializer.Serialize(new { keys = new[] { JsonWebKeyConverter.ConvertFromRSASecurityKey(new RsaSecurityKey(rsa.ExportParameters(false)) { KeyId = "key-1" }) } }),
                "application/json"));
        });
        await using var edge = await EdgeBackends.StartAsync(settings: new()
        {
            ["Authentication:Mode"] = "OpenIdConnect",
            ["Authentication:Authority"] = authority.BaseAddress.ToString(),
            ["Authentication:Audience"] = "api://dronedelivery",
        });

        string Token(SecurityKey signingKey, string issuer) => new Microsoft.IdentityModel.JsonWebTokens.JsonWebTokenHandler().CreateToken(new SecurityTokenDescriptor
        {
            Issuer = issuer,
            Audience = "api://dronedelivery",
            Expires = DateTime.UtcNow.AddMinutes(10),
            Claims = new Dictionary<string, object> { ["sub"] = "u1", ["owner"] = "owner-0001", ["scp"] = "invoices.read" },
            SigningCredentials = new SigningCredentials(signingKey, SecurityAlgorithms.RsaSha256),
        });

        using var valid = await edge.Gateway.ClientWithToken("Bearer " + Token(key, "https://issuer.example/")).GetAsync(Invoice);
        using var wrongKey = await edge.Gateway.ClientWithToken("Bearer " + Token(new RsaSecurityKey(other) { KeyId = "key-1" }, "https://issuer.example/")).GetAsync(Invoice);
        using var wrongIssuer = await edge.Gateway.ClientWithToken("Bearer " + Token(key, "https://other.example/")).GetAsync(Invoice);

        Assert.Equal(HttpStatusCode.OK, valid.StatusCode);
        Assert.Equal(HttpStatusCode.Unauthorized, wrongKey.StatusCode);
        Assert.Equal(HttpStatusCode.Unauthorized, wrongIssuer.StatusCode);
    }

    [Fact]
    public async Task Entra_id_settings_reach_microsoft_identity_web()
    {
        await using var gateway = await ServiceApp.StartAsync(Definitions.Gateway, new Dictionary<string, string?>
        {
            ["Authentication:Mode"] = "EntraId",
            ["Authentication:Authority"] = "https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/v2.0",
            ["Authentication:ClientId"] = "66666666-7777-8888-9999-000000000000",
            ["Authentication:Audience"] = "66666666-7777-8888-9999-000000000000",
        });
        var schemes = gateway.Services.GetRequiredService<IAuthenticationSchemeProvider>();
        var jwt = gateway.Services.GetRequiredService<IOptionsMonitor<JwtBearerOptions>>().Get((await schemes.GetDefaultAuthenticateSchemeAsync())!.Name);

        Assert.Equal("EntraId", (await schemes.GetDefaultAuthenticateSchemeAsync())!.Name);
        Assert.Equal("https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/v2.0", jwt.Authority);
        Assert.Equal(["66666666-7777-8888-9999-000000000000"], jwt.TokenValidationParameters.ValidAudiences);
        Assert.NotNull(jwt.TokenValidationParameters.IssuerValidator); // Microsoft.Identity.Web's tenant issuer check
        Assert.DoesNotContain(SecurityAlgorithms.HmacSha256, jwt.TokenValidationParameters.ValidAlgorithms);
        Assert.False(jwt.MapInboundClaims);
    }

    [Fact]
    public async Task The_effective_authentication_settings_are_logged_without_the_keys()
    {
        await using var edge = await EdgeBackends.StartAsync();

        var messages = edge.Gateway.Logs.Messages.ToList();
        Assert.Contains("Setting Authentication:Mode = DevelopmentIssuer", messages);
        Assert.Contains($"Setting Authentication:Audience = {DevelopmentIssuer.DefaultAudience}", messages);
        Assert.Contains("Setting Authentication:SigningKeys = ***", messages);
        Assert.Contains("Setting RateLimiting:PermitLimit = 1000000", messages);
        Assert.DoesNotContain(messages, m => m.Contains(edge.Gateway.Issuer!.SigningKey, StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("Authentication:Mode", null, "Setting 'Authentication:Mode' is invalid: Mode is required")]
    [InlineData("Authentication:Mode", "Anonymous", "Authentication")]
    [InlineData("Authentication:Mode", "None", "Setting 'Authentication:Mode' = 'None' is invalid: None (no token validation) is allowed only in the Development environment")]
    [InlineData("Authentication:SigningKeys:0", "c2hvcnQ=", "Setting 'Authentication:SigningKeys' = '***' is invalid: SigningKeys:0 must be base64 of at least 32 bytes")]
    [InlineData("Authentication:Audience", "", "Setting 'Authentication:Audience' = '' is invalid: Audience is required")]
    [InlineData("Authentication:ClockSkew", "00:10:00", "Setting 'Authentication:ClockSkew' = '00:10:00' is invalid")]
    [InlineData("Authentication:OwnerClaim", "owner id", "Setting 'Authentication:OwnerClaim' = 'owner id' is invalid")]
    [InlineData("Authentication:Authority", "https://login.example/", "Setting 'Authentication:Authority' = 'https://login.example/' is invalid: Authority is for Mode OpenIdConnect or EntraId")]
    [InlineData("RateLimiting:PermitLimit", "0", "Setting 'RateLimiting:PermitLimit' = '0' is invalid")]
    [InlineData("RateLimiting:Window", "00:00:00.010", "Setting 'RateLimiting:Window' = '00:00:00.0100000' is invalid")]
    [InlineData("Cors:AllowedOrigins:0", "https://app.example.com/path", "Setting 'Cors:AllowedOrigins' = '[https://app.example.com/path]' is invalid")]
    [InlineData("Cors:AllowedOrigins:0", "*", "must be an origin")]
    public Task A_bad_edge_setting_stops_the_gateway_naming_it(string key, string? value, string expected)
    {
        // The test issuer's settings, one of them changed.
        var settings = TestAccess.Settings.ToDictionary();
        settings[key] = value;
        return SettingsTests.AssertRefusedAsync(Definitions.Gateway, settings, expected);
    }

    [Theory]
    [InlineData("http://login.example/tenant/v2.0", "Authority must be an absolute https URI")]
    [InlineData(null, "Authority is required with Mode OpenIdConnect")]
    public Task An_openid_connect_authority_must_be_https(string? authority, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Gateway, new()
        {
            ["Authentication:Mode"] = "OpenIdConnect",
            ["Authentication:Audience"] = "api://dronedelivery",
            ["Authentication:Authority"] = authority,
        }, expected);

    [Theory]
    [InlineData(null, "https://login.microsoftonline.com/tenant/v2.0", "ClientId (the API's application id, a GUID) is required with Mode EntraId")]
    [InlineData("66666666-7777-8888-9999-000000000000", "https://login.microsoftonline.com/tenant", "Authority must be https://<instance>/<tenant id or domain>/v2.0")]
    public Task Entra_id_needs_a_client_id_and_a_tenant_authority(string? clientId, string authority, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Gateway, new()
        {
            ["Authentication:Mode"] = "EntraId",
            ["Authentication:Authority"] = authority,
            ["Authentication:ClientId"] = clientId,
            ["Authentication:Audience"] = "api://dronedelivery",
        }, expected);

    private static byte[] Key(DevelopmentIssuer issuer) => Convert.FromBase64String(issuer.SigningKey);

    private static Dictionary<string, object> Claims(DevelopmentIssuer issuer, DateTimeOffset notBefore, TimeSpan? lifetime)
    {
        var claims = new Dictionary<string, object>
        {
            ["iss"] = issuer.Issuer,
            ["aud"] = issuer.Audience,
            ["sub"] = "owner-0001",
            ["owner"] = "owner-0001",
            ["scp"] = ApiAccess.Scopes.InvoicesRead,
            ["nbf"] = notBefore.ToUnixTimeSeconds(),
        };
        if (lifetime is { } span)
        {
            claims["exp"] = (notBefore + span).ToUnixTimeSeconds();
        }

        return claims;
    }

    /// <summary>A JWS built by hand, so a test controls every header and claim.</summary>
    private static string Handcrafted(DevelopmentIssuer issuer, string algorithm, Dictionary<string, object> claims)
    {
        var signingInput = Base64Url(JsonSerializer.Serialize(new { alg = algorithm, typ = "JWT" })) + "." + Base64Url(JsonSerializer.Serialize(claims));
        var key = Key(issuer);
        var signature = algorithm switch
        {
            "HS256" => HMACSHA256.HashData(key, Encoding.ASCII.GetBytes(signingInput)),
            "HS512" => HMACSHA512.HashData(key, Encoding.ASCII.GetBytes(signingInput)),
            _ => throw new ArgumentOutOfRangeException(nameof(algorithm)),
        };
        return signingInput + "." + Base64UrlEncoder.Encode(signature);
    }

    /// <summary>The token's claims under <c>{"alg":"none"}</c> and without a signature.</summary>
    private static string Unsigned(string token) =>
        Base64Url("""{"alg":"none","typ":"JWT"}""") + "." + token.Split('.')[1] + ".";

    private static string WithPayload(string token, Func<string, string> change)
    {
        var parts = token.Split('.');
        return parts[0] + "." + Base64Url(change(Base64UrlEncoder.Decode(parts[1]))) + "." + parts[2];
    }

    private static string Base64Url(string text) => Base64UrlEncoder.Encode(text);
}
