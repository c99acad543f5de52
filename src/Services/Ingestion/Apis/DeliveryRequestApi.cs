using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.Contracts.Http;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.ServiceDefaults.Hosting;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Ingestion.Apis;

public static partial class DeliveryRequestApi
{
    public static WebApplication MapDeliveryRequestApi(this WebApplication app)
    {
        var api = app.MapGroup(string.Empty).WithTags("DeliveryRequests")
            .RequirePermission(Permission.WriteDeliveries)
            .ProducesProblem(StatusCodes.Status503ServiceUnavailable); // at capacity, or the send failed
        api.MapPost(Routes.DeliveryRequests.Collection, PostAsync)
            .WithOperation("RequestDelivery", "Validates a delivery request for the caller's own owner id, assigns its id and queues it; 202 once it is on the queue.")
            .RequireOwner(Permission.WriteDeliveries, context => context.Arguments.OfType<DeliveryRequest>().FirstOrDefault()?.OwnerId is { } owner && Identifiers.IsValid(owner) ? owner : null);
        api.MapDelete(Routes.DeliveryRequests.Item, CancelAsync)
            .WithOperation("CancelDeliveryRequest", "Queues the cancellation of one of the caller's deliveries.", StatusCodes.Status404NotFound)
            .AddEndpointFilter<DeliveryOwnerCheck>();
        api.MapPatch(Routes.DeliveryRequests.Item, RescheduleAsync)
            .WithOperation("RescheduleDeliveryRequest", "Queues a change of one of the caller's deliveries: its locations, pickup time or deadline.", StatusCodes.Status404NotFound)
            .AddEndpointFilter<DeliveryOwnerCheck>();
        return app;
    }

    internal static async Task<Results<Accepted<DeliveryRequestAccepted>, ValidationProblem, ProblemHttpResult>> PostAsync(
        DeliveryRequest? request, BatchingSender sender, IOptions<IngestionSettings> settings, HttpContext http, ILoggerFactory logs, CancellationToken cancellationToken)
    {
        var errors = new FieldErrors();
        if (request is null)
        {
            errors.Add("body", "A JSON delivery request is required.");
            return Problems.Invalid(errors);
        }

        if (request.Validate(errors) is not { } valid)
        {
            return Problems.Invalid(errors);
        }

        var deliveryId = Identifiers.NewDeliveryId();
        return await EnqueueAsync(DeliveryMessages.Delivery, DeliveryRequestMessages.Delivery(deliveryId, valid), deliveryId, sender, settings.Value, http, logs, cancellationToken);
    }

    internal static async Task<Results<Accepted<DeliveryRequestAccepted>, ValidationProblem, ProblemHttpResult>> CancelAsync(
        string id, BatchingSender sender, IOptions<IngestionSettings> settings, HttpContext http, ILoggerFactory logs, CancellationToken cancellationToken)
    {
        if (Problems.InvalidIdentifier("id", id) is { } invalid)
        {
            return invalid;
        }

        return await EnqueueAsync(DeliveryMessages.Cancel, DeliveryRequestMessages.Cancel(id), id, sender, settings.Value, http, logs, cancellationToken);
    }

    internal static async Task<Results<Accepted<DeliveryRequestAccepted>, ValidationProblem, ProblemHttpResult>> RescheduleAsync(
        string id, RescheduleRequest? change, BatchingSender sender, IOptions<IngestionSettings> settings, HttpContext http, ILoggerFactory logs, CancellationToken cancellationToken)
    {
        if (Problems.InvalidRequest("id", id, change, "body with the fields to change", (body, e) => body.Validate(e)) is { } invalid)
        {
            return invalid;
        }

        return await EnqueueAsync(DeliveryMessages.Reschedule, DeliveryRequestMessages.Reschedule(id, change!), id, sender, settings.Value, http, logs, cancellationToken);
    }

    /// <summary>
    /// Waits until the message is on the queue: 202 with the delivery's status as <c>Location</c>; 503
    /// when the buffer is full (with Retry-After) or the send failed — never a 202 for a message that
    /// might not be on the queue.
    /// </summary>
    private static async Task<Results<Accepted<DeliveryRequestAccepted>, ValidationProblem, ProblemHttpResult>> EnqueueAsync(
        string operation, ServiceBusMessage message, string deliveryId, BatchingSender sender, IngestionSettings settings, HttpContext http, ILoggerFactory logs, CancellationToken cancellationToken)
    {
        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        var operationTag = new KeyValuePair<string, object?>("operation", operation);
        try
        {
            await sender.SendAsync(message, cancellationToken);
        }
        catch (BufferFullException e)
        {
            IngestionTelemetry.Refused.Add(1, operationTag, new KeyValuePair<string, object?>("reason", "buffer_full"));
            http.Response.Headers.RetryAfter = "1";
            return TypedResults.Problem(
                statusCode: StatusCodes.Status503ServiceUnavailable,
                title: "Ingestion is at capacity",
                detail: e.Message + " Retry shortly.");
        }
        catch (Exception e) when (e is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
        {
            IngestionTelemetry.Refused.Add(1, operationTag, new KeyValuePair<string, object?>("reason", "send_failed"));
            LogNotQueued(logs.CreateLogger(typeof(DeliveryRequestApi).FullName!), operation, deliveryId, e.Message);
            var reason = e is ServiceBusException sb ? $"{sb.Reason}: {sb.Message}" : e.Message;
            return TypedResults.Problem(
                statusCode: StatusCodes.Status503ServiceUnavailable,
                title: "The request could not be queued",
                detail: reason);
        }

        IngestionTelemetry.EnqueueDurations.Record(System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalSeconds, operationTag);
        IngestionTelemetry.Accepted.Add(1, operationTag);
        var status = Routes.Deliveries.StatusPath(deliveryId);
        var location = settings.DeliveryStatusBaseAddress is { } address
            ? new Uri(new Uri(address.AbsoluteUri.TrimEnd('/') + "/"), status.TrimStart('/')).AbsoluteUri
            : status;
        return TypedResults.Accepted(location, new DeliveryRequestAccepted(deliveryId));
    }

    [LoggerMessage(EventId = 4301, EventName = "RequestNotQueued", Level = LogLevel.Warning, Message = "{Operation} request for delivery {DeliveryId} was not queued: {Reason}")]
    private static partial void LogNotQueued(ILogger logger, string operation, string deliveryId, string reason);
}
