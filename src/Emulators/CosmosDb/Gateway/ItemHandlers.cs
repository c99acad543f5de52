using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>Point operations on items: create, upsert, read, replace, delete and patch.</summary>
internal static class ItemHandlers
{
    public static GatewayResponse Create(GatewayRequest request, ContainerResource container)
    {
        if (request.HeaderIsTrue(CosmosHeaders.IsBatchRequest))
        {
            return BatchHandlers.Execute(request, container);
        }

        var upsert = request.HeaderIsTrue(CosmosHeaders.IsUpsert);
        var operation = upsert ? CosmosEmulatorOperations.UpsertItem : CosmosEmulatorOperations.CreateItem;
        if (UnsupportedIndexingDirective(request.Header(CosmosHeaders.IndexingDirective)) is { } directive)
        {
            return GatewayResponse.BadRequest(directive).Named(operation);
        }

        using var body = request.ParseJsonObject();
        var root = body.RootElement;
        var id = MetadataHandlers.RequireId(root);
        var (partition, epk) = Locate(request, container, root);
        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var (status, stored) = partition.Write(
            new DocumentKey(epk, id),
            upsert ? WriteMode.Upsert : WriteMode.Create,
            upsert ? request.Header(CosmosHeaders.IfMatch) : null,
            existing => DocumentBuilder.Build(container, root, id, epk, existing),
            request.Header(CosmosHeaders.IfNoneMatch));
        return Written(request, container, partition, status, stored, operation);
    }

    public static GatewayResponse Read(GatewayRequest request, ContainerResource container, string id)
    {
        const string operation = CosmosEmulatorOperations.ReadItem;
        var (partition, epk) = Locate(request, container, null);
        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var stored = partition.Read(new DocumentKey(epk, id));
        if (stored is null)
        {
            return GatewayResponse.NotFound("Entity with the specified id does not exist in the system.")
                .Named(operation).Charge(container, partition, container.Charges.PointReadPerKilobyte, 0);
        }

        var charge = container.Charges.PointReadPerKilobyte * DataPlane.Kilobytes(stored.Json.Length);
        var response = request.Header(CosmosHeaders.IfNoneMatch) is { } ifNoneMatch && PhysicalPartition.ETagMatches(ifNoneMatch, stored.ETag)
            ? GatewayResponse.Empty(304)
            : GatewayResponse.Raw(200, stored.Json);
        return response.WithHeader(CosmosHeaders.ETag, stored.ETag).Named(operation).Charge(container, partition, charge, 1);
    }

    public static GatewayResponse Replace(GatewayRequest request, ContainerResource container, string id)
    {
        const string operation = CosmosEmulatorOperations.ReplaceItem;
        if (UnsupportedIndexingDirective(request.Header(CosmosHeaders.IndexingDirective)) is { } directive)
        {
            return GatewayResponse.BadRequest(directive).Named(operation);
        }

        using var body = request.ParseJsonObject();
        var root = body.RootElement;
        var bodyId = MetadataHandlers.RequireId(root);
        if (!string.Equals(bodyId, id, StringComparison.Ordinal))
        {
            return GatewayResponse.BadRequest($"The id in the body ('{bodyId}') does not match the id in the address ('{id}').");
        }

        var (partition, epk) = Locate(request, container, root);
        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var (status, stored) = partition.Write(
            new DocumentKey(epk, id),
            WriteMode.Replace,
            request.Header(CosmosHeaders.IfMatch),
            existing => DocumentBuilder.Build(container, root, id, epk, existing),
            request.Header(CosmosHeaders.IfNoneMatch));
        return Written(request, container, partition, status, stored, operation);
    }

    public static GatewayResponse Delete(GatewayRequest request, ContainerResource container, string id)
    {
        const string operation = CosmosEmulatorOperations.DeleteItem;
        var (partition, epk) = Locate(request, container, null);
        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        var (status, stored) = partition.Delete(new DocumentKey(epk, id), request.Header(CosmosHeaders.IfMatch), request.Header(CosmosHeaders.IfNoneMatch));
        var response = status switch
        {
            WriteStatus.Deleted => GatewayResponse.Empty(204),
            WriteStatus.PreconditionFailed => GatewayResponse.PreconditionFailed(),
            _ => GatewayResponse.NotFound("Entity with the specified id does not exist in the system."),
        };
        return status == WriteStatus.Deleted
            ? response.Named(operation).Charge(container, partition, container.Charges.WritePerKilobyte * DataPlane.Kilobytes(stored!.Json.Length), 1)
            : response.Named(operation).Charge(container, partition, container.Charges.PointReadPerKilobyte, 0);
    }

