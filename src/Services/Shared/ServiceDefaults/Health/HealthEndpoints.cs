using System.Text.Json;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Diagnostics.HealthChecks;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace DroneDelivery.ServiceDefaults.Health;

/// <summary>Tags that decide which probe a health check belongs to.</summary>
public static class HealthTags
{
    /// <summary>The process is alive (no dependency checks: a broken dependency must not restart pods).</summary>
    public const string Live = "live";

    /// <summary>The service can do its work: its real dependencies answer.</summary>
    public const string Ready = "ready";
}

internal static class HealthEndpoints
{
    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { WriteIndented = false };

    /// <summary>Maps <c>/health/live</c> and <c>/health/ready</c> in every environment, as Kubernetes probes need.</summary>
    public static void MapHealthEndpoints(this WebApplication app)
    {
        // Anonymous: probes carry no token, and a service that requires one everywhere else must still answer them.
        app.MapHealthChecks("/health/live", Options(HealthTags.Live)).AllowAnonymous();
        app.MapHealthChecks("/health/ready", Options(HealthTags.Ready)).AllowAnonymous();
    }

    private static HealthCheckOptions Options(string tag) => new()
    {
        Predicate = registration => registration.Tags.Contains(tag),
        ResponseWriter = WriteAsync,
    };

    private static Task WriteAsync(HttpContext context, HealthReport report)
    {
        context.Response.ContentType = "application/json; charset=utf-8";
        var body = new
        {
            status = report.Status.ToString(),
            durationMs = report.TotalDuration.TotalMilliseconds,
            checks = report.Entries.ToDictionary(
                entry => entry.Key,
                entry => new
                {
                    status = entry.Value.Status.ToString(),
                    description = entry.Value.Description ?? entry.Value.Exception?.Message,
                    durationMs = entry.Value.Duration.TotalMilliseconds,
                }),
        };
        return context.Response.WriteAsync(JsonSerializer.Serialize(body, Json));
    }
}
