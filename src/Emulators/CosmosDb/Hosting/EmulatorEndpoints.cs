using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Emulators.CosmosDb;

/// <summary>
/// The emulator's own endpoints, on paths no Cosmos DB REST path uses: <c>GET /_emulator/health</c>,
/// <c>GET /_emulator/metrics?seconds=N</c> (JSON) and <c>GET /_emulator/requests?after=S&amp;limit=N</c> (request
/// timings); <c>GET /metrics</c> (Prometheus text) is the exporter's (<see cref="EmulatorMetricsEndpoint"/>). No authorisation.
/// </summary>
internal sealed class EmulatorEndpoints(MetricsReader metrics, RequestLog log)
{
    public const string Prefix = "/_emulator";

    public async Task HandleAsync(HttpContext http)
    {
        if (!HttpMethods.IsGet(http.Request.Method))
        {
            await ErrorAsync(http, 405, "MethodNotAllowed", $"{http.Request.Method} is not supported on the emulator's own endpoints; use GET.").ConfigureAwait(false);
            return;
        }

        var query = http.Request.Query;
        switch (http.Request.Path.Value)
        {
            case Prefix + "/health":
                await WriteJsonAsync(http, new { status = "ready" }).ConfigureAwait(false);
                break;
            case Prefix + "/metrics":
                var seconds = Integer(query["seconds"], 60);
                if (seconds is null or < 1)
                {
                    await BadRequestAsync(http, "seconds must be a positive integer").ConfigureAwait(false);
                    return;
                }

                await WriteJsonAsync(http, metrics.Snapshot((int)Math.Min(seconds.Value, int.MaxValue))).ConfigureAwait(false);
                break;
            case Prefix + "/requests":
                var after = Integer(query["after"], 0);
                var limit = Integer(query["limit"], 10_000);
                if (after is null or < 0 || limit is null or < 1)
                {
                    await BadRequestAsync(http, "after must be a non-negative integer and limit a positive one").ConfigureAwait(false);
                    return;
                }

                await WriteJsonAsync(http, log.Since(after.Value, (int)limit.Value)).ConfigureAwait(false);
                break;
            default:
                await ErrorAsync(http, 404, "NotFound",
                    $"The emulator has no endpoint '{http.Request.Path}'; it serves {Prefix}/health, {Prefix}/metrics, {Prefix}/requests and {EmulatorMetricsEndpoint.Path}.")
                    .ConfigureAwait(false);
                break;
        }
    }

    private static long? Integer(Microsoft.Extensions.Primitives.StringValues value, long fallback) =>
        value.Count == 0 ? fallback
        : long.TryParse(value.ToString(), NumberStyles.None, CultureInfo.InvariantCulture, out var parsed) ? parsed : null;

    private static Task WriteJsonAsync<T>(HttpContext http, T value)
    {
        http.Response.ContentType = "application/json";
        return JsonSerializer.SerializeAsync(http.Response.Body, value, CosmosEmulator.JsonOptions, http.RequestAborted);
    }

    private static Task BadRequestAsync(HttpContext http, string message) => ErrorAsync(http, 400, "BadRequest", message);

    // The same error shape as the Cosmos DB endpoints: {"code": "...", "message": "..."}.
    private static Task ErrorAsync(HttpContext http, int status, string code, string message)
    {
        http.Response.StatusCode = status;
        return WriteJsonAsync(http, new { code, message = Protocol.JsonInput.Printable(message) });
    }
}
