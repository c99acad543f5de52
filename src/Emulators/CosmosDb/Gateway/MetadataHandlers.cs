using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Query;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>The account, databases, containers, partition key ranges and offers.</summary>
internal sealed class MetadataHandlers(AccountStore store, CosmosEmulatorOptions options)
{
    // The SDK parses this JSON string lazily and refuses to run queries when it is missing. Optimistic direct
    // execution is allowed, as the service allows it: a client that opts in sends a query that targets one
    // partition range straight to it, without asking for a query plan (QueryHandlers.Execute).
    private const string QueryEngineConfiguration =
        "{\"allowNewKeywords\":true,\"maxJoinsPerSqlQuery\":10,\"maxQueryRequestTimeoutFraction\":0.9,"
        + "\"maxSqlQueryInputLength\":524288,\"maxUdfRefPerSqlQuery\":10,\"queryMaxInMemorySortDocumentCount\":-1000,"
        + "\"spatialMaxGeometryPointCount\":256,\"sqlAllowNonFiniteNumbers\":false,\"sqlDisableOptimizationFlags\":0,"
        + "\"enableSpatialIndexing\":true,\"maxInExpressionItemsCount\":2147483647,\"maxLogicalAndPerSqlQuery\":2147483647,"
        + "\"maxLogicalOrPerSqlQuery\":2147483647,\"maxSpatialQueryCells\":2147483647,\"sqlAllowAggregateFunctions\":true,"
        + "\"sqlAllowGroupByClause\":false,\"sqlAllowLike\":false,\"sqlAllowSubQuery\":false,\"sqlAllowScalarSubQuery\":false,"
        + "\"sqlAllowTop\":true,\"clientDisableOptimisticDirectExecution\":false}";

    public GatewayResponse ReadAccount(GatewayRequest request)
    {
        // Locations point back at whatever address the client used, so it never wanders off.
        var endpoint = $"{request.Scheme}://{request.Host}/";
        return GatewayResponse.Json(200, w =>
        {
            w.WriteStartObject();
            w.WriteString("_self", string.Empty);
            w.WriteString("id", "localhost");
            w.WriteString("_rid", "localhost");
            w.WriteString("media", "//media/");
            w.WriteString("addresses", "//addresses/");
            w.WriteString("_dbs", "//dbs/");
            foreach (var name in new[] { "writableLocations", "readableLocations" })
            {
                w.WriteStartArray(name);
                w.WriteStartObject();
                w.WriteString("name", "Emulator");
                w.WriteString("databaseAccountEndpoint", endpoint);
                w.WriteEndObject();
                w.WriteEndArray();
            }

            w.WriteBoolean("enableMultipleWriteLocations", false);
            w.WriteStartObject("userReplicationPolicy");
            w.WriteBoolean("asyncReplication", false);
            w.WriteNumber("minReplicaSetSize", 1);
            w.WriteNumber("maxReplicasetSize", 1);
            w.WriteEndObject();
            w.WriteStartObject("userConsistencyPolicy");
            w.WriteString("defaultConsistencyLevel", options.DefaultConsistencyLevel);
            w.WriteEndObject();
            w.WriteStartObject("systemReplicationPolicy");
            w.WriteNumber("minReplicaSetSize", 1);
            w.WriteNumber("maxReplicasetSize", 1);
            w.WriteEndObject();
            w.WriteStartObject("readPolicy");
            w.WriteNumber("primaryReadCoefficient", 1);
            w.WriteNumber("secondaryReadCoefficient", 1);
            w.WriteEndObject();
            w.WriteString("queryEngineConfiguration", QueryEngineConfiguration);
            w.WriteEndObject();
        });
    }

