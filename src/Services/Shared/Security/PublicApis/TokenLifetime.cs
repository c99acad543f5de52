using Microsoft.IdentityModel.Tokens;

namespace DroneDelivery.Security.PublicApis;

/// <summary>
/// Token lifetime checked on the service's <see cref="TimeProvider"/>, with the same rules as
/// Microsoft.IdentityModel's own check (which reads the system clock and cannot be given another): an
/// <c>exp</c> is required, <c>nbf</c> may not lie after it, and both are compared with the clock skew.
/// </summary>
internal static class TokenLifetime
{
    public static LifetimeValidator On(TimeProvider time) => (notBefore, expires, _, parameters) =>
    {
        var now = time.GetUtcNow().UtcDateTime;
        var skew = parameters.ClockSkew;
        if (expires is not { } exp)
        {
            throw new SecurityTokenNoExpirationException("The token has no expiration time (exp).");
        }

        if (notBefore is { } nbf && nbf > exp)
        {
            throw new SecurityTokenInvalidLifetimeException($"The token's nbf ({nbf:O}) is after its exp ({exp:O}).") { NotBefore = nbf, Expires = exp };
        }

        if (notBefore is { } start && start > now + skew)
        {
            throw new SecurityTokenNotYetValidException($"The token is not valid before {start:O}.") { NotBefore = start };
        }

        if (exp < now - skew)
        {
            throw new SecurityTokenExpiredException($"The token expired at {exp:O}.") { Expires = exp };
        }

        return true;
    };
}
