using System.Collections.Concurrent;
using System.Net.Http.Headers;
using DroneDelivery.Access;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>
/// The bearer token each request carries, chosen for the simulated user it is sent for: every seeded
/// owner is a user acting for itself, so its requests carry a token with its owner claim.
/// </summary>
public abstract class AccessTokens
{
    private protected AccessTokens()
    {
    }

    /// <summary>No Authorization header (a system without authentication, or to measure the refusals).</summary>
    public static AccessTokens None { get; } = new NoTokens();

    /// <summary>The same token on every request: an application token with the roles that act for every owner.</summary>
    public static AccessTokens Fixed(string token)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(token);
        return new FixedToken(new AuthenticationHeaderValue("Bearer", token));
    }

    /// <summary>
    /// A token per owner from a development issuer, the way <c>dotnet user-jwts</c> mints them: subject and
    /// <c>owner</c> claim the owner id, every delegated scope. Each is minted once and renewed when three
    /// quarters of its lifetime (on the issuer's clock) have passed.
    /// </summary>
    public static AccessTokens Minted(DevelopmentIssuer issuer) => new MintedTokens(issuer ?? throw new ArgumentNullException(nameof(issuer)));

    /// <summary>The Authorization header of a request made for <paramref name="ownerId"/>, or null for none.</summary>
    public abstract AuthenticationHeaderValue? For(string ownerId);

    private sealed class NoTokens : AccessTokens
    {
        public override AuthenticationHeaderValue? For(string ownerId) => null;
    }

    private sealed class FixedToken(AuthenticationHeaderValue header) : AccessTokens
    {
        public override AuthenticationHeaderValue For(string ownerId) => header;
    }

    private sealed class MintedTokens(DevelopmentIssuer issuer) : AccessTokens
    {
        private readonly ConcurrentDictionary<string, (AuthenticationHeaderValue Header, DateTimeOffset RenewAt)> _tokens = new(StringComparer.Ordinal);

        public override AuthenticationHeaderValue For(string ownerId)
        {
            var now = issuer.Time.GetUtcNow();
            if (_tokens.TryGetValue(ownerId, out var cached) && now < cached.RenewAt)
            {
                return cached.Header;
            }

            var header = new AuthenticationHeaderValue("Bearer", issuer.Issue(DevelopmentCaller.ForOwner(ownerId)));
            _tokens[ownerId] = (header, now + (DevelopmentIssuer.DefaultLifetime * 0.75));
            return header;
        }
    }
}
