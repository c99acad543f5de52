using System.Globalization;
using System.Security.Cryptography;
using System.Text;

namespace DroneDelivery.Emulators.CosmosDb.Protocol;

/// <summary>
/// Verifies master-key signatures: HMAC-SHA256, keyed with the decoded account key, over
/// <c>verb\nresourceType\nresourceLink\nx-ms-date\ndate\n</c> (verb, type and dates lower-cased; name-based
/// links as sent, RID-based links lower-cased). The header is URL-encoded
/// <c>type=master&amp;ver=1.0&amp;sig=&lt;base64&gt;</c>.
/// </summary>
internal sealed class MasterKeyAuthorizer(string accountKey, TimeProvider time)
{
    private static readonly TimeSpan AllowedClockSkew = TimeSpan.FromMinutes(15);

    // One keyed HMAC per thread: creating a keyed HMAC per request costs more than hashing the payload.
    [ThreadStatic]
    private static (byte[] Key, IncrementalHash Hmac)? _threadHmac;

    private readonly byte[] _key = Convert.FromBase64String(accountKey);

    /// <summary>Null when the request is authorised, otherwise why not.</summary>
    public string? Verify(string? authorization, string verb, string resourceType, string resourceLink, string? xDate, string? date)
    {
        if (string.IsNullOrEmpty(authorization))
        {
            return "The authorization header is missing.";
        }

        var decoded = Uri.UnescapeDataString(authorization);
        string? type = null;
        string? signature = null;
        foreach (var part in decoded.Split('&'))
        {
            var equals = part.IndexOf('=');
            if (equals <= 0)
            {
                continue;
            }

            var name = part[..equals];
            var value = part[(equals + 1)..];
            if (name.Equals("type", StringComparison.OrdinalIgnoreCase))
            {
                type = value;
            }
            else if (name.Equals("sig", StringComparison.OrdinalIgnoreCase))
            {
                // A '+' decoded to a space by an intermediary is still a '+' in base64.
                signature = value.Replace(' ', '+');
            }
        }

        if (!string.Equals(type, "master", StringComparison.OrdinalIgnoreCase))
        {
            return $"Only master-key authorization is supported (token type '{type}').";
        }

        if (signature is null)
        {
            return "The authorization header has no signature.";
        }

        var stamp = string.IsNullOrEmpty(xDate) ? date : xDate;
        if (string.IsNullOrEmpty(stamp))
        {
            return "The request has neither an x-ms-date nor a date header.";
        }

        if (!DateTimeOffset.TryParseExact(stamp, "r", CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var when))
        {
            return $"The request date '{stamp}' is not an RFC 1123 date.";
        }

        if ((time.GetUtcNow() - when).Duration() > AllowedClockSkew)
        {
            return $"The request date '{stamp}' is more than 15 minutes from the emulator's clock.";
        }

        var payload = string.Create(CultureInfo.InvariantCulture,
            $"{verb.ToLowerInvariant()}\n{resourceType.ToLowerInvariant()}\n{resourceLink}\n{(xDate ?? string.Empty).ToLowerInvariant()}\n{(string.IsNullOrEmpty(xDate) ? (date ?? string.Empty).ToLowerInvariant() : string.Empty)}\n");
        Span<byte> expected = stackalloc byte[32];
        var hmac = Hmac();
        hmac.AppendData(Encoding.UTF8.GetBytes(payload));
        hmac.GetHashAndReset(expected);
        Span<byte> provided = stackalloc byte[64];
        if (!Convert.TryFromBase64String(signature, provided, out var length) || length != 32
            || !CryptographicOperations.FixedTimeEquals(expected, provided[..32]))
        {
            return "The input authorization token can't serve the request. The wrong key is being used or the expected payload "
                + "is not built as per the protocol.";
        }

        return null;
    }

    private IncrementalHash Hmac()
    {
        if (_threadHmac is { } cached && ReferenceEquals(cached.Key, _key))
        {
            return cached.Hmac;
        }

        _threadHmac?.Hmac.Dispose();
        var hmac = IncrementalHash.CreateHMAC(HashAlgorithmName.SHA256, _key);
        _threadHmac = (_key, hmac);
        return hmac;
    }
}
