using System.Collections.Concurrent;
using DroneDelivery.Emulators.CosmosDb.Query;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>
/// An immutable view of a physical partition's items in insertion order, with indexes built on
/// first use: by logical partition (EPK), and by the value of a top-level property. Like the service's
/// own index, they let a filter such as <c>c.ownerId = @ownerId</c> read only the items that can
/// match instead of every item of the partition. Every list keeps insertion order.
/// </summary>
internal sealed class PartitionSnapshot(StoredDocument[] documents)
{
    private readonly ConcurrentDictionary<string, Dictionary<IndexKey, StoredDocument[]>> _byProperty = new(StringComparer.Ordinal);
    private Dictionary<string, StoredDocument[]>? _byEpk;

    public IReadOnlyList<StoredDocument> Documents => documents;

    public IReadOnlyList<StoredDocument> InLogicalPartition(string epk)
    {
        var index = Volatile.Read(ref _byEpk);
        if (index is null)
        {
            index = documents.GroupBy(d => d.Epk, StringComparer.Ordinal).ToDictionary(g => g.Key, g => g.ToArray(), StringComparer.Ordinal);
            Volatile.Write(ref _byEpk, index);
        }

        return index.TryGetValue(epk, out var items) ? items : [];
    }

    /// <summary>
    /// The items whose top-level <paramref name="property"/> equals <paramref name="value"/> (a string,
    /// number, boolean or null); every other item fails <c>c.property = value</c>.
    /// </summary>
    public IReadOnlyList<StoredDocument> WherePropertyEquals(string property, in QueryValue value)
    {
        if (!IndexKey.TryCreate(value, out var key))
        {
            return documents;
        }

        var index = _byProperty.GetOrAdd(property, static (name, items) =>
        {
            var buckets = new Dictionary<IndexKey, List<StoredDocument>>();
            foreach (var item in items)
            {
                if (IndexKey.TryCreate(item.TopLevelProperty(name), out var itemKey))
                {
                    (buckets.TryGetValue(itemKey, out var bucket) ? bucket : buckets[itemKey] = []).Add(item);
                }
            }

            return buckets.ToDictionary(b => b.Key, b => b.Value.ToArray());
        }, documents);
        return index.TryGetValue(key, out var matches) ? matches : [];
    }

    /// <summary>A primitive value as a dictionary key, with Cosmos DB equality (type and value).</summary>
    private readonly record struct IndexKey(QueryValueKind Kind, double Number, string? Text)
    {
        public static bool TryCreate(in QueryValue value, out IndexKey key)
        {
            key = value.Kind switch
            {
                QueryValueKind.String => new IndexKey(QueryValueKind.String, 0, value.AsString()),
                // 0.0 and -0.0 are equal numbers; give them one key.
                QueryValueKind.Number => new IndexKey(QueryValueKind.Number, value.Number == 0 ? 0 : value.Number, null),
                QueryValueKind.Boolean or QueryValueKind.Null => new IndexKey(value.Kind, value.Number, null),
                _ => default,
            };
            return value.Kind is QueryValueKind.String or QueryValueKind.Number or QueryValueKind.Boolean or QueryValueKind.Null;
        }
    }
}
