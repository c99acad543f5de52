using System.ComponentModel.DataAnnotations;
using System.Net;
using DroneDelivery.Security.Tokens;
using DroneDelivery.ServiceDefaults.Settings;

namespace DroneDelivery.Security.PublicApis;

/// <summary>Who issues the bearer tokens the edge accepts.</summary>
public enum EdgeAuthenticationMode
{
    /// <summary>No token is validated and every caller may do everything: the Development environment only (benchmarks).</summary>
    None,

    /// <summary>Tokens signed with a shared HMAC-SHA256 key (<see cref="DevelopmentIssuer"/>): the lab, the load driver, kind.</summary>
    DevelopmentIssuer,

    /// <summary>Any OpenID Connect issuer: signing keys and issuer from the authority's discovery document.</summary>
    OpenIdConnect,

    /// <summary>Microsoft Entra ID through Microsoft.Identity.Web: the AKS configuration.</summary>
    EntraId,
}

/// <summary>
/// How the public edge (Gateway, Ingestion) authenticates its callers (section <c>Authentication</c>):
/// a JWT bearer token whose signature, issuer, audience and lifetime are all validated.
/// </summary>
public sealed class AuthenticationSettings : IValidatableObject
{
    /// <summary>DevelopmentIssuer, OpenIdConnect or EntraId (None: Development environment only). Required.</summary>
    [Required(ErrorMessage = "Mode is required: DevelopmentIssuer, OpenIdConnect or EntraId.")]
    public EdgeAuthenticationMode? Mode { get; set; }

    /// <summary>The <c>aud</c> every token must carry (Entra ID: the API's application (client) id for v2 tokens).</summary>
    public string? Audience { get; set; }

    /// <summary>
    /// OpenIdConnect and EntraId: the issuer's authority, an absolute https URI (http only on a loopback
    /// address) whose <c>/.well-known/openid-configuration</c> gives the signing keys and the issuer;
    /// Entra ID: <c>https://login.microsoftonline.com/{tenant id}/v2.0</c>.
    /// </summary>
    public Uri? Authority { get; set; }

    /// <summary>
    /// The <c>iss</c> every token must carry. Required for DevelopmentIssuer; for OpenIdConnect it overrides
    /// the discovery document's issuer; EntraId validates the tenant's issuers itself.
    /// </summary>
    public string? Issuer { get; set; }

    /// <summary>EntraId: the application (client) id of the API's app registration. Required there, unused otherwise.</summary>
    public string? ClientId { get; set; }

    /// <summary>
    /// DevelopmentIssuer: the HMAC-SHA256 keys tokens may be signed with, base64, at least 256 bits each.
    /// Several keys allow a rotation (new key added, tokens re-minted, old key removed). Never logged.
    /// </summary>
    [Secret]
    public List<string> SigningKeys { get; set; } = [];

    /// <summary>Tolerance for clock differences when checking <c>exp</c> and <c>nbf</c> (0 – 5 min). Default 00:01:00.</summary>
    [Range(typeof(TimeSpan), "00:00:00", "00:05:00")]
    public TimeSpan ClockSkew { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>The claim holding the owner id the caller acts as. Default <c>owner</c>.</summary>
    [RegularExpression(@"^[A-Za-z0-9_.:/-]{1,256}$", ErrorMessage = "OwnerClaim must be 1-256 characters of letters, digits, '_', '.', ':', '/' or '-'.")]
    public string OwnerClaim { get; set; } = ApiAccess.OwnerClaim;

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (Mode is null or EdgeAuthenticationMode.None)
        {
            yield break;
        }

        if (string.IsNullOrWhiteSpace(Audience))
        {
            yield return new ValidationResult($"Audience is required with Mode {Mode}.", [nameof(Audience)]);
        }

        var external = Mode is EdgeAuthenticationMode.OpenIdConnect or EdgeAuthenticationMode.EntraId;
        if (external)
        {
            if (Authority is null)
            {
                yield return new ValidationResult($"Authority is required with Mode {Mode}.", [nameof(Authority)]);
            }
            else if (!IsSecureAuthority(Authority))
            {
                yield return new ValidationResult("Authority must be an absolute https URI (http only on a loopback address).", [nameof(Authority)]);
            }

            if (SigningKeys.Count > 0)
            {
                yield return new ValidationResult($"SigningKeys are for Mode DevelopmentIssuer; with Mode {Mode} the keys come from the authority.", [nameof(SigningKeys)]);
            }
        }
        else
        {
            if (Authority is not null)
            {
                yield return new ValidationResult("Authority is for Mode OpenIdConnect or EntraId.", [nameof(Authority)]);
            }

            if (string.IsNullOrWhiteSpace(Issuer))
            {
                yield return new ValidationResult("Issuer is required with Mode DevelopmentIssuer.", [nameof(Issuer)]);
            }

            if (SigningKeys.Count == 0)
            {
                yield return new ValidationResult("At least one signing key (SigningKeys:0) is required with Mode DevelopmentIssuer.", [nameof(SigningKeys)]);
            }

            for (var i = 0; i < SigningKeys.Count; i++)
            {
                if (DecodeKey(SigningKeys[i]) is null)
                {
                    yield return new ValidationResult($"SigningKeys:{i} must be base64 of at least {DevelopmentIssuer.KeyBytes} bytes.", [nameof(SigningKeys)]);
                }
            }
        }

        if (Mode == EdgeAuthenticationMode.EntraId)
        {
            if (!Guid.TryParse(ClientId, out _))
            {
                yield return new ValidationResult("ClientId (the API's application id, a GUID) is required with Mode EntraId.", [nameof(ClientId)]);
            }

            if (Issuer is not null)
            {
                yield return new ValidationResult("Issuer is not used with Mode EntraId: the tenant's issuers are validated from the authority.", [nameof(Issuer)]);
            }

            if (Authority is { } authority && EntraTenant(authority) is null)
            {
                yield return new ValidationResult("Authority must be https://<instance>/<tenant id or domain>/v2.0 with Mode EntraId.", [nameof(Authority)]);
            }
        }
        else if (ClientId is not null)
        {
            yield return new ValidationResult("ClientId is for Mode EntraId.", [nameof(ClientId)]);
        }
    }

