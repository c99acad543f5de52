using System.Diagnostics;
using System.Text.Json;
using Microsoft.AspNetCore.Diagnostics;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.ServiceDefaults.Hosting;

internal static partial class ProblemDetailsDefaults
{
    /// <summary>
    /// Every error answer is RFC 9457 problem details carrying the trace id. A malformed or oversized
    /// request is the client's mistake and gets 400/413 saying what was wrong — never a 500.
    /// </summary>
    public static void AddProblemDetailsDefaults(this IServiceCollection services)
    {
        services.AddProblemDetails(options => options.CustomizeProblemDetails = context =>
        {
            context.ProblemDetails.Instance ??= context.HttpContext.Request.Path;
            context.ProblemDetails.Extensions["traceId"] = Activity.Current?.TraceId.ToHexString() ?? context.HttpContext.TraceIdentifier;
        });
        services.AddExceptionHandler<BadRequestExceptionHandler>();

        // Minimal APIs then throw on unreadable bodies instead of answering an empty 400.
        services.Configure<RouteHandlerOptions>(options => options.ThrowOnBadRequest = true);
    }

    private sealed partial class BadRequestExceptionHandler(IProblemDetailsService problemDetails, ILogger<BadRequestExceptionHandler> logger) : IExceptionHandler
    {
        public async ValueTask<bool> TryHandleAsync(HttpContext httpContext, Exception exception, CancellationToken cancellationToken)
        {
            if (exception is not BadHttpRequestException bad)
            {
                return false;
            }

            LogBadRequest(logger, bad.StatusCode, bad.Message);
            httpContext.Response.StatusCode = bad.StatusCode;
            // The JSON reader's message names what it could not read (a property named twice, a value of the
            // wrong type); its path says where in the body.
            var detail = bad.InnerException is JsonException json
                ? json.Path is { Length: > 0 } path && !json.Message.Contains(path, StringComparison.Ordinal) ? $"{bad.Message} {json.Message} (at {path})" : $"{bad.Message} {json.Message}"
                : bad.Message;
            return await problemDetails.TryWriteAsync(new ProblemDetailsContext
            {
                HttpContext = httpContext,
                Exception = exception,
                ProblemDetails =
                {
                    Status = bad.StatusCode,
                    Title = bad.StatusCode == StatusCodes.Status413PayloadTooLarge ? "Request body too large" : "Malformed request",
                    Detail = detail,
                },
            }).ConfigureAwait(false);
        }

        [LoggerMessage(EventId = 3000, Level = LogLevel.Information, Message = "Rejected a bad request ({StatusCode}): {Reason}")]
        private static partial void LogBadRequest(ILogger logger, int statusCode, string reason);
    }
}
