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
        var plan = QueryPlanner.Plan(spec.Query, spec.Parameters, container.PartitionKey);
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
        var target = Target(request, container);
        if (target is not { Partitions.Count: 1 })
        {
            // Neither a range nor a partition key (or a hierarchical key's prefix whose items span several
            // partitions): the gateway fans the query out itself, as the service's gateway does for the
            // JavaScript SDK's first attempt at every query.
            return CrossPartition(request, container, spec, operation, pageSize, continuation, target);
        }

        var (partitions, scope) = target.Value;
        var partition = partitions[0];
        if (continuation is not null && CrossPartitionToken.IsOne(continuation))
        {
            throw new BadRequestException("The continuation token belongs to a cross-partition query; send it without a partition key range or partition key.");
        }

        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var page = QueryExecutor.ExecutePage(spec.Query, spec.Parameters, partition.Snapshot(), scope, pageSize, continuation, spec.ResumeFilter);
        var charge = container.Charges.QueryPerPartition + (container.Charges.QueryPerDocument * page.DocumentsRead);
        var response = Page(container, page).Named(operation).Charge(container, partition, charge, page.DocumentsRead);

        // Optimistic direct execution: the client sent the query itself, not a plan's rewrite of it, to the one
        // range it targets, and one partition answers any query completely (aggregates, ORDER BY, DISTINCT, …).
        // The service then says its continuation needs no client-side distribution, and the client goes on
        // paging the same way rather than starting over with a query plan.
        return IsOptimisticDirectExecution(request) && page.Continuation is not null
            ? response.WithHeader(CosmosHeaders.RequiresDistribution, "false")
            : response;
    }

    private static bool IsOptimisticDirectExecution(GatewayRequest request) =>
        bool.TryParse(request.Header(CosmosHeaders.OptimisticDirectExecute), out var value) && value;

    /// <summary>
    /// What a query or change feed request names with its partition key range id
    /// (<c>x-ms-documentdb-partitionkeyrangeid</c>), its partition key and an EPK sub-range
    /// (<c>x-ms-start-epk</c>/<c>x-ms-end-epk</c>): the physical partitions it reads and the items of them
    /// it may see — one logical partition for a complete key, every logical partition under a
    /// hierarchical key's prefix, or an EPK sub-range of a partition. Null when it names neither a range
    /// nor a key.
    /// </summary>
    internal static ReadTarget? Target(GatewayRequest request, ContainerResource container)
    {
        var rangeId = request.Header(CosmosHeaders.PartitionKeyRangeId);
        var partitionKey = request.PartitionKey();
        var scope = default(DocumentScope);
        EpkRange? keyRange = null;
        if (partitionKey is not null)
        {
            var (epk, isPrefix) = container.PartitionKey.Locate(partitionKey);
            scope = isPrefix ? new DocumentScope(PrefixEpk: epk) : new DocumentScope(ExactEpk: epk);
            keyRange = isPrefix ? PartitionKeyDefinition.PrefixRange(epk) : null;
        }

        var startEpk = request.Header(CosmosHeaders.StartEpk);
        var endEpk = request.Header(CosmosHeaders.EndEpk);
        scope = scope with
        {
            MinEpk = string.IsNullOrEmpty(startEpk) ? null : startEpk,
            MaxEpk = string.IsNullOrEmpty(endEpk) || endEpk == EffectivePartitionKey.Maximum ? null : endEpk,
        };

        if (rangeId is null)
        {
            if (partitionKey is null)
            {
                return null;
            }

            IReadOnlyList<PhysicalPartition> partitions = keyRange is { } prefix
                ? [.. container.Partitions.Where(p => p.Range.Overlaps(prefix))]
                : [container.PartitionFor(scope.ExactEpk!)];
            return new ReadTarget(partitions, scope);
        }

        var partition = container.PartitionById(rangeId)
            ?? throw new BadRequestException($"Partition key range '{rangeId}' does not exist in container '{container.Id}'.");
        if ((scope.ExactEpk is { } exact && !partition.Range.Contains(exact)) || (keyRange is { } range && !partition.Range.Overlaps(range)))
        {
            // Only possible if client and emulator hash partition keys differently: fail loudly.
            throw new BadRequestException(
                $"The partition key {partitionKey} hashes to {scope.ExactEpk ?? scope.PrefixEpk}, outside partition key range '{partition.Id}' [{partition.Range.MinInclusive}, {partition.Range.MaxExclusive}).");
        }

        return new ReadTarget([partition], scope);
    }

    /// <summary>
    /// A query without a partition key range or partition key (or with a hierarchical key's prefix that
    /// spans several partitions). Filters and projections are served here: the physical partitions are
    /// read in range order, as many as it takes to fill the page, each admitted, charged and delayed like
    /// a page of its own; the continuation names the partition to go on with and that partition's own
    /// continuation. Anything that needs merging across partitions (ORDER BY, aggregates, TOP, OFFSET
    /// LIMIT, DISTINCT, GROUP BY) is answered 400/1004 with the query plan, as the service's gateway
    /// answers it: the client then runs the plan's per-range queries itself.
    /// </summary>
    private static GatewayResponse CrossPartition(
        GatewayRequest request, ContainerResource container, QuerySpec spec, string operation, int pageSize, string? continuation, ReadTarget? target)
    {
        var prepared = spec.Query;
        var query = prepared.Query;
        if (prepared.IsAggregate || prepared.OrderBy is not null || query.Top is not null || query.Offset is not null || query.Distinct
            || prepared.IsGrouped)
        {
            return NotServable(container, spec, operation, target?.Scope.PrefixEpk);
        }

        if (target is null && operation == CosmosEmulatorOperations.Query && !request.HeaderIsTrue(CosmosHeaders.EnableCrossPartitionQuery))
        {
            throw new BadRequestException(
                "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition = true, "
                + "specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.");
        }

        var partitions = container.Partitions;
        var scope = target?.Scope ?? default;
        // A partition key equality in the WHERE clause narrows the partitions read, as the query plan does.
        var ranges = QueryPlanner.TargetRanges(query, spec.Parameters, container.PartitionKey);
        bool CanMatch(PhysicalPartition partition) =>
            (target is null || target.Value.Partitions.Contains(partition))
            && ranges.Any(r => r.IsMaxInclusive && r.Min == r.Max
                ? partition.Range.Contains(r.Min)
                : string.CompareOrdinal(r.Min, partition.Range.MaxExclusive) < 0 && string.CompareOrdinal(partition.Range.MinInclusive, r.Max) < 0);
        int NextFrom(int i)
        {
            while (i < partitions.Count && !CanMatch(partitions[i]))
            {
                i++;
            }

            return i;
        }

        var (index, inner) = continuation is null ? (NextFrom(0), null) : CrossPartitionToken.Parse(continuation, container);
        var rows = new List<QueryValue>();
        var charges = new List<(PhysicalPartition Partition, double Charge, int Documents)>();
        string? next = null;
        while (index < partitions.Count)
        {
            var partition = partitions[index];
            if (DataPlane.Admit(container, partition, operation) is { } throttled)
            {
                if (charges.Count == 0)
                {
                    return throttled;
                }

                // Serve what the partitions already read; the client comes back for this one.
                next = CrossPartitionToken.Format(partition, inner);
                break;
            }

            var page = QueryExecutor.ExecutePage(prepared, spec.Parameters, partition.Snapshot(), scope, pageSize - rows.Count, inner, null);
            charges.Add((partition, container.Charges.QueryPerPartition + (container.Charges.QueryPerDocument * page.DocumentsRead), page.DocumentsRead));
            rows.AddRange(page.Rows);
            if (page.Continuation is not null)
            {
                next = CrossPartitionToken.Format(partition, page.Continuation);
                break;
            }

            inner = null;
            index = NextFrom(index + 1);
            if (rows.Count >= pageSize)
            {
                next = index < partitions.Count ? CrossPartitionToken.Format(partitions[index], null) : null;
                break;
            }
        }

        var documents = charges.Sum(c => c.Documents);
        var response = Page(container, new QueryPage(rows, next, documents)).Named(operation);
        response.Container = container;
        foreach (var (partition, charge, read) in charges)
        {
            response.Charge(container, partition, charge, read);
        }

        // Each partition visited costs its own latency, one after another.
        response.Latency = container.ServedLatency(charges.Count, documents);
        return response;
    }

    /// <summary>
    /// 400 with sub-status 1004 and the query plan in <c>additionalErrorInfo</c> (a JSON string); for a
    /// hierarchical key's prefix, the plan's ranges are limited to the range the prefix covers.
    /// </summary>
    private static GatewayResponse NotServable(ContainerResource container, QuerySpec spec, string operation, string? prefixEpk)
    {
        var plan = QueryPlanner.Plan(spec.Query, spec.Parameters, container.PartitionKey);
        if (prefixEpk is not null)
        {
            plan = plan with { Ranges = QueryPlanner.Within(plan.Ranges, PartitionKeyDefinition.PrefixRange(prefixEpk)) };
        }

        var buffer = new System.Buffers.ArrayBufferWriter<byte>(1024);
        using (var writer = new Utf8JsonWriter(buffer))
        {
            plan.WriteTo(writer);
        }

        var planJson = System.Text.Encoding.UTF8.GetString(buffer.WrittenSpan);
        var body = GatewayResponse.Json(400, w =>
        {
            w.WriteStartObject();
            w.WriteString("code", "BadRequest");
            w.WriteString("message",
                "The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception "
                + "that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an "
                + "exception (which only happens on older SDK clients), then you can safely ignore this message.");
            w.WriteString("additionalErrorInfo", planJson);
            w.WriteEndObject();
        }).Body;
        return new GatewayResponse { StatusCode = 400, SubStatusCode = SubStatusCodes.CrossPartitionQueryNotServable, Body = body, Container = container }
            .Named(operation);
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

/// <summary>The physical partitions a query or change feed request reads and the items of them it may see.</summary>
internal readonly record struct ReadTarget(IReadOnlyList<PhysicalPartition> Partitions, DocumentScope Scope);

/// <summary>
/// The continuation of a gateway-served cross-partition query: the physical partition to go on with
/// (its id and lower EPK bound, checked on return) and that partition's own continuation.
/// </summary>
internal static class CrossPartitionToken
{
    private const string Prefix = "xp.";

    public static bool IsOne(string token) => token.StartsWith(Prefix, StringComparison.Ordinal);

    public static string Format(PhysicalPartition partition, string? inner)
    {
        var json = JsonSerializer.Serialize(new Dictionary<string, string?>
        {
            ["range"] = partition.Id,
            ["min"] = partition.Range.MinInclusive,
            ["token"] = inner,
        });
        return Prefix + System.Buffers.Text.Base64Url.EncodeToString(System.Text.Encoding.UTF8.GetBytes(json));
    }

    public static (int Index, string? Inner) Parse(string token, ContainerResource container)
    {
        string? range = null, min = null, inner = null;
        if (IsOne(token))
        {
            try
            {
                using var document = JsonInput.Parse(System.Buffers.Text.Base64Url.DecodeFromChars(token.AsSpan(Prefix.Length)));
                var root = document.RootElement;
                range = root.GetProperty("range").GetString();
                min = root.GetProperty("min").GetString();
                inner = root.TryGetProperty("token", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString() : null;
            }
            catch (Exception e) when (e is FormatException or JsonException or KeyNotFoundException or InvalidOperationException)
            {
                range = null;
            }
        }

        var partition = range is null ? null : container.PartitionById(range);
        if (partition is null || !string.Equals(partition.Range.MinInclusive, min, StringComparison.Ordinal))
        {
            throw new BadRequestException("The continuation token is not one this emulator issued for a cross-partition query of this container.");
        }

        return (partition.Index, inner);
    }
}
