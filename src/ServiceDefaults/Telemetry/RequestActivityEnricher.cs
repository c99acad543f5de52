using System.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace DroneDelivery.ServiceDefaults.Telemetry;

/// <summary>
/// Gives the framework's incoming-request span the semantic-convention name and tags
/// (<c>GET /api/invoices/{ownerId}</c>, route, status code) that an instrumentation package would add,
/// and stops recording probe and scrape requests so they do not flood the traces.
/// </summary>
internal static class RequestActivityEnricher
{
    public static void UseRequestActivityEnricher(this IApplicationBuilder app) => app.Use(async (context, next) =>
    {
        var activity = Activity.Current;
        if (activity is null || activity.Kind != ActivityKind.Server)
        {
            await next(context).ConfigureAwait(false);
            return;
        }

        var path = context.Request.Path;
        if (path.StartsWithSegments("/health") || path.StartsWithSegments("/metrics"))
        {
            activity.ActivityTraceFlags &= ~ActivityTraceFlags.Recorded;
            activity.IsAllDataRequested = false;
            await next(context).ConfigureAwait(false);
            return;
        }

        var method = context.Request.Method;
        activity.SetTag("http.request.method", method);
        activity.SetTag("url.scheme", context.Request.Scheme);
        activity.SetTag("url.path", path.Value);
        activity.SetTag("server.address", context.Request.Host.Host);
        try
        {
            await next(context).ConfigureAwait(false);
        }
        finally
        {
            var status = context.Response.StatusCode;
            activity.SetTag("http.response.status_code", status);
            var route = (context.GetEndpoint() as RouteEndpoint)?.RoutePattern.RawText;
            if (route is not null)
            {
                activity.SetTag("http.route", route);
                activity.DisplayName = $"{method} {route}";
            }
            else
            {
                activity.DisplayName = method;
            }

            if (status >= 500)
            {
                activity.SetStatus(ActivityStatusCode.Error);
            }
        }
    });
}
