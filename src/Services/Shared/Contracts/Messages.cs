namespace DroneDelivery.Contracts;

/// <summary>
/// How requests travel from Ingestion to Workflow on the queue: a JSON body, the application property
/// <see cref="OperationProperty"/> saying what to do, and <c>MessageId</c> = the delivery id for new deliveries.
/// </summary>
public static class DeliveryMessages
{
    /// <summary>Application property naming the operation.</summary>
    public const string OperationProperty = "operation";

    /// <summary>Application property carrying the delivery id of every message, whatever its operation.</summary>
    public const string DeliveryIdProperty = "deliveryId";

    /// <summary>Body: <see cref="DeliveryRequestMessage"/>.</summary>
    public const string Delivery = "delivery";

    /// <summary>Body: <see cref="CancelMessage"/>.</summary>
    public const string Cancel = "cancel";

    /// <summary>Body: <see cref="RescheduleMessage"/>.</summary>
    public const string Reschedule = "reschedule";

    public const string ContentType = "application/json";
}

/// <summary>The body of a <c>delivery</c> message: the client's request plus the id Ingestion assigned.</summary>
public sealed record DeliveryRequestMessage : DeliveryRequest
{
    public DeliveryRequestMessage()
    {
    }

    private DeliveryRequestMessage(string deliveryId, ValidDeliveryRequest request)
        : base(request)
    {
        DeliveryId = deliveryId;
    }

    [System.Text.Json.Serialization.JsonPropertyOrder(-2)]
    public string? DeliveryId { get; init; }

    public static DeliveryRequestMessage From(string deliveryId, ValidDeliveryRequest request) => new(deliveryId, request);
}

/// <summary>The body of a <c>cancel</c> message.</summary>
public sealed record CancelMessage(string DeliveryId);

/// <summary>The body of a <c>reschedule</c> message.</summary>
public sealed record RescheduleMessage : RescheduleRequest
{
    public string? DeliveryId { get; init; }
}
