using System.Collections.Concurrent;
using System.Net.Http.Headers;
using Azure.Core;
using DroneDelivery.Security.Tokens;

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

    /// <summary>
    /// An application's tokens from <paramref name="credential"/> for <paramref name="scope"/> (e.g. a client app's
    /// client credentials for <c>api://&lt;API app id&gt;/.default</c>): one token for every owner, as an application
    /// with the roles that act for every owner has. The first token is fetched here, so a credential that cannot
    /// get one fails before any load is sent; it is renewed when three quarters of its lifetime have passed, by
    /// one request while the others still carry the current token.
    /// </summary>
    public static AccessTokens FromCredential(TokenCredential credential, string scope, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(credential);
        ArgumentException.ThrowIfNullOrWhiteSpace(scope);
        return new CredentialTokens(credential, new TokenRequestContext([scope]), time ?? TimeProvider.System);
    }

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

    private sealed class CredentialTokens : AccessTokens
    {
        private readonly TokenCredential _credential;
        private readonly TokenRequestContext _context;
        private readonly TimeProvider _time;
        private readonly Lock _renewing = new();
        private volatile Current _current;

        public CredentialTokens(TokenCredential credential, TokenRequestContext context, TimeProvider time)
        {
            (_credential, _context, _time) = (credential, context, time);
            _current = Fetch();
        }

        public override AuthenticationHeaderValue For(string ownerId)
        {
            var current = _current;
            if (_time.GetUtcNow() >= current.RenewAt && _renewing.TryEnter())
            {
                try
                {
                    if (_time.GetUtcNow() >= _current.RenewAt)
                    {
                        _current = Fetch();
                    }
                }
                finally
                {
                    _renewing.Exit();
                }
            }

            return _current.Header;
        }

        private Current Fetch()
        {
            var now = _time.GetUtcNow();
            var token = _credential.GetToken(_context, CancellationToken.None);
            return new Current(new AuthenticationHeaderValue("Bearer", token.Token), now + ((token.ExpiresOn - now) * 0.75));
        }

        private sealed record Current(AuthenticationHeaderValue Header, DateTimeOffset RenewAt);
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