    public GatewayResponse Databases(GatewayRequest request)
    {
        switch (request.Method)
        {
            case "GET":
                return Feed("Databases", string.Empty, store.Databases, (d, w) => d.WriteTo(w)).Named(CosmosEmulatorOperations.ListDatabases);
            case "POST" when request.HeaderIsTrue(CosmosHeaders.IsQuery):
                return QueryFeed(request, "Databases", string.Empty, store.Databases, (d, w) => d.WriteTo(w)).Named(CosmosEmulatorOperations.ListDatabases);
            case "POST":
                using (var body = request.ParseJsonObject())
                {
                    var id = RequireId(body.RootElement);
                    var (created, database) = store.CreateDatabase(id, request.Throughput());
                    return created
                        ? GatewayResponse.Json(201, database!.WriteTo).Named(CosmosEmulatorOperations.CreateDatabase)
                        : GatewayResponse.Conflict().Named(CosmosEmulatorOperations.CreateDatabase);
                }

            default:
                return MethodNotAllowed(request);
        }
    }

    public GatewayResponse Database(GatewayRequest request, DatabaseResource database) => request.Method switch
    {
        "GET" => GatewayResponse.Json(200, database.WriteTo).Named(CosmosEmulatorOperations.ReadDatabase),
        "DELETE" => (store.DeleteDatabase(database) ? GatewayResponse.Empty(204) : GatewayResponse.NotFound()).Named(CosmosEmulatorOperations.DeleteDatabase),
        _ => MethodNotAllowed(request),
    };

    public GatewayResponse Containers(GatewayRequest request, DatabaseResource database)
    {
        var containers = database.Containers.Values.OrderBy(c => c.Rid, StringComparer.Ordinal).ToList();
        switch (request.Method)
        {
            case "GET":
                return Feed("DocumentCollections", database.Rid, containers, (c, w) => c.WriteTo(w)).Named(CosmosEmulatorOperations.ListContainers);
            case "POST" when request.HeaderIsTrue(CosmosHeaders.IsQuery):
                return QueryFeed(request, "DocumentCollections", database.Rid, containers, (c, w) => c.WriteTo(w)).Named(CosmosEmulatorOperations.ListContainers);
            case "POST":
                return CreateContainer(request, database).Named(CosmosEmulatorOperations.CreateContainer);
            default:
                return MethodNotAllowed(request);
        }
    }

    public GatewayResponse Container(GatewayRequest request, ContainerResource container)
    {
        var response = request.Method switch
        {
            "GET" => GatewayResponse.Json(200, container.WriteTo).Named(CosmosEmulatorOperations.ReadContainer),
            "DELETE" => (store.DeleteContainer(container) ? GatewayResponse.Empty(204) : GatewayResponse.NotFound()).Named(CosmosEmulatorOperations.DeleteContainer),
            "PUT" => ReplaceContainer(request, container).Named(CosmosEmulatorOperations.ReplaceContainer),
            _ => MethodNotAllowed(request),
        };
        response.Container = container;
        return response;
    }

    public GatewayResponse PartitionKeyRanges(GatewayRequest request, ContainerResource container)
    {
        if (request.Method != "GET")
        {
            return MethodNotAllowed(request);
        }

        // The SDK repeats this request with If-None-Match until it gets 304; the map never changes.
        GatewayResponse response;
        if (string.Equals(request.Header(CosmosHeaders.IfNoneMatch), container.RoutingMapETag, StringComparison.Ordinal))
        {
            response = GatewayResponse.Empty(304);
        }
        else
        {
            response = GatewayResponse.Json(200, w =>
            {
                w.WriteStartObject();
                w.WriteString("_rid", container.Rid);
                w.WriteStartArray("PartitionKeyRanges");
                foreach (var partition in container.Partitions)
                {
                    w.WriteStartObject();
                    w.WriteString("_rid", partition.Rid);
                    w.WriteString("id", partition.Id);
                    w.WriteString("_etag", container.RoutingMapETag);
                    w.WriteString("minInclusive", partition.Range.MinInclusive);
                    w.WriteString("maxExclusive", partition.Range.MaxExclusive);
                    w.WriteNumber("ridPrefix", partition.Index);
                    w.WriteString("_self", $"{container.SelfLink}pkranges/{partition.Rid}/");
                    w.WriteNumber("throughputFraction", 1.0 / container.Partitions.Count);
                    w.WriteString("status", "online");
                    w.WriteStartArray("parents");
                    w.WriteEndArray();
                    w.WriteNumber("_ts", container.Timestamp);
                    w.WriteNumber("_lsn", 1);
                    w.WriteEndObject();
                }

                w.WriteEndArray();
                w.WriteNumber("_count", container.Partitions.Count);
                w.WriteEndObject();
            });
            response.Headers.Add(new(CosmosHeaders.ItemCount, container.Partitions.Count.ToString(CultureInfo.InvariantCulture)));
        }

        response.Headers.Add(new(CosmosHeaders.ETag, container.RoutingMapETag));
        response.Operation = CosmosEmulatorOperations.ReadPartitionKeyRanges;
        response.Container = container;
        return response;
    }

