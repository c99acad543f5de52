using System.Diagnostics;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Backends;

namespace DroneDelivery.Workflow;

/// <summary>The backend calls of the workflow's steps and compensations, each timed by backend, step and outcome.</summary>
public sealed class WorkflowBackends(IHttpClientFactory clients)
{
    public Task<BackendResult<PackageRecord>> CreatePackageAsync(string deliveryId, ValidDeliveryRequest request, CancellationToken cancellationToken) =>
        CallAsync<PackageRecord>(BackendNames.Package, "CreatePackage", HttpMethod.Put, Routes.Packages.ItemPath(request.PackageId), new PackageUpsert
        {
            DeliveryId = deliveryId,
            OwnerId = request.OwnerId,
            Size = request.PackageSize,
            Weight = request.PackageWeight,
            Tag = request.PackageTag,
            Year = request.Period.Year,
            Month = request.Period.Month,
        }, cancellationToken);

    /// <summary>Deletes the package only if it belongs to <paramref name="deliveryId"/> (409 otherwise).</summary>
    public Task<BackendResult<NoContent>> DeletePackageAsync(string packageId, string deliveryId, CancellationToken cancellationToken) =>
        CallAsync<NoContent>(BackendNames.Package, "DeletePackage", HttpMethod.Delete, Routes.Packages.ItemPath(packageId, deliveryId), null, cancellationToken);

    public Task<BackendResult<DroneAssignment>> AssignDroneAsync(string deliveryId, DroneAssignmentRequest request, CancellationToken cancellationToken) =>
        CallAsync<DroneAssignment>(BackendNames.DroneScheduler, "AssignDrone", HttpMethod.Put, Routes.DroneDeliveries.ItemPath(deliveryId), request, cancellationToken);

    public Task<BackendResult<NoContent>> ReleaseDroneAsync(string deliveryId, CancellationToken cancellationToken) =>
        CallAsync<NoContent>(BackendNames.DroneScheduler, "ReleaseDrone", HttpMethod.Delete, Routes.DroneDeliveries.ItemPath(deliveryId), null, cancellationToken);

    public Task<BackendResult<DeliveryRecord>> ScheduleDeliveryAsync(string deliveryId, DeliverySchedule schedule, CancellationToken cancellationToken) =>
        CallAsync<DeliveryRecord>(BackendNames.Delivery, "ScheduleDelivery", HttpMethod.Put, Routes.Deliveries.ItemPath(deliveryId), schedule, cancellationToken);

    public Task<BackendResult<DeliveryRecord>> GetDeliveryAsync(string deliveryId, CancellationToken cancellationToken) =>
        CallAsync<DeliveryRecord>(BackendNames.Delivery, "GetDelivery", HttpMethod.Get, Routes.Deliveries.ItemPath(deliveryId), null, cancellationToken);

    public Task<BackendResult<DeliveryRecord>> RescheduleDeliveryAsync(string deliveryId, RescheduleRequest change, CancellationToken cancellationToken) =>
        CallAsync<DeliveryRecord>(BackendNames.Delivery, "RescheduleDelivery", HttpMethod.Patch, Routes.Deliveries.ItemPath(deliveryId), change, cancellationToken);

    public Task<BackendResult<DeliveryRecord>> CancelDeliveryAsync(string deliveryId, CancellationToken cancellationToken) =>
        CallAsync<DeliveryRecord>(BackendNames.Delivery, "CancelDelivery", HttpMethod.Delete, Routes.Deliveries.ItemPath(deliveryId), null, cancellationToken);

    private async Task<BackendResult<T>> CallAsync<T>(string backend, string step, HttpMethod method, string path, object? body, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        var result = await BackendCall.SendAsync<T>(clients.CreateClient(backend), backend, method, path, body, cancellationToken).ConfigureAwait(false);
        if (result.Succeeded && result.Value is null && typeof(T) != typeof(NoContent))
        {
            result = result with { Outcome = BackendOutcome.Failed, Detail = "empty response body" };
        }

        WorkflowTelemetry.BackendDurations.Record(
            Stopwatch.GetElapsedTime(started).TotalSeconds,
            new KeyValuePair<string, object?>("backend", backend),
            new KeyValuePair<string, object?>("step", step),
            new KeyValuePair<string, object?>("outcome", result.Outcome.ToString().ToLowerInvariant()));
        return result;
    }
}
