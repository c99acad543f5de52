using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.Contracts.Http;
using DroneDelivery.Security.PublicApis;

namespace DroneDelivery.Ingestion.Apis;

/// <summary>
/// Before a cancellation or a change is queued: the delivery must be the caller's. Delivery says who owns
/// it; another owner's delivery gets the same 404 as an unknown one, so a delivery id reveals nothing to
/// whoever does not own it. An application with the role acts for every owner and is not looked up.
/// A delivery Workflow has not scheduled yet is not known either (404: retry once the status answers).
/// </summary>
internal sealed class DeliveryOwnerCheck(EdgeAccess access, IHttpClientFactory clients) : IEndpointFilter
{
    public async ValueTask<object?> InvokeAsync(EndpointFilterInvocationContext context, EndpointFilterDelegate next)
    {
        var http = context.HttpContext;
        if (access.ActsForEveryOwner(http.User, Permission.WriteDeliveries) || http.GetRouteValue("id") is not string id || !Identifiers.IsValid(id))
        {
            return await next(context); // the handler answers a bad id with 400
        }

        var owner = await BackendCall.SendAsync<DeliveryStatus>(
            clients.CreateClient(BackendNames.Delivery), BackendNames.Delivery, HttpMethod.Get, Routes.Deliveries.StatusItemPath(id), null, http.RequestAborted);
        return owner.Outcome switch
        {
            BackendOutcome.Succeeded when owner.Value is { } status && access.MayActFor(http.User, Permission.WriteDeliveries, status.OwnerId) => await next(context),
            BackendOutcome.Succeeded or BackendOutcome.NotFound => Problems.NotFound("Delivery", id),
            _ => TypedResults.Problem(
                statusCode: StatusCodes.Status503ServiceUnavailable,
                title: "The delivery's owner could not be checked",
                detail: owner.Describe()),
        };
    }
}
