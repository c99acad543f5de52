using System.Net;
using System.Net.Http.Headers;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Services.Tests.Infrastructure;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;

namespace DroneDelivery.Services.Tests.HostileInput;

/// <summary>The gateway's real Program with a stub for its backends, one client for every case.</summary>
public sealed class GatewayTarget : IAsyncLifetime
{
    internal EdgeBackends Edge { get; private set; } = null!;

    internal HttpClient Client { get; private set; } = null!;

    /// <summary>Tokens the cases choose from: every role, the owner of <c>d-1</c>, another owner, an owner without scopes.</summary>
    internal IReadOnlyList<string> Tokens { get; private set; } = [];

    public async Task InitializeAsync()
    {
        Edge = await EdgeBackends.StartAsync(new Dictionary<string, string> { ["d-1"] = "owner-0001" });
        Client = Edge.Gateway.ClientAs(null);
        var issuer = Edge.Gateway.Issuer!;
        Tokens =
        [
            issuer.Issue(DevelopmentCaller.Operator()),
            issuer.Issue(DevelopmentCaller.ForOwner("owner-0001")),
            issuer.Issue(DevelopmentCaller.ForOwner("owner-0002")),
            issuer.Issue(new DevelopmentCaller("no-scopes") { Owner = "owner-0001" }),
        ];
    }

    public async Task DisposeAsync() => await Edge.DisposeAsync();
}

/// <summary>An invoice request: route owner, query values (null: absent), extra query pairs and which token.</summary>
public sealed record InvoiceCase(string Owner, string? Year, string? Month, IReadOnlyList<(string, string)> Extra, int Token);

/// <summary>A status request: route id and which token.</summary>
public sealed record StatusCase(string Id, int Token);

/// <summary>An Authorization header, from random text to a correctly signed token with hostile claims.</summary>
public sealed record AuthorizationCase(string Header);

public static class GatewayArbitraries
{
    private static readonly Gen<string> Year = Gen.Frequency((3, Gen.Choose(1990, 2110).Select(y => y.ToString(System.Globalization.CultureInfo.InvariantCulture))), (2, HostileGen.Text));
    private static readonly Gen<string> Month = Gen.Frequency((3, Gen.Choose(-1, 14).Select(m => m.ToString(System.Globalization.CultureInfo.InvariantCulture))), (2, HostileGen.Text));
    private static readonly Gen<string> Owner = Gen.Frequency((2, Gen.Elements("owner-0001", "owner-0002", "owner-0042")), (5, HostileGen.Text));

    public static Arbitrary<InvoiceCase> Invoices() => Arb.From(
        from owner in Owner
        from year in Gen.Frequency((8, Year.Select(y => (string?)y)), (1, Gen.Constant<string?>(null)))
        from month in Gen.Frequency((8, Month.Select(m => (string?)m)), (1, Gen.Constant<string?>(null)))
        from extra in Gen.Choose(0, 3).SelectMany(n => Gen.Zip(Gen.Elements("year", "month", "ownerId", "x"), HostileGen.Text).ListOf(n)).Select(l => (IReadOnlyList<(string, string)>)[.. l])
        from token in Gen.Choose(0, 3)
        select new InvoiceCase(owner, year, month, extra, token));

    public static Arbitrary<StatusCase> Statuses() => Arb.From(
        from id in Gen.Frequency((1, Gen.Elements("d-1", "d-2")), (6, HostileGen.Text))
        from token in Gen.Choose(0, 3)
        select new StatusCase(id, token));

