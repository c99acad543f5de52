using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Cosmos;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Package;

/// <summary>What a <c>PUT</c> of a package did.</summary>
public enum PackagePutResult
{
    Created,

    /// <summary>The same package already existed (a redelivered message): nothing changed.</summary>
    Unchanged,

    /// <summary>The package existed for the same delivery with other values and was replaced.</summary>
    Replaced,

    /// <summary>The package id belongs to another delivery.</summary>
    Conflict,
}

/// <summary>What a delete of a package did.</summary>
public enum PackageDeleteResult
{
    Deleted,
    NotFound,
    BelongsToAnotherDelivery,
}

/// <summary>A package document; <c>id</c> is the package id and the partition key.</summary>
internal sealed record PackageDocument(string Id, string DeliveryId, string OwnerId, PackageSize Size, double Weight, string? Tag, int Year, int Month)
{
    public PackageRecord ToRecord() => new(Id, DeliveryId, OwnerId, Size, Weight, Tag, Year, Month);
}

/// <summary>Packages in the Cosmos DB container <c>Packages:ContainerId</c>, partitioned by <c>/id</c>.</summary>
public sealed class PackageStore(CosmosClient client, IOptions<CosmosSettings> cosmos, IOptions<PackagesSettings> packages)
{
    public const string PartitionKeyPath = "/id";

    private const int MaxOptimisticAttempts = 5;

    /// <summary>
    /// Both aggregates in one query: one query plan and one page per partition instead of two of each (about 3.2 RU
    /// an invoice where two queries took 6.3, and half the client's and the gateway's work).
    /// </summary>
    private const string SummaryQuery = "SELECT COUNT(1) AS packages, SUM(c.weight) AS weight FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month";

    private readonly Container _container = client.GetContainer(cosmos.Value.DatabaseId, packages.Value.ContainerId);

    /// <summary>Creates the package, or leaves an identical one, or replaces the same delivery's package with new values.</summary>
    /// <param name="upsert">A validated body.</param>
    public async Task<(PackagePutResult Result, PackageRecord Package)> PutAsync(string id, PackageUpsert upsert, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(PackageTelemetry.Operations.PutPackage);
        var document = new PackageDocument(id, upsert.DeliveryId!, upsert.OwnerId!, upsert.Size!.Value, upsert.Weight!.Value, upsert.Tag, upsert.Year!.Value, upsert.Month!.Value);
        var partitionKey = new PartitionKey(id);
        for (var attempt = 1; ; attempt++)
        {
            try
            {
                var created = await _container.CreateItemAsync(document, partitionKey, cancellationToken: cancellationToken).ConfigureAwait(false);
                operation.AddCharge(created.RequestCharge);
                return (PackagePutResult.Created, document.ToRecord());
            }
            catch (CosmosException e) when (e.StatusCode == HttpStatusCode.Conflict)
            {
                operation.AddCharge(e.RequestCharge);
            }

            var existing = await ReadAsync(id, operation, cancellationToken).ConfigureAwait(false);
            if (existing is null)
            {
                continue; // Deleted in between: create it again.
            }

            if (existing.Value.Document.DeliveryId != document.DeliveryId)
            {
                return (PackagePutResult.Conflict, existing.Value.Document.ToRecord());
            }

            if (existing.Value.Document == document)
            {
                return (PackagePutResult.Unchanged, document.ToRecord());
            }

            try
            {
                var replaced = await _container.ReplaceItemAsync(document, id, partitionKey,
                    new ItemRequestOptions { IfMatchEtag = existing.Value.ETag }, cancellationToken).ConfigureAwait(false);
                operation.AddCharge(replaced.RequestCharge);
                return (PackagePutResult.Replaced, document.ToRecord());
            }
            catch (CosmosException e) when (e.StatusCode is HttpStatusCode.PreconditionFailed or HttpStatusCode.NotFound && attempt < MaxOptimisticAttempts)
            {
                operation.AddCharge(e.RequestCharge);
                if (e.StatusCode == HttpStatusCode.NotFound && !await _container.IsMissingItemAsync(e, cancellationToken).ConfigureAwait(false))
                {
                    throw;
                }
            }
        }
    }

