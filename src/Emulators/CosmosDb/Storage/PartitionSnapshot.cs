namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>
/// An immutable view of a physical partition's items in insertion order, with a lazily built index by
/// logical partition (EPK) so that partition-key-scoped queries read only their own items.
/// </summary>
internal sealed class PartitionSnapshot(StoredDocument[] documents)
{
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
}
