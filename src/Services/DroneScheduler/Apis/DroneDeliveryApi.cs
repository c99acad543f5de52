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
        api.MapGet(Routes.DroneDeliveries.Utilization, GetUtilizationAsync)
            .WithOperation(
                DroneSchedulerTelemetry.Operations.GetDroneUtilization,
                "Miles flown and hours assigned for an owner's deliveries in a billing month (the case study's query).")
            .WithRequiredQuery("ownerId", "year", "month");
        api.MapPut(Routes.DroneDeliveries.Item, AssignAsync).WithOperation("AssignDrone", "Assigns a drone to a delivery and records its utilization; a repeat returns the same drone.");
        api.MapGet(Routes.DroneDeliveries.Item, GetAsync).WithOperation("GetDroneAssignment", "The drone assigned to a delivery.", StatusCodes.Status404NotFound);
        api.MapDelete(Routes.DroneDeliveries.Item, ReleaseAsync).WithOperation("ReleaseDrone", "Releases the delivery's drone and removes its utilization.", StatusCodes.Status404NotFound);
        return app;
    }

    internal static Task<Results<Ok<DroneUtilization>, ValidationProblem>> GetUtilizationAsync(
        string? ownerId, string? year, string? month, DroneScheduleStore store, CancellationToken cancellationToken) =>
        Answers.BillingMonthAsync(ownerId, year, month, (owner, period) => store.GetUtilizationAsync(owner, period, cancellationToken));

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

    internal static Task<Results<Ok<DroneAssignment>, ValidationProblem, ProblemHttpResult>> GetAsync(
        string deliveryId, DroneScheduleStore store, CancellationToken cancellationToken) =>
        Answers.FoundAsync("deliveryId", deliveryId, "Drone assignment", _ => store.GetAsync(deliveryId, cancellationToken));

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
