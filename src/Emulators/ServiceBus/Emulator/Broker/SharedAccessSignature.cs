using System.Globalization;
using System.Net;
using System.Security.Cryptography;
using System.Text;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// A Service Bus shared access signature: <c>SharedAccessSignature sr=&lt;resource&gt;&amp;sig=&lt;signature&gt;&amp;se=&lt;expiry&gt;&amp;skn=&lt;key name&gt;</c>,
/// where the signature is Base64(HMAC-SHA256(UTF-8 key, url-encoded resource + "\n" + expiry)). The broker parses and
/// verifies the tokens a CBS put-token carries; <see cref="Create"/> serves tests that play a client on raw AMQP.
/// </summary>
public sealed record SharedAccessSignature(string Resource, string KeyName, DateTimeOffset ExpiresOn, string Signature)
{
    private const string Prefix = "SharedAccessSignature ";

    /// <summary>
    /// The resource exactly as the token carries it, url-encoded: the signature is over these characters, and clients
    /// encode differently (the .NET SDK and core-amqp with upper-case escapes, the JavaScript administration client the
    /// whole lower-cased request URL with lower-case ones), so it is checked as sent. Null: the encoding of <see cref="Resource"/>.
    /// </summary>
    public string? EncodedResource { get; init; }

    /// <summary>Creates a token for <paramref name="resource"/> valid for <paramref name="validFor"/>.</summary>
    public static SharedAccessSignature Create(string resource, string keyName, string key, TimeSpan validFor, DateTimeOffset? now = null)
    {
        var expiry = (now ?? DateTimeOffset.UtcNow).Add(validFor);
        var seconds = expiry.ToUnixTimeSeconds();
        var encodedResource = WebUtility.UrlEncode(resource);
        return new SharedAccessSignature(resource, keyName, DateTimeOffset.FromUnixTimeSeconds(seconds), Sign(encodedResource, seconds, key));
    }

    /// <summary>The token text, as sent in a CBS put-token or an Authorization header.</summary>
    public override string ToString() =>
        string.Create(CultureInfo.InvariantCulture,
            $"{Prefix}sr={WebUtility.UrlEncode(Resource)}&sig={WebUtility.UrlEncode(Signature)}&se={ExpiresOn.ToUnixTimeSeconds()}&skn={WebUtility.UrlEncode(KeyName)}");

    /// <summary>Parses a token; returns null when it is not a shared access signature.</summary>
    public static SharedAccessSignature? TryParse(string token) => TryParse(token, out _);

    /// <summary>Parses a token; returns null, and in <paramref name="problem"/> what is wrong, when it is not a shared access signature.</summary>
    public static SharedAccessSignature? TryParse(string token, out string problem)
    {
        if (!token.StartsWith(Prefix, StringComparison.OrdinalIgnoreCase))
        {
            problem = $"it does not start with '{Prefix.Trim()}'";
            return null;
        }

        string? sr = null, sig = null, se = null, skn = null, encodedResource = null;
        foreach (var pair in token[Prefix.Length..].Split('&', StringSplitOptions.RemoveEmptyEntries))
        {
            var equals = pair.IndexOf('=', StringComparison.Ordinal);
            if (equals <= 0)
            {
                problem = "its fields are not name=value pairs separated by '&'";
                return null;
            }

            var value = WebUtility.UrlDecode(pair[(equals + 1)..]);
            switch (pair[..equals].Trim().ToLowerInvariant())
            {
                case "sr": sr = value; encodedResource = pair[(equals + 1)..]; break;
                case "sig": sig = value; break;
                case "se": se = value; break;
                case "skn": skn = value; break;
            }
        }

        var missing = new[] { (sr, "sr"), (sig, "sig"), (se, "se"), (skn, "skn") }.Where(f => f.Item1 is null).Select(f => f.Item2).ToList();
        if (missing.Count > 0)
        {
            problem = $"it lacks {string.Join(", ", missing)}";
            return null;
        }

        // An expiry DateTimeOffset cannot hold (beyond the year 9999 or before the year 1) is malformed, not "never".
        if (!long.TryParse(se, NumberStyles.Integer, CultureInfo.InvariantCulture, out var expiry) || expiry < MinExpirySeconds || expiry > MaxExpirySeconds)
        {
            problem = $"its expiry se='{se}' is not a number of seconds since 1970 between {MinExpirySeconds} and {MaxExpirySeconds}";
            return null;
        }

        problem = string.Empty;
        return new SharedAccessSignature(sr!, skn!, DateTimeOffset.FromUnixTimeSeconds(expiry), sig!) { EncodedResource = encodedResource };
    }

    /// <summary>
    /// Why the token does not authorise <paramref name="audiencePath"/> (an entity path; empty for the namespace), or
    /// null when it does: signed with the namespace's key under its name, not expired, and its resource covering the path
    /// (a token for a path covers what lies below it; hosts and schemes are not compared, as clients name the emulator
    /// differently). The text starts with the service's error code.
    /// </summary>
    public string? Refusal(string keyName, string key, DateTimeOffset now, string audiencePath)
    {
        if (!string.Equals(KeyName, keyName, StringComparison.Ordinal) || !IsSignedWith(key))
        {
            return $"InvalidSignature: the token's signature does not match key '{KeyName}'.";
        }

        if (ExpiresOn <= now)
        {
            return $"ExpiredToken: the token expired at {ExpiresOn:O}.";
        }

        var resourcePath = CbsNode.PathOf(Resource);
        return resourcePath.Length == 0 || audiencePath.Equals(resourcePath, StringComparison.OrdinalIgnoreCase)
            || audiencePath.StartsWith(resourcePath + "/", StringComparison.OrdinalIgnoreCase)
            ? null
            : $"InvalidAudience: the token's resource '{Resource}' does not cover '{audiencePath}'.";
    }

    private static readonly long MinExpirySeconds = DateTimeOffset.MinValue.ToUnixTimeSeconds();

    private static readonly long MaxExpirySeconds = DateTimeOffset.MaxValue.ToUnixTimeSeconds();

    /// <summary>True when the signature was made with <paramref name="key"/> (constant-time comparison).</summary>
    public bool IsSignedWith(string key)
    {
        var expected = Sign(EncodedResource ?? WebUtility.UrlEncode(Resource), ExpiresOn.ToUnixTimeSeconds(), key);
        return CryptographicOperations.FixedTimeEquals(Encoding.UTF8.GetBytes(expected), Encoding.UTF8.GetBytes(Signature));
    }

    private static string Sign(string encodedResource, long expirySeconds, string key)
    {
        var toSign = encodedResource + "\n" + expirySeconds.ToString(CultureInfo.InvariantCulture);
        return Convert.ToBase64String(HMACSHA256.HashData(Encoding.UTF8.GetBytes(key), Encoding.UTF8.GetBytes(toSign)));
    }
}