    public static GatewayResponse Patch(GatewayRequest request, ContainerResource container, string id)
    {
        const string operation = CosmosEmulatorOperations.PatchItem;
        // The .NET SDK sends {"operations": [...], "condition": ...}; the JavaScript SDK sends a bare array
        // of operations unless a condition is given.
        using var body = request.ParseJson(allowArray: true);
        var patch = ItemPatch.Parse(body.RootElement);
        var (partition, epk) = Locate(request, container, null);
        if (DataPlane.Admit(container, partition, operation) is { } throttled)
        {
            return throttled;
        }

        try
        {
            var (status, stored) = partition.Write(
                new DocumentKey(epk, id),
                WriteMode.Replace,
                request.Header(CosmosHeaders.IfMatch),
                existing =>
                {
                    var patched = patch.Apply(existing!);
                    var patchedKey = container.PartitionKeyOf(patched.RootElement);
                    if (container.EffectivePartitionKeyOf(patchedKey) != epk)
                    {
                        throw new BadRequestException("A patch cannot change the partition key of an item.");
                    }

                    return DocumentBuilder.Build(container, patched.RootElement, id, epk, existing);
                },
                request.Header(CosmosHeaders.IfNoneMatch));
            return Written(request, container, partition, status, stored, operation);
        }
        catch (ItemPatch.ConditionNotMetException)
        {
            return GatewayResponse.PreconditionFailed().Named(operation).Charge(container, partition, container.Charges.PointReadPerKilobyte, 0);
        }
    }

    /// <summary>
    /// The partition of the request's partition key, checked against the item when there is one: a
    /// key with fewer components than the container's paths (a prefix of a hierarchical key) is 400
    /// with sub-status 1001, and so is a header that disagrees with the item, as in the service.
    /// </summary>
    private static (PhysicalPartition Partition, string Epk) Locate(GatewayRequest request, ContainerResource container, JsonElement? item)
    {
        var header = request.PartitionKey()
            ?? throw new BadRequestException("PartitionKey value must be supplied for this operation (x-ms-documentdb-partitionkey).");
        var epk = container.EffectivePartitionKeyOf(header);
        if (item is { } document)
        {
            var fromItem = container.PartitionKeyOf(document);
            if (!fromItem.Equals(header))
            {
                throw new BadRequestException(
                    $"PartitionKey extracted from document doesn't match the one specified in the header: the item has {fromItem} at {container.PartitionKey}, the header says {header}.",
                    SubStatusCodes.PartitionKeyMismatch);
            }
        }

        return (container.PartitionFor(epk), epk);
    }

    /// <summary>
    /// Null when the indexing directive (<c>Default</c>, <c>Include</c>, <c>Exclude</c>) is one the
    /// emulator models, otherwise why not: every item is indexed, so an item written with
    /// <c>Exclude</c> would be returned by queries the service leaves it out of.
    /// </summary>
    internal static string? UnsupportedIndexingDirective(string? directive) =>
        directive is null || directive.Equals("Default", StringComparison.OrdinalIgnoreCase) || directive.Equals("Include", StringComparison.OrdinalIgnoreCase)
            ? null
            : $"The indexing directive '{directive}' is not supported by this emulator: every item is indexed (Default or Include).";

    private static GatewayResponse Written(
        GatewayRequest request,
        ContainerResource container,
        PhysicalPartition partition,
        WriteStatus status,
        StoredDocument? stored,
        string operation)
    {
        switch (status)
        {
            case WriteStatus.Created:
            case WriteStatus.Replaced:
                var minimal = request.Header(CosmosHeaders.Prefer)?.Contains("return=minimal", StringComparison.OrdinalIgnoreCase) == true;
                var code = status == WriteStatus.Created ? 201 : 200;
                var response = minimal ? GatewayResponse.Empty(code) : GatewayResponse.Raw(code, stored!.Json);
                var charge = container.Charges.WritePerKilobyte * DataPlane.Kilobytes(stored!.Json.Length);
                return response.WithHeader(CosmosHeaders.ETag, stored.ETag).Named(operation).Charge(container, partition, charge, 1);
            default:
                var error = status switch
                {
                    WriteStatus.Conflict => GatewayResponse.Conflict(),
                    WriteStatus.PreconditionFailed => GatewayResponse.PreconditionFailed(),
                    _ => GatewayResponse.NotFound("Entity with the specified id does not exist in the system."),
                };
                return error.Named(operation).Charge(container, partition, container.Charges.PointReadPerKilobyte, 0);
        }
    }
}
