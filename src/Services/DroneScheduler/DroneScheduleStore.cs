using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Cosmos;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Options;

namespace DroneDelivery.DroneScheduler;

/// <summary>
/// Drone assignments and the utilization they bill, in Cosmos DB. Assigning is idempotent: the drone is
/// a function of the delivery id, the assignment is created once, and the utilization document is
/// upserted under the delivery id.
/// </summary>
public sealed class DroneScheduleStore
{
    private const int MaxOptimisticAttempts = 5;

    private readonly Container _drones;
    private readonly Container _utilization;
    private readonly UtilizationSettings _settings;
    private readonly int _fleetSize;

    public DroneScheduleStore(CosmosClient client, IOptions<CosmosSettings> cosmos, IOptions<UtilizationSettings> utilization, IOptions<DronesSettings> drones)
    {
        _settings = utilization.Value;
        _fleetSize = drones.Value.FleetSize;
        _drones = client.GetContainer(cosmos.Value.DatabaseId, drones.Value.ContainerId);
        _utilization = client.GetContainer(cosmos.Value.DatabaseId, _settings.ContainerId);
    }

    /// <summary>Assigns the delivery's drone and records its utilization; a repeat returns the same assignment.</summary>
    /// <param name="request">A validated request.</param>
    /// <returns>Whether the assignment was created by this call, and the assignment.</returns>
    public async Task<(bool Created, DroneAssignment Assignment)> AssignAsync(string deliveryId, DroneAssignmentRequest request, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(DroneSchedulerTelemetry.Operations.AssignDrone);
        GeoLocation.TryParse(request.PickupLocation, out var pickup);
        GeoLocation.TryParse(request.DropoffLocation, out var dropoff);
        var plan = FlightPlan.For(pickup, dropoff, request.Expedited ?? false);
        var period = BillingPeriod.Of(request.PickupTime!.Value);
        var assignment = new DroneAssignmentDocument(
            deliveryId,
            DroneFleet.DroneFor(deliveryId, _fleetSize),
            request.OwnerId!,
            request.PackageId!,
            request.PickupLocation!,
            request.DropoffLocation!,
            request.PickupTime.Value,
            request.Expedited ?? false,
            period.Year,
            period.Month,
            plan.Miles,
            plan.Hours);

        var created = await CreateOrReplaceAssignmentAsync(assignment, operation, cancellationToken).ConfigureAwait(false);

        // After the assignment, so that a failure here is repaired by the caller's retry.
        var utilization = UtilizationDocument.For(deliveryId, assignment.DroneId, assignment.OwnerId, period, plan);
        var upserted = await _utilization.UpsertItemAsync(utilization, utilization.PartitionKeyIn(_settings.PartitionKeyPath),
            new ItemRequestOptions { EnableContentResponseOnWrite = false }, cancellationToken).ConfigureAwait(false);
        operation.AddCharge(upserted.RequestCharge);
        return (created, assignment.ToAssignment());
    }

    public async Task<DroneAssignment?> GetAsync(string deliveryId, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(DroneSchedulerTelemetry.Operations.GetDroneAssignment);
        return (await ReadAssignmentAsync(deliveryId, operation, cancellationToken).ConfigureAwait(false))?.Document.ToAssignment();
    }

