using System.Diagnostics;
using System.Globalization;
using System.Net;
using Microsoft.AspNetCore.Diagnostics;
using Microsoft.AspNetCore.Http;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>
/// Answers a request that failed in Cosmos DB after the SDK's own retries: still throttled (429) →
/// 503 with <c>Retry-After</c>; the service unavailable or timing out → 503; anything else from Cosmos
/// → 502. The cause is named in the problem details and on the request span; callers treat 5xx as
/// transient.
/// </summary>
public sealed partial class CosmosExceptionHandler(IProblemDetailsService problemDetails, ILogger<CosmosExceptionHandler> logger) : IExceptionHandler
{
    public async ValueTask<bool> TryHandleAsync(HttpContext httpContext, Exception exception, CancellationToken cancellationToken)
    {
        if (exception is not CosmosException cosmos)
        {
            return false;
        }

        var throttled = cosmos.StatusCode == HttpStatusCode.TooManyRequests;
        var unavailable = throttled || cosmos.StatusCode is HttpStatusCode.ServiceUnavailable or HttpStatusCode.RequestTimeout or HttpStatusCode.GatewayTimeout;
        var status = unavailable ? StatusCodes.Status503ServiceUnavailable : StatusCodes.Status502BadGateway;
        var title = throttled ? "Cosmos DB is throttling requests" : unavailable ? "Cosmos DB is unavailable" : "Cosmos DB failed the request";
        LogFailure(logger, (int)cosmos.StatusCode, cosmos.SubStatusCode, cosmos.RequestCharge, cosmos.Message);
        Activity.Current?.SetTag("error.type", $"CosmosDB {(int)cosmos.StatusCode}/{cosmos.SubStatusCode}");
        httpContext.Response.StatusCode = status;
        if (throttled && cosmos.RetryAfter is { } retryAfter)
        {
            httpContext.Response.Headers.RetryAfter = Math.Max(1, (int)Math.Ceiling(retryAfter.TotalSeconds)).ToString(CultureInfo.InvariantCulture);
        }

        return await problemDetails.TryWriteAsync(new ProblemDetailsContext
        {
            HttpContext = httpContext,
            Exception = exception,
            ProblemDetails =
            {
                Status = status,
                Title = title,
                Detail = $"Cosmos DB answered {(int)cosmos.StatusCode} (substatus {cosmos.SubStatusCode}).",
            },
        }).ConfigureAwait(false);
    }

    [LoggerMessage(EventId = 4200, EventName = "CosmosRequestFailed", Level = LogLevel.Warning,
        Message = "Cosmos DB request failed after the SDK's retries: {StatusCode}/{SubStatusCode}, {RequestCharge} RU: {CosmosMessage}")]
    private static partial void LogFailure(ILogger logger, int statusCode, int subStatusCode, double requestCharge, string cosmosMessage);
}
