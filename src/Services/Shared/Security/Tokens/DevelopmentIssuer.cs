using System.Security.Cryptography;
using Microsoft.IdentityModel.JsonWebTokens;
using Microsoft.IdentityModel.Tokens;

namespace DroneDelivery.Security.Tokens;

/// <summary>Who a development token is for: its subject, the owner it acts as, its scopes and roles.</summary>
public sealed record DevelopmentCaller(string Subject)
{
    /// <summary>The owner id the caller acts as (the <c>owner</c> claim); null: none.</summary>
    public string? Owner { get; init; }

    public IReadOnlyList<string> Scopes { get; init; } = [];

    public IReadOnlyList<string> Roles { get; init; } = [];

    /// <summary>A customer: the owner itself, with every delegated scope (what a simulated user gets).</summary>
    public static DevelopmentCaller ForOwner(string ownerId) => new(ownerId) { Owner = ownerId, Scopes = ApiAccess.Scopes.All };

    /// <summary>An application with every app role: acts for all owners.</summary>
    public static DevelopmentCaller Operator(string name = "operator") => new(name) { Roles = ApiAccess.Roles.All };
}

/// <summary>
/// A token issuer for local use — the lab, the load driver, kind and the tests — the way
/// <c>dotnet user-jwts</c> works: one symmetric HMAC-SHA256 key, known to the issuer and to the services
/// that validate its tokens, generated at start (or read from a Secret on kind). The services validate
/// these tokens exactly as they validate Microsoft Entra ID's: signature, issuer, audience and lifetime.
/// Never for a shared environment: whoever holds the key can mint any token.
/// </summary>
public sealed class DevelopmentIssuer
{
    /// <summary>The development issuer's <c>iss</c> unless configured otherwise (chart value <c>auth.developmentIssuer.issuer</c>).</summary>
    public const string DefaultIssuer = "dronedelivery-development";

    /// <summary>The APIs' audience unless configured otherwise (chart value <c>auth.audience</c>).</summary>
    public const string DefaultAudience = "dronedelivery";

    /// <summary>Key length in bytes: 256 bits, as HMAC-SHA256 needs.</summary>
    public const int KeyBytes = 32;

    /// <summary>How long a minted token is valid unless the caller says otherwise.</summary>
    public static readonly TimeSpan DefaultLifetime = TimeSpan.FromHours(1);

    private static readonly JsonWebTokenHandler Handler = new();
    private readonly SigningCredentials _credentials;
    private readonly TimeProvider _time;

    public DevelopmentIssuer(byte[] signingKey, string issuer = DefaultIssuer, string audience = DefaultAudience, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(signingKey);
        if (signingKey.Length < KeyBytes)
        {
            throw new ArgumentException($"The signing key must be at least {KeyBytes} bytes (got {signingKey.Length}).", nameof(signingKey));
        }

        ArgumentException.ThrowIfNullOrWhiteSpace(issuer);
        ArgumentException.ThrowIfNullOrWhiteSpace(audience);
        SigningKey = Convert.ToBase64String(signingKey);
        Issuer = issuer;
        Audience = audience;
        _time = time ?? TimeProvider.System;
        _credentials = new SigningCredentials(new SymmetricSecurityKey(signingKey), SecurityAlgorithms.HmacSha256);
    }

    /// <summary>The key, base64: what the services get as <c>Authentication:SigningKeys:0</c>.</summary>
    public string SigningKey { get; }

    public string Issuer { get; }

    public string Audience { get; }

    /// <summary>The clock tokens are minted on.</summary>
    public TimeProvider Time => _time;

    /// <summary>An issuer with a new random key.</summary>
    public static DevelopmentIssuer Generate(string issuer = DefaultIssuer, string audience = DefaultAudience, TimeProvider? time = null) =>
        new(RandomNumberGenerator.GetBytes(KeyBytes), issuer, audience, time);

    /// <summary>An issuer with a base64 key, e.g. the kind chart's Secret.</summary>
    /// <exception cref="ArgumentException">The key is not base64 or shorter than 256 bits.</exception>
    public static DevelopmentIssuer FromKey(string base64Key, string issuer = DefaultIssuer, string audience = DefaultAudience, TimeProvider? time = null)
    {
        byte[] key;
        try
        {
            key = Convert.FromBase64String(base64Key.Trim());
        }
        catch (FormatException)
        {
            throw new ArgumentException("The signing key is not base64.", nameof(base64Key));
        }

        return new DevelopmentIssuer(key, issuer, audience, time);
    }

    /// <summary>
    /// The settings that make an edge service accept this issuer's tokens, as environment variables —
    /// the names the chart renders for <c>auth.mode: developmentIssuer</c>.
    /// </summary>
    public IReadOnlyDictionary<string, string> ServiceEnvironment() => new Dictionary<string, string>(StringComparer.Ordinal)
    {
        ["Authentication__Mode"] = "DevelopmentIssuer",
        ["Authentication__Issuer"] = Issuer,
        ["Authentication__Audience"] = Audience,
        ["Authentication__SigningKeys__0"] = SigningKey,
    };

    /// <summary>A signed token for <paramref name="caller"/>, valid from now for <paramref name="lifetime"/> (default 1 h).</summary>
    public string Issue(DevelopmentCaller caller, TimeSpan? lifetime = null)
    {
        ArgumentNullException.ThrowIfNull(caller);
        var now = _time.GetUtcNow().UtcDateTime;
        var claims = new Dictionary<string, object>(StringComparer.Ordinal) { [ApiAccess.SubjectClaim] = caller.Subject };
        if (caller.Owner is { } owner)
        {
            claims[ApiAccess.OwnerClaim] = owner;
        }

        if (caller.Scopes.Count > 0)
        {
            claims[ApiAccess.ScopeClaim] = string.Join(' ', caller.Scopes);
        }

        if (caller.Roles.Count > 0)
        {
            claims[ApiAccess.RolesClaim] = caller.Roles.ToArray();
        }

        return Handler.CreateToken(new SecurityTokenDescriptor
        {
            Issuer = Issuer,
            Audience = Audience,
            IssuedAt = now,
            NotBefore = now,
            Expires = now + (lifetime ?? DefaultLifetime),
            Claims = claims,
            SigningCredentials = _credentials,
        });
    }
}