    public async Task<PackageRecord?> GetAsync(string id, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(PackageTelemetry.Operations.GetPackage);
        return (await ReadAsync(id, operation, cancellationToken).ConfigureAwait(false))?.Document.ToRecord();
    }

    /// <summary>
    /// Deletes the package. With <paramref name="deliveryId"/>, only if the package belongs to that
    /// delivery — so that undoing a delivery never removes another delivery's package.
    /// </summary>
    public async Task<PackageDeleteResult> DeleteAsync(string id, string? deliveryId, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(PackageTelemetry.Operations.DeletePackage);
        var options = new ItemRequestOptions();
        if (deliveryId is not null)
        {
            if (await ReadAsync(id, operation, cancellationToken).ConfigureAwait(false) is not { } existing)
            {
                return PackageDeleteResult.NotFound;
            }

            if (existing.Document.DeliveryId != deliveryId)
            {
                return PackageDeleteResult.BelongsToAnotherDelivery;
            }

            options.IfMatchEtag = existing.ETag;
        }

        try
        {
            var response = await _container.DeleteItemAsync<PackageDocument>(id, new PartitionKey(id), options, cancellationToken).ConfigureAwait(false);
            operation.AddCharge(response.RequestCharge);
            return PackageDeleteResult.Deleted;
        }
        catch (CosmosException e) when (e.StatusCode is HttpStatusCode.NotFound or HttpStatusCode.PreconditionFailed)
        {
            // Precondition failed: replaced meanwhile, by the same delivery (a package never changes delivery).
            operation.AddCharge(e.RequestCharge);
            if (e.StatusCode == HttpStatusCode.NotFound && !await _container.IsMissingItemAsync(e, cancellationToken).ConfigureAwait(false))
            {
                throw;
            }

            return e.StatusCode == HttpStatusCode.NotFound
                ? PackageDeleteResult.NotFound
                : await DeleteAsync(id, deliveryId, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Count and total weight of an owner's packages in a billing month, from one aggregate query over every partition.</summary>
    public async Task<PackageSummary> GetSummaryAsync(string ownerId, BillingPeriod period, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(PackageTelemetry.Operations.GetPackageSummary);
        var definition = new QueryDefinition(SummaryQuery)
            .WithParameter("@ownerId", ownerId)
            .WithParameter("@year", period.Year)
            .WithParameter("@month", period.Month);
        using var iterator = _container.GetItemQueryIterator<SummaryRow>(definition, requestOptions: new QueryRequestOptions { MaxConcurrency = -1 });
        var summary = new SummaryRow(0, 0);
        while (iterator.HasMoreResults)
        {
            var page = await iterator.ReadNextAsync(cancellationToken).ConfigureAwait(false);
            operation.AddCharge(page.RequestCharge);
            foreach (var row in page)
            {
                summary = row;
            }
        }

        // No document: COUNT is 0 and SUM undefined, so the row may lack the weight (or the service return no row).
        return new PackageSummary(ownerId, period.Year, period.Month, summary.Packages ?? 0, Math.Round(summary.Weight ?? 0, 6));
    }

    private async Task<(PackageDocument Document, string ETag)?> ReadAsync(string id, CosmosOperation operation, CancellationToken cancellationToken)
    {
        try
        {
            var response = await _container.ReadItemAsync<PackageDocument>(id, new PartitionKey(id), cancellationToken: cancellationToken).ConfigureAwait(false);
            operation.AddCharge(response.RequestCharge);
            return (response.Resource, response.ETag);
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            operation.AddCharge(e.RequestCharge);
            if (!await _container.IsMissingItemAsync(e, cancellationToken).ConfigureAwait(false))
            {
                throw;
            }

            return null;
        }
    }

    /// <summary>The summary query's one row; a property is absent when its aggregate is undefined.</summary>
    private sealed record SummaryRow(long? Packages, double? Weight);
}
