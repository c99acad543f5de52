using System.Diagnostics;
using DroneDelivery.Delivery.Store;
using Microsoft.AspNetCore.Diagnostics;

namespace DroneDelivery.Delivery.Apis;

/// <summary>
/// Answers a request that Redis could not serve with 503 problem details naming the cause — for an
/// out-of-memory Redis the type <see cref="OutOfMemoryType"/> and Redis' own message — and marks the
/// request span with the same <c>error.type</c>, so step B1's failure is visible by name from the
/// caller's side too. 503 because the failure is the store's, not the request's: Workflow retries it.
/// </summary>
internal sealed class StoreUnavailableHandler(IProblemDetailsService problemDetails) : IExceptionHandler
{
    public const string OutOfMemoryType = "https://dronedelivery.example/problems/redis-out-of-memory";
    public const string UnavailableType = "https://dronedelivery.example/problems/redis-unavailable";

    public async ValueTask<bool> TryHandleAsync(HttpContext httpContext, Exception exception, CancellationToken cancellationToken)
    {
        if (exception is not StoreUnavailableException unavailable)
        {
            return false;
        }

        var outOfMemory = unavailable.Failure == StoreFailure.OutOfMemory;
        Activity.Current?.SetTag("error.type", outOfMemory ? DeliveryTelemetry.OutOfMemoryErrorType : "RedisUnavailable");
        httpContext.Response.StatusCode = StatusCodes.Status503ServiceUnavailable;
        return await problemDetails.TryWriteAsync(new ProblemDetailsContext
        {
            HttpContext = httpContext,
            Exception = exception,
            ProblemDetails =
            {
                Status = StatusCodes.Status503ServiceUnavailable,
                Type = outOfMemory ? OutOfMemoryType : UnavailableType,
                Title = outOfMemory ? "Redis is out of memory" : "Redis is unavailable",
                Detail = unavailable.Message,
            },
        }).ConfigureAwait(false);
    }
}