    public GatewayResponse Offers(GatewayRequest request) => request.Method switch
    {
        "GET" => Feed("Offers", string.Empty, store.Offers, (o, w) => o.WriteTo(w)).Named(CosmosEmulatorOperations.ListOffers),
        "POST" when request.HeaderIsTrue(CosmosHeaders.IsQuery) =>
            QueryFeed(request, "Offers", string.Empty, store.Offers, (o, w) => o.WriteTo(w)).Named(CosmosEmulatorOperations.ListOffers),
        _ => MethodNotAllowed(request),
    };

    public GatewayResponse Offer(GatewayRequest request, OfferResource offer)
    {
        var response = request.Method switch
        {
            "GET" => GatewayResponse.Json(200, offer.WriteTo).Named(CosmosEmulatorOperations.ReadOffer),
            "PUT" => ReplaceOffer(request, offer).Named(CosmosEmulatorOperations.ReplaceOffer),
            _ => MethodNotAllowed(request),
        };
        response.Container = store.Containers.FirstOrDefault(c => c.Offer == offer);
        return response;
    }

    private GatewayResponse ReplaceOffer(GatewayRequest request, OfferResource offer)
    {
        var ifMatch = request.Header(CosmosHeaders.IfMatch);
        if (ifMatch is not null && !PhysicalPartition.ETagMatches(ifMatch, offer.ETag))
        {
            return GatewayResponse.PreconditionFailed();
        }

        using var body = request.ParseJsonObject();
        if (!body.RootElement.TryGetProperty("content", out var content) || content.ValueKind != JsonValueKind.Object)
        {
            return GatewayResponse.BadRequest("The offer has no content object.");
        }

        var autoscale = content.TryGetProperty("offerAutopilotSettings", out var autopilot) && autopilot.ValueKind == JsonValueKind.Object;
        var throughputElement = autoscale && autopilot.TryGetProperty("maxThroughput", out var max) ? max
            : content.TryGetProperty("offerThroughput", out var manual) ? manual
            : default;
        if (throughputElement.ValueKind != JsonValueKind.Number || !throughputElement.TryGetInt32(out var throughput) || throughput <= 0)
        {
            return GatewayResponse.BadRequest("The offer's throughput (content.offerThroughput or content.offerAutopilotSettings.maxThroughput) must be a positive integer.");
        }

        offer.Replace(throughput, autoscale);
        return GatewayResponse.Json(200, offer.WriteTo);
    }

    private GatewayResponse CreateContainer(GatewayRequest request, DatabaseResource database)
    {
        using var body = request.ParseJsonObject();
        var root = body.RootElement;
        var id = RequireId(root);
        if (!root.TryGetProperty("partitionKey", out var partitionKey) || partitionKey.ValueKind != JsonValueKind.Object)
        {
            return GatewayResponse.BadRequest("A container needs a partitionKey definition; this emulator does not support non-partitioned containers.");
        }

        var definition = PartitionKeyDefinitionOf(partitionKey);
        var unsupported = UnsupportedContainerSetting(root);
        if (unsupported is not null)
        {
            return GatewayResponse.BadRequest(unsupported);
        }

        var properties = ContainerResource.EchoedProperties(JsonNode.Parse(root.GetRawText())!.AsObject());
        var (created, container) = store.CreateContainer(database, id, definition, properties, request.Throughput());
        var response = created ? GatewayResponse.Json(201, container.WriteTo) : GatewayResponse.Conflict();
        response.Container = container;
        return response;
    }

