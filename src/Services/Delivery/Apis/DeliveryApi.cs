using DroneDelivery.Contracts;
using DroneDelivery.Contracts.Http;
using DroneDelivery.Delivery.Store;
using DroneDelivery.ServiceDefaults.Hosting;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.Delivery.Apis;

public static class DeliveryApi
{
    public static WebApplication MapDeliveryApi(this WebApplication app)
    {
        var api = app.MapGroup(string.Empty).WithTags("Deliveries")
            .ProducesProblem(StatusCodes.Status503ServiceUnavailable); // Redis unavailable or out of memory
        api.MapGet(Routes.Deliveries.Summary, GetSummaryAsync)
            .WithOperation("GetDeliverySummary", "Count of an owner's scheduled, not cancelled deliveries in a billing month.")
            .WithRequiredQuery("ownerId", "year", "month");
        api.MapPut(Routes.Deliveries.Item, PutAsync).WithOperation("PutDelivery", "Schedules a delivery; an identical repeat changes nothing.", StatusCodes.Status409Conflict);
        api.MapGet(Routes.Deliveries.Item, GetAsync).WithOperation("GetDelivery", "A delivery as scheduled, with its stage and drone.", StatusCodes.Status404NotFound);
        api.MapPatch(Routes.Deliveries.Item, RescheduleAsync).WithOperation("RescheduleDelivery", "Changes pickup/dropoff location or time, or the deadline.", StatusCodes.Status404NotFound, StatusCodes.Status409Conflict);
        api.MapDelete(Routes.Deliveries.Item, CancelAsync).WithOperation("CancelDelivery", "Cancels a delivery; it leaves the owner's monthly count. Answers the cancelled delivery.", StatusCodes.Status404NotFound);
        api.MapGet(Routes.Deliveries.Status, GetStatusAsync).WithOperation("GetDeliveryStatus", "A delivery's stage, times and drone.", StatusCodes.Status404NotFound);
        api.MapGet(Routes.Deliveries.Events, GetEventsAsync).WithOperation("GetDeliveryEvents", "A delivery's tracking events, oldest first.", StatusCodes.Status404NotFound);
        return app;
    }

    internal static Task<Results<Ok<DeliverySummary>, ValidationProblem>> GetSummaryAsync(
        string? ownerId, string? year, string? month, DeliveryStore store) =>
        Answers.BillingMonthAsync(ownerId, year, month, async (owner, period) =>
            new DeliverySummary(owner, period.Year, period.Month, await store.CountAsync(owner, period)));

    internal static async Task<Results<Created<DeliveryRecord>, Ok<DeliveryRecord>, ValidationProblem, ProblemHttpResult>> PutAsync(
        string id, DeliverySchedule? schedule, DeliveryStore store)
    {
        if (Problems.InvalidRequest("id", id, schedule, "delivery schedule", (body, e) => body.Validate(e)) is { } invalid)
        {
            return invalid;
        }

        var (result, delivery) = await store.PutAsync(id, schedule!);
        return result switch
        {
            PutResult.Created => TypedResults.Created("/" + Routes.Deliveries.ItemPath(id), delivery),
            PutResult.Cancelled => Problems.Conflict("Delivery cancelled", $"Delivery '{id}' was cancelled and cannot be scheduled again."),
            _ => TypedResults.Ok(delivery),
        };
    }

    internal static Task<Results<Ok<DeliveryRecord>, ValidationProblem, ProblemHttpResult>> GetAsync(string id, DeliveryStore store) =>
        Answers.FoundAsync("id", id, "Delivery", store.GetAsync);

    internal static async Task<Results<Ok<DeliveryRecord>, ValidationProblem, ProblemHttpResult>> RescheduleAsync(
        string id, RescheduleRequest? change, DeliveryStore store)
    {
        if (Problems.InvalidRequest("id", id, change, "body with the fields to change", (body, e) => body.Validate(e)) is { } invalid)
        {
            return invalid;
        }

        var (result, delivery) = await store.RescheduleAsync(id, change!);
        return result switch
        {
            ChangeResult.Changed => TypedResults.Ok(delivery!),
            ChangeResult.DeadlineNotAfterPickup => Problems.Invalid("deadline", "deadline must be later than pickupTime."),
            ChangeResult.Cancelled => Problems.Conflict("Delivery cancelled", $"Delivery '{id}' was cancelled and cannot be rescheduled."),
            _ => Problems.NotFound("Delivery", id),
        };
    }

    internal static Task<Results<Ok<DeliveryRecord>, ValidationProblem, ProblemHttpResult>> CancelAsync(string id, DeliveryStore store) =>
        Answers.FoundAsync("id", id, "Delivery", async _ =>
            await store.CancelAsync(id) is (ChangeResult.Changed, var delivery) ? delivery : null);

    internal static Task<Results<Ok<DeliveryStatus>, ValidationProblem, ProblemHttpResult>> GetStatusAsync(string id, DeliveryStore store) =>
        Answers.FoundAsync("id", id, "Delivery", async _ =>
            await store.GetAsync(id) is { } delivery
                ? new DeliveryStatus(delivery.DeliveryId, delivery.OwnerId, delivery.Stage, delivery.PickupTime, delivery.Deadline, delivery.DroneId, delivery.UpdatedAt)
                : null);

    internal static Task<Results<Ok<IReadOnlyList<TrackingEvent>>, ValidationProblem, ProblemHttpResult>> GetEventsAsync(string id, DeliveryStore store) =>
        Answers.FoundAsync("id", id, "Delivery", store.GetEventsAsync);
}