    /// <summary>Claims of every type where a string, a number or a list is expected.</summary>
    private static readonly Gen<string> Claims = HostileGen.NearlyValidObject(
        ("iss", Gen.Constant(HostileGen.Quote(DevelopmentIssuer.DefaultIssuer))),
        ("aud", Gen.Elements(HostileGen.Quote(DevelopmentIssuer.DefaultAudience), $"[{HostileGen.Quote(DevelopmentIssuer.DefaultAudience)}]")),
        ("sub", Gen.Constant("\"owner-0001\"")),
        ("owner", Gen.Elements("\"owner-0001\"", "\"owner-0002\"")),
        ("scp", Gen.Elements("\"invoices.read\"", "\"invoices.read deliveries.write\"", "\"\"")),
        ("roles", Gen.Elements("[\"Invoices.ReadAll\"]", "[]", "\"Invoices.ReadAll\"")),
        ("nbf", Gen.Constant(DateTimeOffset.UtcNow.AddMinutes(-5).ToUnixTimeSeconds().ToString(System.Globalization.CultureInfo.InvariantCulture))),
        ("exp", Gen.Elements(
            DateTimeOffset.UtcNow.AddHours(2).ToUnixTimeSeconds().ToString(System.Globalization.CultureInfo.InvariantCulture),
            DateTimeOffset.UtcNow.AddHours(-2).ToUnixTimeSeconds().ToString(System.Globalization.CultureInfo.InvariantCulture))));

    private static readonly Gen<string> JoseHeader = Gen.Frequency(
        (4, Gen.Elements("none", "None", "HS256", "HS384", "HS512", "RS256", "ES256", "PS256", "", "dir", "A128KW").Select(alg => $"{{\"alg\":{HostileGen.Quote(alg)},\"typ\":\"JWT\"}}")),
        (1, HostileGen.NearlyValidObject(("alg", Gen.Constant("\"HS256\"")), ("typ", Gen.Constant("\"JWT\"")), ("kid", HostileGen.Text.Select(HostileGen.Quote)), ("crit", Gen.Constant("[\"exp\"]")))),
        (1, HostileGen.JsonValue(2)));

    /// <summary>Header and claims signed with the test issuer's own key: a genuine signature over hostile content.</summary>
    private static string Signed(string header, string claims)
    {
        var input = HostileGen.Segment(header) + "." + HostileGen.Segment(claims);
        var key = Convert.FromBase64String(TestAccess.Issuer(TimeProvider.System).SigningKey);
        return input + "." + Microsoft.IdentityModel.Tokens.Base64UrlEncoder.Encode(System.Security.Cryptography.HMACSHA256.HashData(key, System.Text.Encoding.ASCII.GetBytes(input)));
    }

    public static Arbitrary<AuthorizationCase> Authorizations() => Arb.From(Gen.Frequency(
        (2, HostileGen.HeaderText.Select(text => new AuthorizationCase(text))),
        (2, HostileGen.HeaderText.Select(text => new AuthorizationCase("Bearer " + text))),
        (1, Gen.Elements("Bearer", "Bearer ", "bearer x.y.z", "Bearer  x.y.z", "Bearer\tx.y.z", "Basic b3duZXI6c2VjcmV0", "Negotiate abc", "Bearer .", "Bearer ..", "Bearer ...", "Bearer a.b", "Bearer a.b.c.d.e")
            .Select(text => new AuthorizationCase(text))),
        (3, from header in JoseHeader
            from claims in Gen.Frequency((3, Claims), (1, HostileGen.JsonValue(2)))
            from signature in HostileGen.HeaderText
            select new AuthorizationCase($"Bearer {HostileGen.Segment(header)}.{HostileGen.Segment(claims)}.{HostileGen.Segment(signature)}")),
        (4, Gen.Zip(JoseHeader, Claims).Select(t => new AuthorizationCase("Bearer " + Signed(t.Item1, t.Item2)))),
        (1, Gen.Choose(1, 4000).Select(n => new AuthorizationCase("Bearer " + new string('A', n * 10))))));
}