    private static GatewayResponse ReplaceContainer(GatewayRequest request, ContainerResource container)
    {
        using var body = request.ParseJsonObject();
        var root = body.RootElement;
        if (root.TryGetProperty("partitionKey", out var partitionKey) && partitionKey.ValueKind != JsonValueKind.Object)
        {
            return GatewayResponse.BadRequest("The container's partitionKey must be a JSON object with its paths.");
        }

        if (root.TryGetProperty("partitionKey", out partitionKey)
            && partitionKey.TryGetProperty("paths", out var paths) && paths.ValueKind == JsonValueKind.Array
            && !paths.EnumerateArray().Select(p => p.ValueKind == JsonValueKind.String ? p.GetString() : null).SequenceEqual(container.PartitionKey.Paths))
        {
            return GatewayResponse.BadRequest("The partition key of a container cannot be changed.");
        }

        var unsupported = UnsupportedContainerSetting(root);
        return unsupported is not null
            ? GatewayResponse.BadRequest(unsupported)
            : GatewayResponse.Json(200, container.WriteTo);
    }

    /// <summary>
    /// The container's partition key definition: kind Hash with one path (hash version 1 or 2, default
    /// 2), or kind MultiHash (hierarchical partition keys) with one to three paths and hash version 2.
    /// </summary>
    private static PartitionKeyDefinition PartitionKeyDefinitionOf(JsonElement partitionKey)
    {
        var kind = partitionKey.TryGetProperty("kind", out var k) && k.ValueKind == JsonValueKind.String ? k.GetString() : "Hash";
        var hierarchical = string.Equals(kind, "MultiHash", StringComparison.Ordinal);
        if (!hierarchical && !string.Equals(kind, "Hash", StringComparison.Ordinal))
        {
            throw new BadRequestException($"Partition key kind '{kind}' is not supported by this emulator; use Hash, or MultiHash for hierarchical partition keys.");
        }

        var maxPaths = hierarchical ? PartitionKeyDefinition.MaxHierarchicalPaths : 1;
        if (!partitionKey.TryGetProperty("paths", out var paths) || paths.ValueKind != JsonValueKind.Array
            || paths.GetArrayLength() is 0 || paths.GetArrayLength() > maxPaths
            || paths.EnumerateArray().Any(p => p.ValueKind != JsonValueKind.String || !CosmosEmulatorOptionsValidator.IsPartitionKeyPath(p.GetString())))
        {
            throw new BadRequestException(hierarchical
                ? $"partitionKey.paths of a MultiHash (hierarchical) partition key must hold one to {maxPaths} paths such as [\"/tenantId\", \"/userId\"]."
                : "partitionKey.paths must hold exactly one path such as \"/ownerId\" (several paths need kind MultiHash).");
        }

        var list = paths.EnumerateArray().Select(p => p.GetString()!).ToList();
        if (list.Distinct(StringComparer.Ordinal).Count() != list.Count)
        {
            throw new BadRequestException("partitionKey.paths must not name a path twice.");
        }

        var version = 2;
        if (partitionKey.TryGetProperty("version", out var v) && v.ValueKind == JsonValueKind.Number && (!v.TryGetInt32(out version) || version is not (1 or 2)))
        {
            throw new BadRequestException("partitionKey.version must be 1 or 2.");
        }

        if (hierarchical && version != 2)
        {
            throw new BadRequestException("Hierarchical (MultiHash) partition keys use hash version 2 (partitionKey.version).");
        }

        return new PartitionKeyDefinition(list, hierarchical, version);
    }

