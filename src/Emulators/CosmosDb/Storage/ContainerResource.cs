using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.Emulators.CosmosDb.Capacity;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>A container (collection): its definition, physical partitions and capacity model.</summary>
internal sealed class ContainerResource
{
    private readonly JsonObject _properties;
    private readonly LatencyModel _latencyModel;
    private readonly LatencyOptions? _ownLatency;
    private long _sequence;

    public ContainerResource(
        DatabaseResource database,
        string id,
        string rid,
        PartitionKeyDefinition partitionKey,
        JsonObject properties,
        ThroughputPool pool,
        OfferResource? offer,
        LatencyModel latencyModel,
        LatencyOptions? ownLatency,
        RequestChargeOptions charges,
        int metricsHistorySeconds,
        TimeProvider time)
    {
        Database = database;
        Id = id;
        Rid = rid;
        RidBytes = ResourceIds.Decode(rid);
        PartitionKey = partitionKey;
        _properties = properties;
        Pool = pool;
        Offer = offer;
        _latencyModel = latencyModel;
        _ownLatency = ownLatency;
        Charges = charges;
        Time = time;
        Timestamp = time.GetUtcNow().ToUnixTimeSeconds();
        ETag = ETags.New();
        Layout = PartitionLayout.Create(pool.PartitionCount, partitionKey.Version);
        Partitions = [.. Layout.Ranges.Select((range, i) =>
            new PhysicalPartition(i, range, ResourceIds.PartitionKeyRange(rid, i), new PartitionMetrics(metricsHistorySeconds, time)))];
        RoutingMapETag = $"\"{rid}-{Partitions.Count}\"";
        SelfLink = $"dbs/{database.Rid}/colls/{rid}/";
        AltLink = HeaderSafe($"dbs/{database.Id}/colls/{id}");
    }

    public DatabaseResource Database { get; }

    public string Id { get; }

    public string Rid { get; }

    public byte[] RidBytes { get; }

    public PartitionKeyDefinition PartitionKey { get; }

    /// <summary>The emulator's clock: items' <c>_ts</c> and the capacity model use it.</summary>
    public TimeProvider Time { get; }

    public ThroughputPool Pool { get; }

    /// <summary>The container's own offer; null when it shares its database's throughput.</summary>
    public OfferResource? Offer { get; }

    /// <summary>The container's own latency settings, or the account's (which <c>PUT /_emulator/latency</c> replaces).</summary>
    public LatencyOptions Latency => _ownLatency ?? _latencyModel.Settings;

    /// <summary>How long a served request that visited <paramref name="partitions"/> partitions and read <paramref name="documents"/> documents takes.</summary>
    public TimeSpan ServedLatency(int partitions, int documents) => _latencyModel.Served(Latency, partitions, documents);

    /// <summary>How long a 429 answer takes.</summary>
    public TimeSpan ThrottledLatency => LatencyModel.Throttled(Latency);

    public RequestChargeOptions Charges { get; }

    public long Timestamp { get; }

    public string ETag { get; }

    public PartitionLayout Layout { get; }

    public IReadOnlyList<PhysicalPartition> Partitions { get; }

    /// <summary>The version of the partition key range map; constant because partitions never split.</summary>
    public string RoutingMapETag { get; }

    public string SelfLink { get; }

    /// <summary>
    /// The name-based link, as in <c>x-ms-alt-content-path</c>: ids may hold any character but an HTTP
    /// header only printable ASCII, so others are percent-encoded (UTF-8), as in a URL.
    /// </summary>
    public string AltLink { get; }

    private static string HeaderSafe(string link) =>
        link.All(c => c is >= ' ' and <= '~')
            ? link
            : string.Concat(link.EnumerateRunes().Select(r => r.Value is >= ' ' and <= '~'
                ? r.ToString()
                : string.Concat(Encoding.UTF8.GetBytes(r.ToString()).Select(b => $"%{b:X2}"))));

    public long NextSequence() => Interlocked.Increment(ref _sequence);

    public PhysicalPartition PartitionFor(string epk) => Partitions[Layout.Locate(epk)];

    /// <summary>The EPK of a complete partition key; a prefix or a longer key is 400 (sub-status 1001).</summary>
    public string EffectivePartitionKeyOf(PartitionKeyValue value) => PartitionKey.EffectivePartitionKey(value);

    /// <summary>The value at the partition key paths of a document (undefined where absent).</summary>
    public PartitionKeyValue PartitionKeyOf(JsonElement document) => PartitionKey.ValueOf(document);

    public PhysicalPartition? PartitionById(string id)
    {
        // Accept "<collectionRid>,<id>" too, the form some clients use.
        var comma = id.LastIndexOf(',');
        if (comma >= 0)
        {
            id = id[(comma + 1)..];
        }

        return int.TryParse(id, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var index)
            && index >= 0 && index < Partitions.Count ? Partitions[index] : null;
    }

    public void WriteTo(Utf8JsonWriter writer)
    {
        writer.WriteStartObject();
        writer.WriteString("id", Id);
        foreach (var (name, value) in _properties)
        {
            writer.WritePropertyName(name);
            if (value is null)
            {
                writer.WriteNullValue();
            }
            else
            {
                value.WriteTo(writer);
            }
        }

        writer.WriteStartObject("partitionKey");
        writer.WriteStartArray("paths");
        foreach (var path in PartitionKey.Paths)
        {
            writer.WriteStringValue(path);
        }

        writer.WriteEndArray();
        writer.WriteString("kind", PartitionKey.Kind);
        writer.WriteNumber("version", PartitionKey.Version);
        writer.WriteEndObject();
        writer.WriteString("_rid", Rid);
        writer.WriteNumber("_ts", Timestamp);
        writer.WriteString("_self", SelfLink);
        writer.WriteString("_etag", ETag);
        writer.WriteString("_docs", "docs/");
        writer.WriteString("_sprocs", "sprocs/");
        writer.WriteString("_triggers", "triggers/");
        writer.WriteString("_udfs", "udfs/");
        writer.WriteString("_conflicts", "conflicts/");
        writer.WriteEndObject();
    }

    /// <summary>The user-settable container properties to keep, with defaults for the ones the SDK expects.</summary>
    public static JsonObject EchoedProperties(JsonObject? body)
    {
        var properties = new JsonObject();
        if (body is not null)
        {
            foreach (var (name, value) in body)
            {
                if (name is "id" or "partitionKey" || name.StartsWith('_'))
                {
                    continue;
                }

                properties[name] = value?.DeepClone();
            }
        }

        properties["indexingPolicy"] ??= JsonNode.Parse(
            """{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}""");
        properties["conflictResolutionPolicy"] ??= JsonNode.Parse(
            """{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}""");
        properties["geospatialConfig"] ??= JsonNode.Parse("""{"type":"Geography"}""");
        return properties;
    }
}

internal static class ETags
{
    // Only a starting point that differs between runs, so etags of a restarted emulator do not repeat; nothing depends on its time.
    private static long _counter = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds() << 12;

    public static string New() =>
        $"\"{Interlocked.Increment(ref _counter):x16}-0000-0000-0000-000000000000\"";
}
