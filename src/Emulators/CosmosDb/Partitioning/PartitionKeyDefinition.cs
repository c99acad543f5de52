using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Gateway;
using DroneDelivery.Emulators.CosmosDb.Protocol;

namespace DroneDelivery.Emulators.CosmosDb.Partitioning;

/// <summary>
/// A container's partition key definition: its paths and how their values hash to effective partition
/// keys (EPKs). Kind <c>Hash</c> has one path, hashed with version 1 or 2. Kind <c>MultiHash</c>
/// (hierarchical partition keys) has up to three paths; each component is hashed on its own with
/// version 2 and the hashes are concatenated, as the SDKs compute it, so every item that shares a
/// prefix of the key (its first one or two components) lies in one contiguous EPK range,
/// <c>[EPK(prefix), EPK(prefix) + "FF")</c>.
/// </summary>
internal sealed class PartitionKeyDefinition
{
    /// <summary>The service's limit on the levels of a hierarchical partition key.</summary>
    public const int MaxHierarchicalPaths = 3;

    private readonly string[] _paths;
    private readonly string[][] _segments;

    public PartitionKeyDefinition(IReadOnlyList<string> paths, bool hierarchical, int version)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(paths.Count, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(paths.Count, hierarchical ? MaxHierarchicalPaths : 1);
        _paths = [.. paths];
        _segments = [.. paths.Select(p => p.Split('/', StringSplitOptions.RemoveEmptyEntries))];
        Hierarchical = hierarchical;
        Version = hierarchical ? 2 : version;
    }

    public static PartitionKeyDefinition Hash(string path, int version) => new([path], hierarchical: false, version);

    public IReadOnlyList<string> Paths => _paths;

    /// <summary>The property names along each path (<c>/a/b</c> → <c>a</c>, <c>b</c>).</summary>
    public IReadOnlyList<IReadOnlyList<string>> Segments => _segments;

    /// <summary>True for kind MultiHash: several paths, and requests may name a prefix of the key.</summary>
    public bool Hierarchical { get; }

    /// <summary>"Hash" or "MultiHash", as the container's <c>partitionKey.kind</c>.</summary>
    public string Kind => Hierarchical ? "MultiHash" : "Hash";

    /// <summary>The hash version: 1 or 2 for Hash, always 2 for MultiHash.</summary>
    public int Version { get; }

    /// <summary>The value at each partition key path of a document (undefined where absent).</summary>
    public PartitionKeyValue ValueOf(JsonElement document)
    {
        var components = new PartitionKeyComponent[_segments.Length];
        for (var i = 0; i < _segments.Length; i++)
        {
            components[i] = ComponentAt(document, _segments[i]);
        }

        return PartitionKeyValue.Of(components);
    }

    /// <summary>
    /// The EPK of a complete key, for requests that address items: a key with fewer components than
    /// the container has paths (a prefix) or more is 400 with sub-status 1001, as the service answers it.
    /// </summary>
    public string EffectivePartitionKey(PartitionKeyValue key)
    {
        if (key.Count != _paths.Length)
        {
            throw WrongComponentCount(key);
        }

        return Hash(key.Components);
    }

    /// <summary>
    /// What a request that reads (a query, the change feed) names with its key: one logical partition
    /// (a complete key, <c>IsPrefix</c> false) or, for a hierarchical key, the range of every logical
    /// partition that starts with the given components.
    /// </summary>
    public (string Epk, bool IsPrefix) Locate(PartitionKeyValue key)
    {
        if (key.Count > _paths.Length || (key.Count < _paths.Length && !Hierarchical))
        {
            throw WrongComponentCount(key);
        }

        return (Hash(key.Components), key.Count < _paths.Length);
    }

    /// <summary>The EPK of the given leading components (all of them for a complete key).</summary>
    public string Hash(IReadOnlyList<PartitionKeyComponent> components)
    {
        if (!Hierarchical)
        {
            return Partitioning.EffectivePartitionKey.Compute(components[0], Version);
        }

        if (components.Count == 1)
        {
            return Partitioning.EffectivePartitionKey.ComputeV2(components[0]);
        }

        return string.Concat(components.Select(Partitioning.EffectivePartitionKey.ComputeV2));
    }

    /// <summary>The EPK range of every key that starts with a prefix whose EPK is <paramref name="prefixEpk"/>.</summary>
    public static EpkRange PrefixRange(string prefixEpk) => new(prefixEpk, prefixEpk + Partitioning.EffectivePartitionKey.Maximum);

    public override string ToString() => string.Join(", ", _paths);

    private BadRequestException WrongComponentCount(PartitionKeyValue key) => new(
        (key.Count < _paths.Length
            ? "The partition key supplied in x-ms-partitionkey header has fewer components than defined in the the collection"
            : "The partition key supplied in x-ms-partitionkey header has more components than defined in the the collection")
        + $" ({key} for the {Kind} partition key {this}).",
        SubStatusCodes.PartitionKeyMismatch);

    private static PartitionKeyComponent ComponentAt(JsonElement document, string[] segments)
    {
        var current = document;
        foreach (var segment in segments)
        {
            if (current.ValueKind != JsonValueKind.Object || !current.TryGetProperty(segment, out current))
            {
                return PartitionKeyComponent.Undefined;
            }
        }

        return PartitionKeyComponent.FromJson(current);
    }
}