    /// <summary>The key bytes, or null when the text is not base64 of at least 256 bits.</summary>
    internal static byte[]? DecodeKey(string? text)
    {
        if (string.IsNullOrWhiteSpace(text))
        {
            return null;
        }

        var buffer = new byte[text.Length];
        return Convert.TryFromBase64String(text.Trim(), buffer, out var written) && written >= DevelopmentIssuer.KeyBytes ? buffer[..written] : null;
    }

    /// <summary>(instance, tenant) of an Entra ID authority <c>https://host/{tenant}/v2.0</c>, or null.</summary>
    internal static (string Instance, string Tenant)? EntraTenant(Uri authority)
    {
        var segments = authority.AbsolutePath.Trim('/').Split('/', StringSplitOptions.RemoveEmptyEntries);
        return segments.Length == 2 && segments[1] == "v2.0" && authority.Query.Length == 0
            ? ($"{authority.Scheme}://{authority.Authority}/", segments[0])
            : null;
    }

    private static bool IsSecureAuthority(Uri authority) =>
        authority.IsAbsoluteUri
        && (authority.Scheme == Uri.UriSchemeHttps || (authority.Scheme == Uri.UriSchemeHttp && IsLoopback(authority)));

    internal static bool IsLoopback(Uri uri) =>
        uri.IsLoopback || (IPAddress.TryParse(uri.Host, out var address) && IPAddress.IsLoopback(address));
}

/// <summary>
/// The per-caller request limit at the edge (section <c>RateLimiting</c>): a fixed window per token
/// subject (per client address for requests without a valid token). Over the limit: 429 with
/// <c>Retry-After</c>. Each replica counts on its own, so a caller's limit across N replicas is up to N × PermitLimit.
/// </summary>
public sealed class RateLimitingSettings
{
    /// <summary>Requests one caller may make per window (count, 1 – 1000000). Default 100.</summary>
    [Range(1, 1_000_000)]
    public int PermitLimit { get; set; } = 100;

    /// <summary>The window (hh:mm:ss.fff, 100 ms – 1 h). Default 00:00:01.</summary>
    [Range(typeof(TimeSpan), "00:00:00.100", "01:00:00")]
    public TimeSpan Window { get; set; } = TimeSpan.FromSeconds(1);
}

/// <summary>
/// Cross-origin requests from browsers (section <c>Cors</c>). Closed by default: no origin may call.
/// </summary>
public sealed class CorsSettings : IValidatableObject
{
    /// <summary>Origins (<c>https://app.example.com</c>) whose browser pages may call the API. Default: none.</summary>
    public List<string> AllowedOrigins { get; set; } = [];

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        for (var i = 0; i < AllowedOrigins.Count; i++)
        {
            var origin = AllowedOrigins[i];
            if (!Uri.TryCreate(origin, UriKind.Absolute, out var uri)
                || (uri.Scheme != Uri.UriSchemeHttps && uri.Scheme != Uri.UriSchemeHttp)
                || uri.PathAndQuery != "/" || origin.TrimEnd('/').Length != uri.GetLeftPart(UriPartial.Authority).Length || uri.UserInfo.Length > 0)
            {
                yield return new ValidationResult($"AllowedOrigins:{i} '{origin}' must be an origin: scheme, host and optional port (https://app.example.com), no path and no wildcard.", [nameof(AllowedOrigins)]);
            }
        }
    }
}
