using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>The outcome of a write against a partition.</summary>
internal enum WriteStatus
{
    Created,
    Replaced,
    Deleted,
    Conflict,
    NotFound,
    PreconditionFailed,
}

/// <summary>
/// One physical partition: a slice of the EPK space and the items in it. Items are kept in insertion
/// order (slots with tombstones, compacted as they accumulate) plus an index by key; queries read an
/// immutable snapshot that is rebuilt only after writes.
/// </summary>
internal sealed partial class PhysicalPartition
{
    private const int CompactionThreshold = 1024;

    private readonly Lock _sync = new();
    private readonly List<StoredDocument?> _slots = [];
    private readonly Dictionary<DocumentKey, int> _index = [];
    private PartitionSnapshot? _snapshot;
    private int _tombstones;
    private long _highestSequence = long.MinValue;
    private long _lsn;

    public PhysicalPartition(int index, EpkRange range, string rid, PartitionMetrics metrics)
    {
        Index = index;
        Id = index.ToString(System.Globalization.CultureInfo.InvariantCulture);
        Range = range;
        Rid = rid;
        Metrics = metrics;
    }

    public int Index { get; }

    /// <summary>The partition key range id (<c>"0"</c>, <c>"1"</c>, …).</summary>
    public string Id { get; }

    public EpkRange Range { get; }

    public string Rid { get; }

    public PartitionMetrics Metrics { get; }

    public int Count
    {
        get
        {
            lock (_sync)
            {
                return _index.Count;
            }
        }
    }

    public StoredDocument? Read(DocumentKey key)
    {
        lock (_sync)
        {
            return _index.TryGetValue(key, out var slot) ? _slots[slot] : null;
        }
    }

    /// <summary>The items as of now; rebuilt on the first read after a write.</summary>
    public PartitionSnapshot Snapshot()
    {
        lock (_sync)
        {
            return _snapshot ??= new PartitionSnapshot([.. _slots.Where(d => d is not null).Select(d => d!)]);
        }
    }

    /// <summary>
    /// Creates, replaces or upserts under the partition lock. <paramref name="build"/> makes the new
    /// document from the existing one (null when absent) so that a replace keeps its sequence and id.
    /// An <paramref name="ifMatch"/> that does not match the item, or an <paramref name="ifNoneMatch"/>
    /// that does, fails the write (412).
    /// </summary>
    public (WriteStatus Status, StoredDocument? Document) Write(
        DocumentKey key,
        WriteMode mode,
        string? ifMatch,
        Func<StoredDocument?, StoredDocument> build,
        string? ifNoneMatch = null)
    {
        lock (_sync)
        {
            var exists = _index.TryGetValue(key, out var slot);
            var existing = exists ? _slots[slot] : null;
            switch (mode)
            {
                case WriteMode.Create when exists:
                    return (WriteStatus.Conflict, existing);
                case WriteMode.Replace when !exists:
                    return (WriteStatus.NotFound, null);
            }

            if (ifMatch is not null && (existing is null || !ETagMatches(ifMatch, existing.ETag)))
            {
                return (existing is null && mode == WriteMode.Upsert ? WriteStatus.NotFound : WriteStatus.PreconditionFailed, existing);
            }

            if (ifNoneMatch is not null && existing is not null && ETagMatches(ifNoneMatch, existing.ETag))
            {
                return (WriteStatus.PreconditionFailed, existing);
            }

            var document = build(existing);
            document.Lsn = ++_lsn;
            _snapshot = null;
            if (exists)
            {
                _slots[slot] = document;
                return (WriteStatus.Replaced, document);
            }

            Insert(key, document);
            return (WriteStatus.Created, document);
        }
    }

    public (WriteStatus Status, StoredDocument? Document) Delete(DocumentKey key, string? ifMatch, string? ifNoneMatch = null)
    {
        lock (_sync)
        {
            if (!_index.TryGetValue(key, out var slot))
            {
                return (WriteStatus.NotFound, null);
            }

            var existing = _slots[slot]!;
            if ((ifMatch is not null && !ETagMatches(ifMatch, existing.ETag)) || (ifNoneMatch is not null && ETagMatches(ifNoneMatch, existing.ETag)))
            {
                return (WriteStatus.PreconditionFailed, existing);
            }

            _slots[slot] = null;
            _index.Remove(key);
            _lsn++;
            _snapshot = null;
            if (++_tombstones > CompactionThreshold && _tombstones > _index.Count)
            {
                Compact();
            }

            return (WriteStatus.Deleted, existing);
        }
    }

    /// <summary>
    /// The change feed's view: the latest version of every item written after <paramref name="afterLsn"/>
    /// that <paramref name="include"/> accepts, in log order, and the partition's current log position.
    /// </summary>
    public (List<StoredDocument> Changes, long CurrentLsn) ChangesAfter(long afterLsn, Func<StoredDocument, bool> include)
    {
        lock (_sync)
        {
            var changes = new List<StoredDocument>();
            foreach (var document in _slots)
            {
                if (document is not null && document.Lsn > afterLsn && include(document))
                {
                    changes.Add(document);
                }
            }

            changes.Sort(static (a, b) => a.Lsn.CompareTo(b.Lsn));
            return (changes, _lsn);
        }
    }

    public static bool ETagMatches(string header, string etag) =>
        header == "*" || string.Equals(header.Trim(), etag, StringComparison.Ordinal);

    // Sequences come from a container-wide counter taken before the lock, so an insert can arrive
    // slightly out of order; it then goes before the (few) later documents already stored.
    private void Insert(DocumentKey key, StoredDocument document)
    {
        if (document.Sequence > _highestSequence)
        {
            _highestSequence = document.Sequence;
            _slots.Add(document);
            _index[key] = _slots.Count - 1;
            return;
        }

        var position = -1;
        for (var i = _slots.Count - 1; i >= 0; i--)
        {
            var stored = _slots[i];
            if (stored is null)
            {
                continue;
            }

            if (stored.Sequence < document.Sequence)
            {
                break;
            }

            position = i;
        }

        if (position < 0)
        {
            _slots.Add(document);
            _index[key] = _slots.Count - 1;
            return;
        }

        _slots.Insert(position, document);
        for (var i = position; i < _slots.Count; i++)
        {
            if (_slots[i] is { } moved)
            {
                _index[new DocumentKey(moved.Epk, moved.Id)] = i;
            }
        }
    }

    private void Compact()
    {
        var live = _slots.Where(d => d is not null).ToList();
        _slots.Clear();
        _index.Clear();
        foreach (var document in live)
        {
            _index[new DocumentKey(document!.Epk, document.Id)] = _slots.Count;
            _slots.Add(document);
        }

        _tombstones = 0;
    }
}

internal enum WriteMode
{
    Create,
    Replace,
    Upsert,
}
