using System.Buffers;
using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// What a handler answers, plus what the capacity model needs to account for it: the container and
/// physical partitions it touched, the RU charge and the modelled latency.
/// </summary>
internal sealed class GatewayResponse
{
    public int StatusCode { get; init; }

    public int SubStatusCode { get; init; }

    public ReadOnlyMemory<byte> Body { get; init; }

    public List<KeyValuePair<string, string>> Headers { get; } = [];

    public string Operation { get; set; } = Metrics.CosmosEmulatorOperations.Unknown;

    public ContainerResource? Container { get; set; }

    /// <summary>The partitions that served the request and the RU each is charged; empty for metadata requests.</summary>
    public List<(PhysicalPartition Partition, double Charge)> PartitionCharges { get; } = [];

    /// <summary>The charge reported in <c>x-ms-request-charge</c>.</summary>
    public double RequestCharge { get; set; }

    public int DocumentCount { get; set; }

    public TimeSpan Latency { get; set; }

    public bool Throttled { get; init; }

    /// <summary>
    /// True when the handler already took <see cref="PartitionCharges"/> from the partitions' RU budgets
    /// as the work went (bulk requests, so that concurrent ones share a partition's budget); the
    /// pipeline then only records them.
    /// </summary>
    public bool BudgetsCharged { get; set; }

    public static GatewayResponse Json(int statusCode, Action<Utf8JsonWriter> write, int sizeHint = 512)
    {
        var buffer = new ArrayBufferWriter<byte>(sizeHint);
        using (var writer = new Utf8JsonWriter(buffer))
        {
            write(writer);
        }

        return new GatewayResponse { StatusCode = statusCode, Body = buffer.WrittenMemory };
    }

    public static GatewayResponse Raw(int statusCode, ReadOnlyMemory<byte> body) => new() { StatusCode = statusCode, Body = body };

    public static GatewayResponse Empty(int statusCode) => new() { StatusCode = statusCode };

    /// <summary>An error in the service's shape: <c>{"code": "...", "message": "..."}</c> plus the sub-status header.</summary>
    public static GatewayResponse Error(int statusCode, string code, string message, int subStatusCode = 0)
    {
        var response = Json(statusCode, writer =>
        {
            writer.WriteStartObject();
            writer.WriteString("code", code);
            // Messages quote what the client sent; an unpaired surrogate in it must not stop the answer.
            writer.WriteString("message", JsonInput.Printable(message));
            writer.WriteEndObject();
        });
        return new GatewayResponse { StatusCode = statusCode, SubStatusCode = subStatusCode, Body = response.Body };
    }

    public static GatewayResponse BadRequest(string message, int subStatusCode = 0) =>
        Error(400, "BadRequest", message, subStatusCode);

    public static GatewayResponse NotFound(string message = "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found") =>
        Error(404, "NotFound", message);

    public static GatewayResponse Conflict(string message = "Entity with the specified id already exists in the system.") =>
        Error(409, "Conflict", message);

    public static GatewayResponse PreconditionFailed() =>
        Error(412, "PreconditionFailed", "Operation cannot be performed because one of the specified precondition is not met.");

    public static GatewayResponse TooManyRequests(int retryAfterMilliseconds)
    {
        var error = Error(429, "TooManyRequests",
            "Message: {\"Errors\":[\"Request rate is large. More Request Units may be needed, so no changes were made. "
            + "Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429\"]}",
            SubStatusCodes.RequestRateTooLarge);
        var response = new GatewayResponse { StatusCode = 429, SubStatusCode = SubStatusCodes.RequestRateTooLarge, Body = error.Body, Throttled = true };
        response.Headers.Add(new(CosmosHeaders.RetryAfterMilliseconds, retryAfterMilliseconds.ToString(CultureInfo.InvariantCulture)));
        return response;
    }

    public GatewayResponse WithHeader(string name, string value)
    {
        Headers.Add(new(name, value));
        return this;
    }

    /// <summary>Names the operation for metrics and request timings.</summary>
    public GatewayResponse Named(string operation)
    {
        Operation = operation;
        return this;
    }
}

/// <summary>A client error detected deep inside a handler; becomes a 400 with this message.</summary>
internal sealed class BadRequestException(string message, int subStatusCode = 0) : Exception(message)
{
    public int SubStatusCode { get; } = subStatusCode;
}
