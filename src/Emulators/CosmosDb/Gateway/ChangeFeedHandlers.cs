using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// The change feed in latest-version (incremental) mode: <c>GET …/docs</c> with <c>A-IM: Incremental feed</c>,
/// served by one physical partition (partition key range) at a time. Every write takes the next position in
/// its partition's log (<c>_lsn</c>); a page holds the latest version of each item changed after the
/// caller's position, in log order, and the <c>etag</c> header is the position to resume from
/// (<c>If-None-Match</c>). Without <c>If-None-Match</c> the feed starts at the beginning, with <c>*</c> now,
/// with <c>If-Modified-Since</c> at the first change at or after that time. Nothing new is 304 with the
/// etag unchanged. Deletes take a log position but are not in the feed, as in the service's latest-version mode.
/// </summary>
internal static class ChangeFeedHandlers
{
    /// <summary>The operation name in metrics and request timings.</summary>
    public const string Operation = "ReadChangeFeed";

    private const string AIm = "A-IM";
    private const string IfModifiedSince = "If-Modified-Since";
    private const string IncrementalFeed = "Incremental feed";
    private const string FullFidelityFeed = "Full-Fidelity Feed";
    private const int DefaultPageSize = 100;

    public static bool IsChangeFeed(GatewayRequest request) => request.Header(AIm) is not null;

    public static GatewayResponse Read(GatewayRequest request, ContainerResource container)
    {
        var mode = request.Header(AIm)!.Trim();
        if (string.Equals(mode, FullFidelityFeed, StringComparison.OrdinalIgnoreCase))
        {
            return GatewayResponse.BadRequest(
                "The change feed in all versions and deletes mode (A-IM: Full-Fidelity Feed) is not supported by this emulator; "
                + "use the latest version (incremental) mode.").Named(Operation);
        }

        if (!string.Equals(mode, IncrementalFeed, StringComparison.OrdinalIgnoreCase))
        {
            return GatewayResponse.BadRequest($"The A-IM value '{mode}' is not supported; the change feed is read with 'A-IM: Incremental feed'.")
                .Named(Operation);
        }

        var (partition, include) = Scope(request, container);
        var pageSize = PageSize(request);
        var afterLsn = 0L;
        long? fromTimestamp = null;
        var fromNow = false;
        if (request.Header(CosmosHeaders.IfNoneMatch) is { } ifNoneMatch)
        {
            var value = ifNoneMatch.Trim();
            if (value == "*")
            {
                fromNow = true;
            }
            else if (!long.TryParse(value.Trim('"'), NumberStyles.None, CultureInfo.InvariantCulture, out afterLsn))
            {
                throw new BadRequestException($"The change feed continuation (If-None-Match) '{ifNoneMatch}' is not one this emulator issued.");
            }
        }
        else if (request.Header(IfModifiedSince) is { } since)
        {
            fromTimestamp = DateTimeOffset.TryParse(since, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out var time)
                ? time.ToUnixTimeSeconds()
                : throw new BadRequestException($"If-Modified-Since '{since}' is not an HTTP date.");
        }

        if (DataPlane.Admit(container, partition, Operation) is { } throttled)
        {
            return throttled;
        }

        List<StoredDocument> changes;
        long current;
        if (fromNow)
        {
            (changes, current) = partition.ChangesAfter(long.MaxValue, static _ => false);
        }
        else
        {
            var from = fromTimestamp;
            (changes, current) = partition.ChangesAfter(afterLsn, from is null ? include : d => d.Timestamp >= from && include(d));
        }

        // A full page resumes after its last item; otherwise every change up to now has been considered.
        var page = changes.Count > pageSize ? changes.GetRange(0, pageSize) : changes;
        var next = page.Count < changes.Count ? page[^1].Lsn : Math.Max(current, afterLsn);
        var etag = $"\"{next.ToString(CultureInfo.InvariantCulture)}\"";
        var charge = container.Charges.QueryPerPartition + (container.Charges.QueryPerDocument * page.Count);
        var response = page.Count == 0 ? GatewayResponse.Empty(304) : Body(container, page);
        response.Headers.Add(new(CosmosHeaders.ETag, etag));
        response.Headers.Add(new(CosmosHeaders.ItemCount, page.Count.ToString(CultureInfo.InvariantCulture)));
        response.Headers.Add(new("lsn", current.ToString(CultureInfo.InvariantCulture)));
        return response.Named(Operation).Charge(container, partition, charge, page.Count);
    }

    /// <summary>
    /// The physical partition to read and the items of it the caller asked for: a partition key range
    /// (<c>x-ms-documentdb-partitionkeyrangeid</c>), optionally narrowed to an EPK sub-range
    /// (<c>x-ms-start-epk</c>/<c>x-ms-end-epk</c>, as the SDKs send for a feed range smaller than a
    /// partition or for a hierarchical key's prefix), or a partition key (<c>x-ms-documentdb-partitionkey</c>):
    /// one logical partition, or every one under a hierarchical key's prefix.
    /// </summary>
    private static (PhysicalPartition Partition, Func<StoredDocument, bool> Include) Scope(GatewayRequest request, ContainerResource container)
    {
        var target = QueryHandlers.Target(request, container)
            ?? (container.Partitions.Count == 1
                ? new ReadTarget(container.Partitions, default)
                : throw new BadRequestException(
                    "The change feed is read one partition key range at a time: send x-ms-documentdb-partitionkeyrangeid or x-ms-documentdb-partitionkey."));
        if (target.Partitions.Count != 1)
        {
            throw new BadRequestException(
                "The partition key prefix spans several partition key ranges; read the change feed one range at a time (x-ms-documentdb-partitionkeyrangeid).");
        }

        var scope = target.Scope;
        return (target.Partitions[0], scope.IsEverything ? static _ => true : scope.Includes);
    }

    private static GatewayResponse Body(ContainerResource container, List<StoredDocument> page)
    {
        return GatewayResponse.Json(200, w =>
        {
            w.WriteStartObject();
            w.WriteString("_rid", container.Rid);
            w.WriteStartArray("Documents");
            foreach (var document in page)
            {
                w.WriteStartObject();
                foreach (var property in document.Root.EnumerateObject())
                {
                    property.WriteTo(w);
                }

                w.WriteNumber("_lsn", document.Lsn);
                w.WriteEndObject();
            }

            w.WriteEndArray();
            w.WriteNumber("_count", page.Count);
            w.WriteEndObject();
        }, sizeHint: 1024 + page.Sum(d => d.Json.Length + 24));
    }

    private static int PageSize(GatewayRequest request)
    {
        var header = request.Header(CosmosHeaders.MaxItemCount);
        if (header is null)
        {
            return DefaultPageSize;
        }

        if (!int.TryParse(header, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var size) || size == 0 || size < -1)
        {
            throw new BadRequestException($"x-ms-max-item-count must be a positive integer or -1 (was '{header}').");
        }

        return size == -1 ? int.MaxValue : size;
    }
}
