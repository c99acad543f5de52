using System.Collections.Concurrent;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Capacity;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>A database, with optional shared throughput.</summary>
internal sealed class DatabaseResource(string id, string rid, ThroughputPool? sharedPool, OfferResource? offer, TimeProvider time)
{
    private uint _nextContainer;

    public string Id { get; } = id;

    public string Rid { get; } = rid;

    public string ETag { get; } = ETags.New();

    public long Timestamp { get; } = time.GetUtcNow().ToUnixTimeSeconds();

    /// <summary>Throughput shared by containers created without their own; null when none.</summary>
    public ThroughputPool? SharedPool { get; } = sharedPool;

    public OfferResource? Offer { get; set; } = offer;

    public ConcurrentDictionary<string, ContainerResource> Containers { get; } = new(StringComparer.Ordinal);

    public ConcurrentDictionary<string, ContainerResource> ContainersByRid { get; } = new(StringComparer.Ordinal);

    public string SelfLink => $"dbs/{Rid}/";

    public uint NextContainerOrdinal() => ++_nextContainer;

    public void WriteTo(Utf8JsonWriter writer)
    {
        writer.WriteStartObject();
        writer.WriteString("id", Id);
        writer.WriteString("_rid", Rid);
        writer.WriteString("_self", SelfLink);
        writer.WriteString("_etag", ETag);
        writer.WriteString("_colls", "colls/");
        writer.WriteString("_users", "users/");
        writer.WriteNumber("_ts", Timestamp);
        writer.WriteEndObject();
    }
}

/// <summary>The throughput offer of a container or of a database with shared throughput.</summary>
internal sealed class OfferResource(string rid, string targetRid, string targetLink, ThroughputPool pool, TimeProvider time)
{
    public string Rid { get; } = rid;

    /// <summary>The RID of the container or database the offer belongs to.</summary>
    public string TargetRid { get; } = targetRid;

    /// <summary>The RID-based link of the target, <c>dbs/{db}/colls/{c}/</c> or <c>dbs/{db}/</c>.</summary>
    public string TargetLink { get; } = targetLink;

    public ThroughputPool Pool { get; } = pool;

    public string ETag { get; private set; } = ETags.New();

    public long Timestamp { get; private set; } = time.GetUtcNow().ToUnixTimeSeconds();

    public void Replace(double throughput, bool autoscale)
    {
        Pool.SetThroughput(throughput, autoscale);
        ETag = ETags.New();
        Timestamp = time.GetUtcNow().ToUnixTimeSeconds();
    }

    public void WriteTo(Utf8JsonWriter writer)
    {
        writer.WriteStartObject();
        writer.WriteString("id", Rid);
        writer.WriteString("_rid", Rid);
        writer.WriteString("_self", $"offers/{Rid}/");
        writer.WriteString("resource", TargetLink);
        writer.WriteString("offerType", "Invalid");
        writer.WriteString("offerResourceId", TargetRid);
        writer.WriteString("offerVersion", "V2");
        writer.WriteStartObject("content");
        if (Pool.Autoscale)
        {
            writer.WriteNumber("offerThroughput", Pool.Throughput);
            writer.WriteStartObject("offerAutopilotSettings");
            writer.WriteNumber("maxThroughput", Pool.Throughput);
            writer.WriteEndObject();
        }
        else
        {
            writer.WriteNumber("offerThroughput", Pool.Throughput);
        }

        writer.WriteBoolean("offerIsRUPerMinuteThroughputEnabled", false);
        writer.WriteEndObject();
        writer.WriteString("_etag", ETag);
        writer.WriteNumber("_ts", Timestamp);
        writer.WriteEndObject();
    }
}
