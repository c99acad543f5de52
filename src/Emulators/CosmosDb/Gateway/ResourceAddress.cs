namespace DroneDelivery.Emulators.CosmosDb.Gateway;

internal enum ResourceKind
{
    Account,
    DatabaseFeed,
    Database,
    ContainerFeed,
    Container,
    DocumentFeed,
    Document,
    PartitionKeyRangeFeed,
    PartitionKeyRange,
    OfferFeed,
    Offer,
    Unsupported,
    Unknown,
}

/// <summary>
/// A parsed request path (<c>dbs/{db}/colls/{c}/docs/{id}</c>, <c>offers/{rid}</c>, …), name-based or
/// RID-based, with the resource type and link its signature covers.
/// </summary>
internal sealed record ResourceAddress(
    ResourceKind Kind,
    bool RidBased,
    string? Database,
    string? Container,
    string? Item,
    string SignatureType,
    string SignatureLink,
    string? UnsupportedType = null)
{
    private static readonly HashSet<string> KnownUnsupported = new(StringComparer.OrdinalIgnoreCase)
    {
        "sprocs", "udfs", "triggers", "users", "permissions", "conflicts", "attachments", "schemas",
        "clientencryptionkeys", "partitionkeyrangeids", "addresses", "media", "topology", "snapshots",
    };

    public static ResourceAddress Parse(string path, Func<string, bool> isDatabaseRid)
    {
        var segments = path.Split('/', StringSplitOptions.RemoveEmptyEntries);
        var n = segments.Length;
        if (n == 0)
        {
            return new ResourceAddress(ResourceKind.Account, false, null, null, null, string.Empty, string.Empty);
        }

        if (string.Equals(segments[0], "offers", StringComparison.OrdinalIgnoreCase))
        {
            return n switch
            {
                1 => new ResourceAddress(ResourceKind.OfferFeed, true, null, null, null, "offers", string.Empty),
                2 => new ResourceAddress(ResourceKind.Offer, true, null, null, segments[1], "offers", segments[1].ToLowerInvariant()),
                _ => Unknown(segments),
            };
        }

        if (!string.Equals(segments[0], "dbs", StringComparison.Ordinal))
        {
            return Unknown(segments);
        }

        var ridBased = n >= 2 && isDatabaseRid(segments[1]);
        string signatureType;
        string signatureLink;
        if (n % 2 == 1)
        {
            signatureType = segments[n - 1];
            signatureLink = n == 1 ? string.Empty
                : ridBased ? segments[n - 2].ToLowerInvariant()
                : string.Join('/', segments, 0, n - 1);
        }
        else
        {
            signatureType = segments[n - 2];
            signatureLink = ridBased ? segments[n - 1].ToLowerInvariant() : string.Join('/', segments);
        }

        var database = n >= 2 ? segments[1] : null;
        var container = n >= 4 ? segments[3] : null;
        var item = n >= 6 ? segments[5] : null;
        var kind = n switch
        {
            1 => ResourceKind.DatabaseFeed,
            2 => ResourceKind.Database,
            3 when segments[2] == "colls" => ResourceKind.ContainerFeed,
            4 when segments[2] == "colls" => ResourceKind.Container,
            5 when segments[2] == "colls" && segments[4] == "docs" => ResourceKind.DocumentFeed,
            6 when segments[2] == "colls" && segments[4] == "docs" => ResourceKind.Document,
            5 when segments[2] == "colls" && segments[4] == "pkranges" => ResourceKind.PartitionKeyRangeFeed,
            6 when segments[2] == "colls" && segments[4] == "pkranges" => ResourceKind.PartitionKeyRange,
            _ => ResourceKind.Unknown,
        };
        if (kind == ResourceKind.Unknown)
        {
            var unsupported = segments.Where((s, i) => i % 2 == 0).FirstOrDefault(KnownUnsupported.Contains);
            if (unsupported is not null)
            {
                return new ResourceAddress(ResourceKind.Unsupported, ridBased, database, container, item, signatureType, signatureLink, unsupported);
            }
        }

        return new ResourceAddress(kind, ridBased, database, container, item, signatureType, signatureLink);
    }

    private static ResourceAddress Unknown(string[] segments) =>
        new(ResourceKind.Unknown, false, null, null, null, segments.Length % 2 == 1 ? segments[^1] : segments[^2], string.Join('/', segments));
}
