using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Query;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>
/// A stored item: the exact JSON the emulator answers with (user properties plus system properties)
/// and a parsed view of it for queries. Immutable; a replace stores a new instance.
/// </summary>
internal sealed class StoredDocument
{
    private KeyValuePair<string, QueryValue>[]? _topLevel;

    public required string Id { get; init; }

    /// <summary>The effective partition key of the document's partition key value.</summary>
    public required string Epk { get; init; }

    /// <summary>Insertion order within the container; kept by replaces, so query continuations stay stable.</summary>
    public required long Sequence { get; init; }

    public required string Rid { get; init; }

    /// <summary>The quoted etag, as in <c>_etag</c> and the <c>etag</c> header.</summary>
    public required string ETag { get; init; }

    public required long Timestamp { get; init; }

    /// <summary>
    /// The write's position in its physical partition's log (<c>_lsn</c> in the change feed); set by the
    /// partition under its lock when the document is stored, never changed afterwards.
    /// </summary>
    public long Lsn { get; internal set; }

    public required byte[] Json { get; init; }

    public required JsonElement Root { get; init; }

    public QueryValue Value => QueryValue.FromDocument(this);

    /// <summary>
    /// A top-level property, from a small index built on first use: filters read the same few
    /// properties of every item, and a linear scan of .NET strings beats re-scanning the JSON.
    /// </summary>
    public QueryValue TopLevelProperty(string name)
    {
        var properties = Volatile.Read(ref _topLevel);
        if (properties is null)
        {
            // Strings become .NET strings here, once, so comparing them later touches no JSON.
            properties = [.. Root.EnumerateObject().Select(p => new KeyValuePair<string, QueryValue>(
                p.Name,
                p.Value.ValueKind == JsonValueKind.String ? QueryValue.FromString(p.Value.GetString()!) : QueryValue.FromElement(p.Value)))];
            Volatile.Write(ref _topLevel, properties);
        }

        // Last one wins on duplicate names, as with JsonElement.TryGetProperty.
        for (var i = properties.Length - 1; i >= 0; i--)
        {
            if (string.Equals(properties[i].Key, name, StringComparison.Ordinal))
            {
                return properties[i].Value;
            }
        }

        return QueryValue.Undefined;
    }
}

/// <summary>Identifies an item within a container: its partition (by EPK) and its id.</summary>
internal readonly record struct DocumentKey(string Epk, string Id);