    /// <summary>Releases the delivery's drone and removes its utilization; false when it had none.</summary>
    public async Task<bool> ReleaseAsync(string deliveryId, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(DroneSchedulerTelemetry.Operations.ReleaseDrone);
        if (await ReadAssignmentAsync(deliveryId, operation, cancellationToken).ConfigureAwait(false) is not { } existing)
        {
            return false;
        }

        // Utilization first: if the second delete fails, a retry still finds the assignment.
        var document = existing.Document;
        var utilizationKey = _settings.PartitionKeyPath == UtilizationSettings.ByOwner ? new PartitionKey(document.OwnerId) : new PartitionKey(deliveryId);
        await DeleteIfExistsAsync(_utilization, deliveryId, utilizationKey, operation, cancellationToken).ConfigureAwait(false);
        await DeleteIfExistsAsync(_drones, deliveryId, new PartitionKey(deliveryId), operation, cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>
    /// The case study's GetDroneUtilization: every utilization document of the owner's month, summed. With
    /// the baseline settings the query fans out to every physical partition, one after the other.
    /// </summary>
    public async Task<DroneUtilization> GetUtilizationAsync(string ownerId, BillingPeriod period, CancellationToken cancellationToken)
    {
        using var operation = CosmosOperation.Start(DroneSchedulerTelemetry.Operations.GetDroneUtilization);
        var options = UtilizationQuery.Options(_settings, ownerId);
        operation.SetTag(DroneSchedulerTelemetry.MaxConcurrencyAttribute, options.MaxConcurrency);
        operation.SetTag(DroneSchedulerTelemetry.QueryPartitionKeyAttribute, options.PartitionKey is null ? "none" : ownerId);
        double miles = 0, hours = 0;
        var documents = 0;
        using var iterator = _utilization.GetItemQueryIterator<UtilizationDocument>(UtilizationQuery.Definition(ownerId, period), requestOptions: options);
        while (iterator.HasMoreResults)
        {
            var page = await iterator.ReadNextAsync(cancellationToken).ConfigureAwait(false);
            operation.AddCharge(page.RequestCharge);
            foreach (var document in page)
            {
                miles += document.TraveledMiles;
                hours += document.AssignedHours;
                documents++;
            }
        }

        operation.SetTag(DroneSchedulerTelemetry.DocumentCountAttribute, documents);
        return new DroneUtilization(ownerId, period.Year, period.Month, Math.Round(miles, 3), Math.Round(hours, 3));
    }

    private async Task<bool> CreateOrReplaceAssignmentAsync(DroneAssignmentDocument assignment, CosmosOperation operation, CancellationToken cancellationToken)
    {
        var key = new PartitionKey(assignment.Id);
        for (var attempt = 1; ; attempt++)
        {
            try
            {
                var created = await _drones.CreateItemAsync(assignment, key, new ItemRequestOptions { EnableContentResponseOnWrite = false }, cancellationToken).ConfigureAwait(false);
                operation.AddCharge(created.RequestCharge);
                return true;
            }
            catch (CosmosException e) when (e.StatusCode == HttpStatusCode.Conflict)
            {
                operation.AddCharge(e.RequestCharge);
            }

            if (await ReadAssignmentAsync(assignment.Id, operation, cancellationToken).ConfigureAwait(false) is not { } existing)
            {
                continue; // Released in between: assign afresh.
            }

            if (existing.Document.SameFlight(assignment))
            {
                return false;
            }

            // A rescheduled delivery: same drone, new flight.
            try
            {
                var replaced = await _drones.ReplaceItemAsync(assignment, assignment.Id, key,
                    new ItemRequestOptions { IfMatchEtag = existing.ETag, EnableContentResponseOnWrite = false }, cancellationToken).ConfigureAwait(false);
                operation.AddCharge(replaced.RequestCharge);
                return false;
            }
            catch (CosmosException e) when (e.StatusCode is HttpStatusCode.PreconditionFailed or HttpStatusCode.NotFound && attempt < MaxOptimisticAttempts)
            {
                operation.AddCharge(e.RequestCharge);
                if (e.StatusCode == HttpStatusCode.NotFound && !await _drones.IsMissingItemAsync(e, cancellationToken).ConfigureAwait(false))
                {
                    throw;
                }
            }
        }
    }

    private async Task<(DroneAssignmentDocument Document, string ETag)?> ReadAssignmentAsync(string deliveryId, CosmosOperation operation, CancellationToken cancellationToken)
    {
        try
        {
            var response = await _drones.ReadItemAsync<DroneAssignmentDocument>(deliveryId, new PartitionKey(deliveryId), cancellationToken: cancellationToken).ConfigureAwait(false);
            operation.AddCharge(response.RequestCharge);
            return (response.Resource, response.ETag);
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            operation.AddCharge(e.RequestCharge);
            if (!await _drones.IsMissingItemAsync(e, cancellationToken).ConfigureAwait(false))
            {
                throw;
            }

            return null;
        }
    }

    private static async Task DeleteIfExistsAsync(Container container, string id, PartitionKey key, CosmosOperation operation, CancellationToken cancellationToken)
    {
        try
        {
            var response = await container.DeleteItemAsync<object>(id, key, cancellationToken: cancellationToken).ConfigureAwait(false);
            operation.AddCharge(response.RequestCharge);
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            operation.AddCharge(e.RequestCharge);
            if (!await container.IsMissingItemAsync(e, cancellationToken).ConfigureAwait(false))
            {
                throw;
            }
        }
    }
}
