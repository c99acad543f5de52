using System.Text.Json;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Emulators.ServiceBus.Faults;

/// <summary>The round trips the emulator adds, in milliseconds: what <c>/_emulator/latency</c> reads and replaces.</summary>
public sealed record ServiceBusLatencyState(double SendMilliseconds, double ReceiveMilliseconds, double CompleteMilliseconds);

/// <summary>
/// <c>GET /_emulator/latency</c> reads the round trips the emulator adds to sends, receives and settlements;
/// <c>PUT</c> replaces all three at run time (a field left out is 0). A change needs the same shared access
/// signature as the fault endpoints; a value outside 0–30 s is a 400 problem naming it.
/// </summary>
internal static class LatencyAdminEndpoint
{
    public const string Path = "/_emulator/latency";

    public static void Map(WebApplication app, Namespace ns, ServiceBusEmulatorOptions options)
    {
        app.MapGet(Path, () => Results.Json(State(ns.Latency), FaultAdminEndpoints.Json));
        app.MapPut(Path, async (HttpRequest request) =>
        {
            if (FaultAdminEndpoints.Refusal(request, options, "Changing the latency") is { } refused)
            {
                return refused;
            }

            ServiceBusLatencyState? state;
            try
            {
                state = await JsonSerializer.DeserializeAsync<ServiceBusLatencyState>(request.Body, Strict, request.HttpContext.RequestAborted).ConfigureAwait(false);
            }
            catch (JsonException e)
            {
                return Invalid($"The body must be {{\"sendMilliseconds\": 5, \"receiveMilliseconds\": 5, \"completeMilliseconds\": 100}}: {e.Message}");
            }

            if (state is null)
            {
                return Invalid("The body must be {\"sendMilliseconds\": 5, \"receiveMilliseconds\": 5, \"completeMilliseconds\": 100}.");
            }

            foreach (var (name, value) in new[] { ("sendMilliseconds", state.SendMilliseconds), ("receiveMilliseconds", state.ReceiveMilliseconds), ("completeMilliseconds", state.CompleteMilliseconds) })
            {
                if (!double.IsFinite(value) || value < 0 || value > LatencyModel.Maximum.TotalMilliseconds)
                {
                    return Invalid($"{name} must be between 0 and {LatencyModel.Maximum.TotalMilliseconds} (got {value}).");
                }
            }

            ns.Latency.Replace(
                TimeSpan.FromMilliseconds(state.SendMilliseconds),
                TimeSpan.FromMilliseconds(state.ReceiveMilliseconds),
                TimeSpan.FromMilliseconds(state.CompleteMilliseconds));
            return Results.Json(State(ns.Latency), FaultAdminEndpoints.Json);
        });
    }

    private static readonly JsonSerializerOptions Strict = new(JsonSerializerDefaults.Web)
    {
        UnmappedMemberHandling = System.Text.Json.Serialization.JsonUnmappedMemberHandling.Disallow,
        NumberHandling = System.Text.Json.Serialization.JsonNumberHandling.Strict,
    };

    private static ServiceBusLatencyState State(LatencyModel latency) =>
        new(latency.Send.TotalMilliseconds, latency.Receive.TotalMilliseconds, latency.Complete.TotalMilliseconds);

    private static IResult Invalid(string detail) =>
        Results.Problem(statusCode: StatusCodes.Status400BadRequest, title: "Invalid latency", detail: detail);
}
