using System.Security.Cryptography;
using DroneDelivery.Security.Tokens;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>
/// The development issuer every public service of the tests trusts: one key per test run, the settings
/// the lab and the chart give the services for it, and issuers of it on any clock.
/// </summary>
internal static class TestAccess
{
    private static readonly byte[] Key = RandomNumberGenerator.GetBytes(DevelopmentIssuer.KeyBytes);

    /// <summary>Settings under every public service's own: the issuer's, and a rate limit no functional test reaches.</summary>
    public static IReadOnlyDictionary<string, string?> Settings { get; } =
        Issuer(TimeProvider.System).ServiceEnvironment()
            .ToDictionary(pair => pair.Key.Replace("__", ":", StringComparison.Ordinal), pair => (string?)pair.Value)
            .Append(new("RateLimiting:PermitLimit", "1000000"))
            .ToDictionary();

    /// <summary>The issuer, minting on <paramref name="time"/>.</summary>
    public static DevelopmentIssuer Issuer(TimeProvider time) => new(Key, time: time);

    /// <summary>Another key: the tokens it signs are not the issuer's.</summary>
    public static DevelopmentIssuer Impostor(TimeProvider time) => DevelopmentIssuer.Generate(time: time);
}