    // Settings whose behaviour the emulator does not model are refused rather than ignored.
    private static string? UnsupportedContainerSetting(JsonElement root)
    {
        if (root.TryGetProperty("defaultTtl", out var ttl) && ttl.ValueKind != JsonValueKind.Null)
        {
            return "defaultTtl (time to live) is not supported by this emulator: items would never expire.";
        }

        if (root.TryGetProperty("uniqueKeyPolicy", out var unique) && unique.ValueKind == JsonValueKind.Object
            && unique.TryGetProperty("uniqueKeys", out var keys) && keys.ValueKind == JsonValueKind.Array && keys.GetArrayLength() > 0)
        {
            return "uniqueKeyPolicy is not supported by this emulator: uniqueness would not be enforced.";
        }

        return null;
    }

    internal static string RequireId(JsonElement root)
    {
        if (!root.TryGetProperty("id", out var id) || id.ValueKind != JsonValueKind.String)
        {
            throw new BadRequestException("The input content is invalid because the required property 'id' is missing or not a string.");
        }

        var value = id.GetString()!;
        var error = CosmosEmulatorOptionsValidator.IdError(value);
        return error is null ? value : throw new BadRequestException($"The id '{value}' is invalid: it {error}.");
    }

    private static GatewayResponse Feed<T>(string name, string rid, IReadOnlyCollection<T> resources, Action<T, Utf8JsonWriter> write)
    {
        var response = GatewayResponse.Json(200, w =>
        {
            w.WriteStartObject();
            w.WriteString("_rid", rid);
            w.WriteStartArray(name);
            foreach (var resource in resources)
            {
                write(resource, w);
            }

            w.WriteEndArray();
            w.WriteNumber("_count", resources.Count);
            w.WriteEndObject();
        });
        response.Headers.Add(new(CosmosHeaders.ItemCount, resources.Count.ToString(CultureInfo.InvariantCulture)));
        return response;
    }

    // Metadata queries (the SDK reads throughput this way) run through the same query engine over
    // the resources' JSON.
    private static GatewayResponse QueryFeed<T>(GatewayRequest request, string name, string rid, IReadOnlyCollection<T> resources, Action<T, Utf8JsonWriter> write)
    {
        using var spec = QuerySpec.Parse(request);
        var documents = resources.Select((resource, i) =>
        {
            var buffer = new System.Buffers.ArrayBufferWriter<byte>();
            using (var writer = new Utf8JsonWriter(buffer))
            {
                write(resource, writer);
            }

            var json = buffer.WrittenSpan.ToArray();
            var root = JsonDocument.Parse(json).RootElement;
            return new StoredDocument
            {
                Id = root.TryGetProperty("id", out var id) ? id.GetString() ?? string.Empty : string.Empty,
                Epk = string.Empty,
                Sequence = i,
                Rid = root.TryGetProperty("_rid", out var r) ? r.GetString() ?? string.Empty : string.Empty,
                ETag = string.Empty,
                Timestamp = 0,
                Json = json,
                Root = root,
            };
        }).ToList();
        var page = QueryExecutor.ExecutePage(spec.Query, spec.Parameters, new PartitionSnapshot([.. documents]), default, int.MaxValue, null, null);
        var response = GatewayResponse.Json(200, w =>
        {
            w.WriteStartObject();
            w.WriteString("_rid", rid);
            w.WriteStartArray(name);
            foreach (var row in page.Rows)
            {
                row.WriteTo(w);
            }

            w.WriteEndArray();
            w.WriteNumber("_count", page.Rows.Count);
            w.WriteEndObject();
        });
        response.Headers.Add(new(CosmosHeaders.ItemCount, page.Rows.Count.ToString(CultureInfo.InvariantCulture)));
        return response;
    }

    internal static GatewayResponse MethodNotAllowed(GatewayRequest request) =>
        GatewayResponse.Error(405, "MethodNotAllowed", $"{request.Method} is not supported on this resource.");
}
