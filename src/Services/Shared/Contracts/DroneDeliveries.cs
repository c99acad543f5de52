namespace DroneDelivery.Contracts;

/// <summary>The body of <c>PUT /api/dronedeliveries/{deliveryId}</c>: what the drone must fly.</summary>
public sealed record DroneAssignmentRequest
{
    public string? OwnerId { get; init; }

    public string? PickupLocation { get; init; }

    public string? DropoffLocation { get; init; }

    public DateTimeOffset? PickupTime { get; init; }

    public bool? Expedited { get; init; }

    public string? PackageId { get; init; }

    public void Validate(FieldErrors errors)
    {
        errors.RequireTrip(OwnerId, PickupLocation, DropoffLocation, PickupTime);
        errors.CheckTimes(PickupTime);
        errors.RequireIdentifier("packageId", PackageId);
    }
}

/// <summary>A delivery's drone and the utilization it is billed for.</summary>
public sealed record DroneAssignment(
    string DeliveryId,
    string DroneId,
    string OwnerId,
    int Year,
    int Month,
    double TraveledMiles,
    double AssignedHours);

/// <summary><c>GET /api/dronedeliveries/utilization</c>: an owner's drone use in a month.</summary>
public sealed record DroneUtilization(string OwnerId, int Year, int Month, double TraveledMiles, double AssignedHours);
