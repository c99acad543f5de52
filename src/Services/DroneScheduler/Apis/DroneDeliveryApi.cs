using DroneDelivery.Contracts;
using DroneDelivery.Contracts.Http;
using DroneDelivery.ServiceDefaults.Hosting;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.DroneScheduler.Apis;

public static class DroneDeliveryApi
{
    public static WebApplication MapDroneDeliveryApi(this WebApplication app)
    {
        var api = app.MapGroup(string.Empty).WithTags("DroneDeliveries");
        api.MapGet(Routes.DroneDeliveries.Utilization, GetUtilizationAsync).WithName(DroneSchedulerTelemetry.Operations.GetDroneUtilization)
            .WithSummary("Miles flown and hours assigned for an owner's deliveries in a billing month (the case study's query).")
            .WithRequiredQuery("ownerId", "year", "month");
        api.MapPut(Routes.DroneDeliveries.Item, AssignAsync).WithName("AssignDrone")
            .WithSummary("Assigns a drone to a delivery and records its utilization; a repeat returns the same drone.");
        api.MapGet(Routes.DroneDeliveries.Item, GetAsync).WithName("GetDroneAssignment")
            .WithSummary("The drone assigned to a delivery.")
            .ProducesProblem(StatusCodes.Status404NotFound);
        api.MapDelete(Routes.DroneDeliveries.Item, ReleaseAsync).WithName("ReleaseDrone")
            .WithSummary("Releases the delivery's drone and removes its utilization.")
            .ProducesProblem(StatusCodes.Status404NotFound);
        return app;
    }

    internal static async Task<Results<Ok<DroneUtilization>, ValidationProblem>> GetUtilizationAsync(
        string? ownerId, string? year, string? month, DroneScheduleStore store, CancellationToken cancellationToken)
    {
        if (Problems.InvalidBillingQuery(ownerId, year, month, out var period) is { } invalid)
        {
            return invalid;
        }

        return TypedResults.Ok(await store.GetUtilizationAsync(ownerId!, period, cancellationToken));
    }

    internal static async Task<Results<Created<DroneAssignment>, Ok<DroneAssignment>, ValidationProblem>> AssignAsync(
        string deliveryId, DroneAssignmentRequest? request, DroneScheduleStore store, CancellationToken cancellationToken)
    {
        if (Problems.InvalidRequest("deliveryId", deliveryId, request, "drone assignment request", (body, e) => body.Validate(e)) is { } invalid)
        {
            return invalid;
        }

        var (created, assignment) = await store.AssignAsync(deliveryId, request!, cancellationToken);
        return created
            ? TypedResults.Created("/" + Routes.DroneDeliveries.ItemPath(deliveryId), assignment)
            : TypedResults.Ok(assignment);
    }

    internal static async Task<Results<Ok<DroneAssignment>, ValidationProblem, ProblemHttpResult>> GetAsync(
        string deliveryId, DroneScheduleStore store, CancellationToken cancellationToken)
    {
        if (Problems.InvalidIdentifier("deliveryId", deliveryId) is { } invalid)
        {
            return invalid;
        }

        return await store.GetAsync(deliveryId, cancellationToken) is { } assignment
            ? TypedResults.Ok(assignment)
            : Problems.NotFound("Drone assignment", deliveryId);
    }

    internal static async Task<Results<NoContent, ValidationProblem, ProblemHttpResult>> ReleaseAsync(
        string deliveryId, DroneScheduleStore store, CancellationToken cancellationToken)
    {
        if (Problems.InvalidIdentifier("deliveryId", deliveryId) is { } invalid)
        {
            return invalid;
        }

        return await store.ReleaseAsync(deliveryId, cancellationToken) ? TypedResults.NoContent() : Problems.NotFound("Drone assignment", deliveryId);
    }
}
