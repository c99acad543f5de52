namespace DroneDelivery.Contracts;

/// <summary>Where a delivery is in its life. Each change is also recorded as a tracking event.</summary>
public enum DeliveryStage
{
    Created,
    Rescheduled,
    Cancelled,
}

/// <summary>The body of <c>PUT /api/deliveries/{id}</c>: the delivery Workflow schedules once a package and a drone exist.</summary>
public sealed record DeliverySchedule : DeliveryTerms
{
    public DeliverySchedule()
    {
    }

    /// <summary>The schedule of a valid request whose package exists, with the drone assigned to it.</summary>
    public DeliverySchedule(ValidDeliveryRequest request, string droneId)
        : base(request)
    {
        PackageId = request.PackageId;
        DroneId = droneId;
    }

    public string? PackageId { get; init; }

    public string? DroneId { get; init; }

    public void Validate(FieldErrors errors)
    {
        ValidateTerms(errors);
        errors.RequireIdentifier("packageId", PackageId);
        errors.RequireIdentifier("droneId", DroneId);
    }
}

/// <summary>A scheduled delivery as Delivery stores and returns it.</summary>
public sealed record DeliveryRecord(
    string DeliveryId,
    string OwnerId,
    string PickupLocation,
    string DropoffLocation,
    DateTimeOffset PickupTime,
    DateTimeOffset Deadline,
    bool Expedited,
    ConfirmationType ConfirmationRequired,
    string PackageId,
    string DroneId,
    DeliveryStage Stage,
    DateTimeOffset CreatedAt,
    DateTimeOffset UpdatedAt)
{
    [System.Text.Json.Serialization.JsonIgnore]
    public BillingPeriod Period => BillingPeriod.Of(PickupTime);
}

/// <summary>One entry of a delivery's history.</summary>
public sealed record TrackingEvent(DeliveryStage Stage, DateTimeOffset Timestamp);

/// <summary>
/// <c>GET /api/deliveries/{id}/status</c>. The owner lets the public edge answer only the delivery's own
/// owner (the gateway serves this route to clients; Delivery itself is internal).
/// </summary>
public sealed record DeliveryStatus(
    string DeliveryId,
    string OwnerId,
    DeliveryStage Stage,
    DateTimeOffset PickupTime,
    DateTimeOffset Deadline,
    string DroneId,
    DateTimeOffset LastUpdated);

/// <summary><c>GET /api/deliveries/summary</c>: deliveries scheduled (and not cancelled) for an owner in a month.</summary>
public sealed record DeliverySummary(string OwnerId, int Year, int Month, long Count);
