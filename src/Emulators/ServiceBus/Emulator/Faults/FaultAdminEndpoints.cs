using System.Text.Json;
using System.Text.Json.Serialization;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Emulators.ServiceBus.Faults;

/// <summary>What <c>GET /_emulator/faults</c> answers: the rules in force, the pause and what was injected so far.</summary>
public sealed record ServiceBusFaultState(ServiceBusFaultOptions Faults, DateTimeOffset? PausedUntil, IReadOnlyList<InjectedFaultCount> Injected);

/// <summary>How long <c>POST /_emulator/faults/pause</c> stops the namespace answering.</summary>
public sealed record NamespacePause(double Seconds);

/// <summary>
/// The fault administration endpoints on the emulator's HTTP listener. Reading is open, like the metrics; a change
/// needs a shared access signature signed with the namespace's key in the <c>Authorization</c> header, as the
/// service's own management API does (<c>SharedAccessSignature sr=…&amp;sig=…&amp;se=…&amp;skn=…</c>). A bad
/// body is a 400 problem naming the field.
/// </summary>
internal static class FaultAdminEndpoints
{
    public const string Path = "/_emulator/faults";

    /// <summary>The longest pause, in seconds.</summary>
    public const double MaxPauseSeconds = 600;

    internal static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { Converters = { new JsonStringEnumConverter() } };

    public static void Map(WebApplication app, Namespace ns, ServiceBusEmulatorOptions options)
    {
        app.MapGet(Path, () => Results.Json(State(ns), Json));
        app.MapPut(Path, async (HttpRequest request) =>
        {
            if (Refusal(request, options) is { } refused)
            {
                return refused;
            }

            var (body, unreadable) = await ReadAsync(request).ConfigureAwait(false);
            if (body is null)
            {
                return Invalid($"The body must be a JSON object: {{\"seed\": 1, \"rules\": [{{\"kind\": \"ServerBusySend\", \"entity\": \"*\", \"probability\": 0.1}}]}} ({unreadable}).");
            }

            try
            {
                using (body)
                {
                    var faults = ServiceBusFaultOptions.FromJson(body.RootElement, "faults");
                    faults.ValidateEntities(entity => ns.Find(entity) is not null, "faults");
                    ns.Faults.Configure(faults);
                }
            }
            catch (EmulatorConfigurationException e)
            {
                return Invalid(e.Message);
            }

            return Results.Json(State(ns), Json);
        });
        app.MapDelete(Path, (HttpRequest request) =>
        {
            if (Refusal(request, options) is { } refused)
            {
                return refused;
            }

            ns.Faults.Configure(ServiceBusFaultOptions.None);
            ns.Faults.Gate.Open();
            return Results.Json(State(ns), Json);
        });
        app.MapPost(Path + "/pause", async (HttpRequest request) =>
        {
            if (Refusal(request, options) is { } refused)
            {
                return refused;
            }

            var (body, unreadable) = await ReadAsync(request).ConfigureAwait(false);
            using (body)
            {
                const string Shape = "The body must be {\"seconds\": <how long the namespace stops answering>}";
                if (body is null || body.RootElement.ValueKind != JsonValueKind.Object)
                {
                    return Invalid(unreadable is null ? $"{Shape}." : $"{Shape} ({unreadable}).");
                }

                JsonElement? seconds = null;
                try
                {
                    foreach (var property in ServiceBusFaultOptions.Settings(body.RootElement, "pause"))
                    {
                        seconds = string.Equals(property.Name, "seconds", StringComparison.OrdinalIgnoreCase) ? property.Value : seconds;
                    }
                }
                catch (EmulatorConfigurationException e)
                {
                    return Invalid(e.Message);
                }

                if (seconds is not { ValueKind: JsonValueKind.Number } value || value.GetDouble() is <= 0 or > MaxPauseSeconds)
                {
                    return seconds is null
                        ? Invalid($"{Shape}.")
                        : Invalid($"seconds must be a number above 0 and at most {MaxPauseSeconds} (got {seconds.Value.GetRawText()}).");
                }

                ns.Faults.Pause(TimeSpan.FromSeconds(value.GetDouble()));
                return Results.Json(State(ns), Json);
            }
        });
        app.MapDelete(Path + "/pause", (HttpRequest request) =>
        {
            if (Refusal(request, options) is { } refused)
            {
                return refused;
            }

            ns.Faults.Gate.Open();
            return Results.Json(State(ns), Json);
        });
    }

    private static ServiceBusFaultState State(Namespace ns) => new(ns.Faults.Options, ns.Faults.Gate.HeldUntil, ns.Faults.Counts());

    /// <summary>Null when the request carries a valid signature made with the namespace's key, else the 401 to answer.</summary>
    internal static IResult? Refusal(HttpRequest request, ServiceBusEmulatorOptions options, string what = "Changing faults")
    {
        var header = request.Headers.Authorization.ToString();
        var token = SharedAccessSignature.TryParse(header);
        var problem = token is null
            ? $"{what} needs 'Authorization: SharedAccessSignature sr=…&sig=…&se=…&skn=…', signed with the namespace's key."
            : !string.Equals(token.KeyName, options.SharedAccessKeyName, StringComparison.Ordinal) || !token.IsSignedWith(options.SharedAccessKey)
                ? $"The signature does not match key '{token.KeyName}'."
                : token.ExpiresOn <= options.TimeProvider.GetUtcNow()
                    ? $"The signature expired at {token.ExpiresOn:O}."
                    : null;
        return problem is null ? null : Results.Problem(statusCode: StatusCodes.Status401Unauthorized, title: "Unauthorized", detail: problem);
    }

    /// <summary>
    /// The body, or why it cannot be read. A setting given twice is refused by name: which value would
    /// win is up to each reader, and a fault rule must mean one thing.
    /// </summary>
    private static async Task<(JsonDocument? Body, string? Unreadable)> ReadAsync(HttpRequest request)
    {
        try
        {
            var options = new JsonDocumentOptions { AllowTrailingCommas = true, CommentHandling = JsonCommentHandling.Skip, AllowDuplicateProperties = false };
            return (await JsonDocument.ParseAsync(request.Body, options).ConfigureAwait(false), null);
        }
        catch (JsonException e)
        {
            return (null, e.Message);
        }
        catch (InvalidOperationException e)
        {
            // Comparing names to find one given twice unescapes them; a name escaping an unpaired surrogate cannot be.
            return (null, $"a property name is not valid UTF-16: {e.Message}");
        }
    }

    private static IResult Invalid(string detail) =>
        Results.Problem(statusCode: StatusCodes.Status400BadRequest, title: "Invalid fault settings", detail: detail);
}
