using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Query;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// Queries: the query plan the SDK asks for first, and the per-partition query pages it then
/// requests — each page served, charged and delayed by exactly one physical partition.
/// </summary>
internal static class QueryHandlers
{
    private const int DefaultPageSize = 100;
    private const int MaxResponseBytes = 4 * 1024 * 1024;

    public static GatewayResponse QueryPlan(GatewayRequest request, ContainerResource container)
    {
        using var spec = QuerySpec.Parse(request);
        var plan = QueryPlanner.Plan(spec.Query, spec.Parameters, container.PartitionKeySegments, container.PartitionKeyVersion);
        var response = GatewayResponse.Json(200, plan.WriteTo).Named(CosmosEmulatorOperations.QueryPlan);
        response.Container = container;
        return response;
    }

    public static GatewayResponse Query(GatewayRequest request, ContainerResource container)
    {
        using var spec = QuerySpec.Parse(request);
        return Execute(request, container, spec, CosmosEmulatorOperations.Query);
    }

    /// <summary>Reading the item feed (GET …/docs) is a <c>SELECT *</c> with the same paging.</summary>
    public static GatewayResponse ReadFeed(GatewayRequest request, ContainerResource container) =>
        Execute(request, container, new QuerySpec(PreparedQuery.Get("SELECT * FROM root"), new Dictionary<string, QueryValue>(), null), CosmosEmulatorOperations.ReadFeed);

    private static GatewayResponse Execute(GatewayRequest request, ContainerResource container, QuerySpec spec, string operation)
    {
        var pageSize = PageSize(request);
        var continuation = request.Header(CosmosHeaders.Continuation);
        var rangeId = request.Header(CosmosHeaders.PartitionKeyRangeId);
        var partitionKey = request.PartitionKey();
        string? exactEpk = partitionKey is { } pk ? container.EffectivePartitionKeyOf(pk) : null;

        PhysicalPartition partition;
        if (rangeId is not null)
        {
            partition = container.PartitionById(rangeId)
                ?? throw new BadRequestException($"Partition key range '{rangeId}' does not exist in container '{container.Id}'.");
            if (exactEpk is not null && !partition.Range.Contains(exactEpk))
            {
                // Only possible if client and emulator hash partition keys differently: fail loudly.
                throw new BadRequestException(
                    $"The partition key {partitionKey} hashes to {exactEpk}, outside partition key range '{partition.Id}' [{partition.Range.MinInclusive}, {partition.Range.MaxExclusive}).");
            }
        }
        else if (exactEpk is not null)
        {
            partition = container.PartitionFor(exactEpk);
        }
        else
        {
            // The SDK always names the partition key range (or the partition key) a query page is for,
            // after asking for the query plan; a request without either cannot be charged to a partition.
            throw new BadRequestException(
                "A query must name its partition key range (x-ms-documentdb-partitionkeyrangeid) or partition key (x-ms-documentdb-partitionkey); "
                + "cross-partition queries are fanned out by the client from the query plan.");
        }

        var scope = new DocumentScope(ExactEpk: exactEpk);
        if (string.Equals(request.Header(CosmosHeaders.ReadFeedKeyType), "EffectivePartitionKeyRange", StringComparison.OrdinalIgnoreCase))
        {
            scope = scope with { MinEpk = request.Header(CosmosHeaders.StartEpk), MaxEpk = request.Header(CosmosHeaders.EndEpk) };
        }

        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var page = QueryExecutor.ExecutePage(spec.Query, spec.Parameters, partition.Snapshot(), scope, pageSize, continuation, spec.ResumeFilter);
        var charge = container.Charges.QueryPerPartition + (container.Charges.QueryPerDocument * page.DocumentsRead);
        return Page(container, page).Named(operation).Charge(container, partition, charge, page.DocumentsRead);
    }

    private static GatewayResponse Page(ContainerResource container, QueryPage page)
    {
        var rows = page.Rows;
        string? continuation = page.Continuation;
        var response = GatewayResponse.Json(200, w =>
        {
            w.WriteStartObject();
            w.WriteString("_rid", container.Rid);
            w.WriteStartArray("Documents");
            foreach (var row in rows)
            {
                row.WriteTo(w);
            }

            w.WriteEndArray();
            w.WriteNumber("_count", rows.Count);
            w.WriteEndObject();
        }, sizeHint: 1024 + (rows.Count * 512));
        if (response.Body.Length > MaxResponseBytes)
        {
            throw new BadRequestException(
                $"The query page is larger than {MaxResponseBytes / (1024 * 1024)} MB; lower MaxItemCount.");
        }

        response.Headers.Add(new(CosmosHeaders.ItemCount, rows.Count.ToString(CultureInfo.InvariantCulture)));
        if (continuation is not null)
        {
            // Present only while the partition has more: any value, even empty, means "more" to the SDK.
            response.Headers.Add(new(CosmosHeaders.Continuation, continuation));
        }

        return response;
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
