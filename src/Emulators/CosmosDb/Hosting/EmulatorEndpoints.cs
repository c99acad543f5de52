using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Faults;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Emulators.CosmosDb;

/// <summary>
/// The emulator's own endpoints, on paths no Cosmos DB REST path uses: <c>GET /_emulator/health</c>,
/// <c>GET /_emulator/metrics?seconds=N</c> (JSON), <c>GET /_emulator/requests?after=S&amp;limit=N</c> (request
/// timings), <c>/_emulator/faults</c> (the injected faults: GET reads the rules and the counts, PUT replaces the
/// rules, DELETE removes them) and <c>/_emulator/latency</c> (the account's latency model: GET reads it, PUT replaces
/// it for every container without settings of its own); <c>GET /metrics</c> (Prometheus text, injected faults
/// included) is the exporter's (<see cref="EmulatorMetricsEndpoint"/>). Reading needs no authorisation; a change
/// needs the account key in <c>x-emulator-key</c>.
/// </summary>
internal sealed class EmulatorEndpoints(MetricsReader metrics, RequestLog log, CosmosFaultInjector faults, Capacity.LatencyModel latency, string accountKey)
{
    public const string Prefix = "/_emulator";
    public const string FaultsPath = Prefix + "/faults";
    public const string LatencyPath = Prefix + "/latency";
    public const string KeyHeader = "x-emulator-key";

    public async Task HandleAsync(HttpContext http)
    {
        if (http.Request.Path.Value == FaultsPath)
        {
            await FaultsAsync(http).ConfigureAwait(false);
            return;
        }

        if (http.Request.Path.Value == LatencyPath)
        {
            await LatencyAsync(http).ConfigureAwait(false);
            return;
        }

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
                    $"The emulator has no endpoint '{http.Request.Path}'; it serves {Prefix}/health, {Prefix}/metrics, {Prefix}/requests, {FaultsPath}, {LatencyPath} and {EmulatorMetricsEndpoint.Path}.")
                    .ConfigureAwait(false);
                break;
        }
    }

    /// <summary>What <c>GET /_emulator/faults</c> answers.</summary>
    private object FaultState() => new { faults = faults.Options, injected = faults.Counts() };

    private async Task FaultsAsync(HttpContext http)
    {
        var method = http.Request.Method;
        if (HttpMethods.IsGet(method))
        {
            await WriteJsonAsync(http, FaultState()).ConfigureAwait(false);
            return;
        }

        if (!HttpMethods.IsPut(method) && !HttpMethods.IsDelete(method))
        {
            await ErrorAsync(http, 405, "MethodNotAllowed", $"{method} is not supported on {FaultsPath}; use GET, PUT or DELETE.").ConfigureAwait(false);
            return;
        }

        if (!await AuthorisedAsync(http, "faults").ConfigureAwait(false))
        {
            return;
        }

        if (HttpMethods.IsDelete(method))
        {
            faults.Configure(new CosmosFaultOptions());
            await WriteJsonAsync(http, FaultState()).ConfigureAwait(false);
            return;
        }

        CosmosFaultOptions? options;
        try
        {
            options = await JsonSerializer.DeserializeAsync<CosmosFaultOptions>(http.Request.Body, FaultJson, http.RequestAborted).ConfigureAwait(false);
        }
        catch (JsonException e)
        {
            await BadRequestAsync(http, $"The body is not valid fault settings: {e.Message}").ConfigureAwait(false);
            return;
        }

        var problem = options is null ? "The body must be a JSON object: {\"seed\": 1, \"rules\": [{\"kind\": \"ServiceUnavailable\", \"container\": \"db/container\", \"probability\": 0.1}]}." : options.Problem("faults");
        if (problem is not null)
        {
            await BadRequestAsync(http, problem).ConfigureAwait(false);
            return;
        }

        faults.Configure(options!);
        await WriteJsonAsync(http, FaultState()).ConfigureAwait(false);
    }

    /// <summary>
    /// <c>GET</c> reads the account's latency model; <c>PUT</c> replaces it (every field, as the config file's
    /// <c>Latency</c> section; a field left out takes its default) for every container without latency settings of its own.
    /// </summary>
    private async Task LatencyAsync(HttpContext http)
    {
        var method = http.Request.Method;
        if (HttpMethods.IsGet(method))
        {
            await WriteJsonAsync(http, latency.Settings).ConfigureAwait(false);
            return;
        }

        if (!HttpMethods.IsPut(method))
        {
            await ErrorAsync(http, 405, "MethodNotAllowed", $"{method} is not supported on {LatencyPath}; use GET or PUT.").ConfigureAwait(false);
            return;
        }

        if (!await AuthorisedAsync(http, "the latency model").ConfigureAwait(false))
        {
            return;
        }

        LatencyOptions? settings;
        try
        {
            settings = await JsonSerializer.DeserializeAsync<LatencyOptions>(http.Request.Body, FaultJson, http.RequestAborted).ConfigureAwait(false);
        }
        catch (JsonException e)
        {
            await BadRequestAsync(http, $"The body is not a latency model: {e.Message}").ConfigureAwait(false);
            return;
        }

        if (CosmosEmulatorOptionsValidator.LatencyProblem(settings, "latency") is { } problem)
        {
            await BadRequestAsync(http, problem).ConfigureAwait(false);
            return;
        }

        latency.Replace(settings!);
        await WriteJsonAsync(http, latency.Settings).ConfigureAwait(false);
    }

    /// <summary>True when the request carries the account key; otherwise answers 401 naming what it may not change.</summary>
    private async Task<bool> AuthorisedAsync(HttpContext http, string what)
    {
        var key = http.Request.Headers[KeyHeader].ToString();
        if (System.Security.Cryptography.CryptographicOperations.FixedTimeEquals(System.Text.Encoding.UTF8.GetBytes(key), System.Text.Encoding.UTF8.GetBytes(accountKey)))
        {
            return true;
        }

        await ErrorAsync(http, 401, "Unauthorized", $"Changing {what} needs the account key in the '{KeyHeader}' header.").ConfigureAwait(false);
        return false;
    }

    // A setting given twice is refused by name, as in every other body this emulator reads (Protocol/JsonInput).
    private static readonly JsonSerializerOptions FaultJson = new(JsonSerializerDefaults.Web)
    {
        AllowDuplicateProperties = Protocol.JsonInput.DocumentOptions.AllowDuplicateProperties,
        UnmappedMemberHandling = System.Text.Json.Serialization.JsonUnmappedMemberHandling.Disallow,
        AllowTrailingCommas = true,
        ReadCommentHandling = JsonCommentHandling.Skip,
    };

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
