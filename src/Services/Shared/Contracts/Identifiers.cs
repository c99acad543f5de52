using System.Buffers;

namespace DroneDelivery.Contracts;

/// <summary>
/// The rule for every id the services exchange (owner, package, delivery, drone): 1–64 characters of
/// letters, digits, <c>-</c>, <c>_</c>, <c>.</c> and <c>:</c>. Such ids are safe in URLs, Redis keys and
/// Cosmos DB document ids (which refuse <c>/</c>, <c>\</c>, <c>?</c> and <c>#</c>).
/// </summary>
public static class Identifiers
{
    public const int MaxLength = 64;

    public const string Rule = "must be 1-64 characters of letters, digits, '-', '_', '.' or ':'";

    private static readonly SearchValues<char> Allowed =
        SearchValues.Create("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:");

    public static bool IsValid(string? id) =>
        !string.IsNullOrEmpty(id) && id.Length <= MaxLength && !id.AsSpan().ContainsAnyExcept(Allowed);

    /// <summary>A new delivery id: time-ordered, so ids sort roughly by acceptance.</summary>
    public static string NewDeliveryId() => Guid.CreateVersion7().ToString("N");
}
