using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>An authorised request with its parsed address and its body.</summary>
internal sealed class GatewayRequest(HttpContext http, ResourceAddress address, byte[] body)
{
    public string Method { get; } = http.Request.Method;

    public ResourceAddress Address { get; } = address;

    public byte[] Body { get; } = body;

    public string Scheme => http.Request.Scheme;

    public string Host => http.Request.Host.Value ?? "127.0.0.1";

    public string? Header(string name) =>
        http.Request.Headers.TryGetValue(name, out var values) && values.Count > 0 ? values[0] : null;

    public bool HeaderIsTrue(string name) => bool.TryParse(Header(name), out var value) && value;

    /// <summary>The body as a JSON object, or a 400 explaining why it is not one.</summary>
    public JsonDocument ParseJsonObject() => ParseJson(allowArray: false);

    /// <summary>The body as a JSON object or, when <paramref name="allowArray"/>, an array; otherwise a 400.</summary>
    public JsonDocument ParseJson(bool allowArray)
    {
        if (Body.Length == 0)
        {
            throw new BadRequestException("The request body is empty; a JSON object is required.");
        }

        JsonDocument document;
        try
        {
            document = JsonInput.Parse(Body);
        }
        catch (JsonException e)
        {
            throw new BadRequestException($"The request body is not valid JSON: {e.Message}");
        }

        if (document.RootElement.ValueKind != JsonValueKind.Object
            && !(allowArray && document.RootElement.ValueKind == JsonValueKind.Array))
        {
            document.Dispose();
            throw new BadRequestException(allowArray ? "The request body must be a JSON object or array." : "The request body must be a JSON object.");
        }

        if (JsonInput.Problem(document.RootElement) is { } problem)
        {
            document.Dispose();
            throw new BadRequestException($"The request body cannot be accepted: {problem}.");
        }

        return document;
    }

    /// <summary>The partition key header, or null when absent.</summary>
    public PartitionKeyValue? PartitionKey()
    {
        var header = Header(CosmosHeaders.PartitionKey);
        if (header is null)
        {
            return null;
        }

        return PartitionKeyValue.TryParseHeader(header, out var value, out var error)
            ? value
            : throw new BadRequestException(error!);
    }

    /// <summary>Throughput headers of a create request: manual RU/s or autoscale maximum.</summary>
    public ThroughputRequest? Throughput()
    {
        var manual = Header(CosmosHeaders.OfferThroughput);
        var autoscale = Header(CosmosHeaders.AutopilotSettings);
        if (manual is not null && autoscale is not null)
        {
            throw new BadRequestException("Specify either x-ms-offer-throughput or x-ms-cosmos-offer-autopilot-settings, not both.");
        }

        if (manual is not null)
        {
            return int.TryParse(manual, System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out var ru) && ru > 0
                ? new ThroughputRequest(ru, false)
                : throw new BadRequestException($"x-ms-offer-throughput must be a positive integer (was '{manual}').");
        }

        if (autoscale is not null)
        {
            try
            {
                using var settings = JsonInput.Parse(autoscale);
                if (settings.RootElement.ValueKind == JsonValueKind.Object
                    && settings.RootElement.TryGetProperty("maxThroughput", out var max) && max.ValueKind == JsonValueKind.Number
                    && max.TryGetInt32(out var ru) && ru > 0)
                {
                    return new ThroughputRequest(ru, true);
                }
            }
            catch (Exception e) when (e is JsonException or ArgumentException or InvalidOperationException)
            {
                // Not JSON, text with an unpaired surrogate the JSON reader cannot even transcode, or a
                // property name escaping one (\uD800), which looking up maxThroughput cannot unescape.
            }

            throw new BadRequestException($"x-ms-cosmos-offer-autopilot-settings must be JSON with a positive maxThroughput (was '{autoscale}').");
        }

        return null;
    }
}
