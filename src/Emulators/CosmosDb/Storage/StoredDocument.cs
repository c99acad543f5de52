using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Query;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>
/// A stored item: the exact JSON the emulator answers with (user properties plus system properties)
/// and a parsed view of it for queries. Immutable; a replace stores a new instance.
/// </summary>
internal sealed class StoredDocument
{
    public required string Id { get; init; }

    /// <summary>The effective partition key of the document's partition key value.</summary>
    public required string Epk { get; init; }

    /// <summary>Insertion order within the container; kept by replaces, so query continuations stay stable.</summary>
    public required long Sequence { get; init; }

    public required string Rid { get; init; }

    /// <summary>The quoted etag, as in <c>_etag</c> and the <c>etag</c> header.</summary>
    public required string ETag { get; init; }

    public required long Timestamp { get; init; }

    public required byte[] Json { get; init; }

    public required JsonElement Root { get; init; }

    public QueryValue Value => QueryValue.FromDocument(Root, Json);
}

/// <summary>Identifies an item within a container: its partition (by EPK) and its id.</summary>
internal readonly record struct DocumentKey(string Epk, string Id);