/// <summary>
/// Hostile input for the gateway's public endpoints, generated (FsCheck): every case is answered, never
/// with a 5xx, and a 400 names what was wrong. <see cref="HostileCases.PerTarget"/> cases per target.
/// </summary>
public sealed class GatewayHostileInputTests(GatewayTarget target) : IClassFixture<GatewayTarget>
{
    /// <summary>Whether the header's token carries the test issuer's own HMAC over its first two parts.</summary>
    private static bool IsSignedWithTheKey(string header)
    {
        var parts = header.StartsWith("Bearer ", StringComparison.Ordinal) ? header["Bearer ".Length..].Split('.') : [];
        if (parts.Length != 3)
        {
            return false;
        }

        var key = Convert.FromBase64String(TestAccess.Issuer(TimeProvider.System).SigningKey);
        var expected = Microsoft.IdentityModel.Tokens.Base64UrlEncoder.Encode(System.Security.Cryptography.HMACSHA256.HashData(key, System.Text.Encoding.ASCII.GetBytes(parts[0] + "." + parts[1])));
        return parts[2] == expected;
    }

    [Property(MaxTest = HostileCases.PerTarget, Arbitrary = [typeof(GatewayArbitraries)], QuietOnSuccess = false)]
    public Task Invoice_route_and_query(InvoiceCase c)
    {
        var query = new List<string>();
        if (c.Year is not null)
        {
            query.Add("year=" + HostileGen.PathSegment(c.Year));
        }

        if (c.Month is not null)
        {
            query.Add("month=" + HostileGen.PathSegment(c.Month));
        }

        query.AddRange(c.Extra.Select(pair => HostileGen.PathSegment(pair.Item1) + "=" + HostileGen.PathSegment(pair.Item2)));
        var request = new HttpRequestMessage(HttpMethod.Get, $"api/invoices/{HostileGen.PathSegment(c.Owner)}?{string.Join('&', query)}");
        request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", target.Tokens[c.Token]);
        return HostileCases.SendAsync("gateway GET /api/invoices/{ownerId}?year&month", target.Client, request,
            response => response.StatusCode == HttpStatusCode.Unauthorized ? "a valid token was refused" : null);
    }

    [Property(MaxTest = HostileCases.PerTarget, Arbitrary = [typeof(GatewayArbitraries)], QuietOnSuccess = false)]
    public Task Authorization_header(AuthorizationCase c)
    {
        var request = new HttpRequestMessage(HttpMethod.Get, "api/invoices/owner-0001?year=2025&month=3");
        request.Headers.TryAddWithoutValidation("Authorization", c.Header);
        return HostileCases.SendAsync("gateway Authorization header (GET /api/invoices/owner-0001)", target.Client, request, response => response.StatusCode switch
        {
            HttpStatusCode.OK or HttpStatusCode.Forbidden when !IsSignedWithTheKey(c.Header) => "a token not signed with the issuer's key was accepted",
            HttpStatusCode.Unauthorized when !response.Headers.WwwAuthenticate.Any(h => h.Scheme == "Bearer") => "a 401 without a Bearer challenge",
            HttpStatusCode.OK or HttpStatusCode.Forbidden or HttpStatusCode.Unauthorized or HttpStatusCode.RequestHeaderFieldsTooLarge => null,
            var other => $"an answer other than 200, 401, 403 or 431 ({(int)other})",
        });
    }

    [Property(MaxTest = HostileCases.PerTarget, Arbitrary = [typeof(GatewayArbitraries)], QuietOnSuccess = false)]
    public Task Delivery_status_route(StatusCase c)
    {
        var request = new HttpRequestMessage(HttpMethod.Get, $"api/deliveries/{HostileGen.PathSegment(c.Id)}/status");
        request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", target.Tokens[c.Token]);
        return HostileCases.SendAsync("gateway GET /api/deliveries/{id}/status", target.Client, request,
            response => response.StatusCode == HttpStatusCode.OK && (c.Id != "d-1" || c.Token is 2 or 3) ? "another owner's or an unknown delivery was answered" : null);
    }
}
