using System.Security.Claims;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.Contracts.Http;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.ServiceDefaults.Hosting;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.Gateway.Apis;

/// <summary>
/// The public route of a delivery's status — where Ingestion's 202 <c>Location</c> points. Delivery is
/// internal, so the gateway answers it: it authenticates the caller, asks Delivery for the status and
/// answers only the delivery's owner (or an application with the role).
/// </summary>
public static class DeliveryStatusApi
{
    public static WebApplication MapDeliveryStatusApi(this WebApplication app)
    {
        app.MapGet(Routes.Deliveries.Status, GetStatusAsync)
            .WithTags("Deliveries")
            .RequirePermission(Permission.ReadDeliveries)
            .WithOperation(
                "GetDeliveryStatus",
                "A delivery's status, for its owner: 404 until Workflow has scheduled it.",
                StatusCodes.Status404NotFound, StatusCodes.Status502BadGateway, StatusCodes.Status504GatewayTimeout);
        return app;
    }

    /// <summary>
    /// 200 the status; 400 a bad id; 404 when Delivery does not know it — and, the same answer, when it is
    /// another owner's, so that a delivery id reveals nothing to whoever does not own it; 504/502 when
    /// Delivery timed out or failed.
    /// </summary>
    internal static async Task<Results<Ok<DeliveryStatus>, ValidationProblem, ProblemHttpResult>> GetStatusAsync(
        string id, ClaimsPrincipal user, EdgeAccess access, IHttpClientFactory clients, CancellationToken cancellationToken)
    {
        if (Problems.InvalidIdentifier("id", id) is { } invalid)
        {
            return invalid;
        }

        var result = await BackendCall.SendAsync<DeliveryStatus>(
            clients.CreateClient(BackendNames.Delivery), BackendNames.Delivery, HttpMethod.Get, Routes.Deliveries.StatusItemPath(id), null, cancellationToken);
        switch (result.Outcome)
        {
            case BackendOutcome.Succeeded when result.Value is { } status:
                return access.MayActFor(user, Permission.ReadDeliveries, status.OwnerId) ? TypedResults.Ok(status) : Problems.NotFound("Delivery", id);
            case BackendOutcome.NotFound:
                return Problems.NotFound("Delivery", id);
            default:
                return TypedResults.Problem(
                    statusCode: result.Outcome == BackendOutcome.TimedOut ? StatusCodes.Status504GatewayTimeout : StatusCodes.Status502BadGateway,
                    title: "The delivery's status could not be read",
                    detail: result.Value is null && result.Succeeded ? "delivery: empty response body" : result.Describe());
        }
    }
}
