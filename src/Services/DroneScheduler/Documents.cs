using DroneDelivery.Contracts;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.DroneScheduler;

/// <summary>
/// One delivery's drone use, billed to its owner's month: the document the case study's query reads.
/// <c>partitionKey</c> holds the delivery id; the container is partitioned by it (baseline) or by
/// <c>ownerId</c> (step A4) — both fields are always present, so the same documents fit either.
/// </summary>
public sealed record UtilizationDocument(
    string Id,
    string PartitionKey,
    string Type,
    string OwnerId,
    int Year,
    int Month,
    string DeliveryId,
    string DroneId,
    double TraveledMiles,
    double AssignedHours)
{
    public const string DocumentType = "DroneUtilization";

    public static UtilizationDocument For(string deliveryId, string droneId, string ownerId, BillingPeriod period, FlightPlan plan) =>
        new(deliveryId, deliveryId, DocumentType, ownerId, period.Year, period.Month, deliveryId, droneId, plan.Miles, plan.Hours);

    /// <summary>The partition key value of this document in a container partitioned by <paramref name="partitionKeyPath"/>.</summary>
    public PartitionKey PartitionKeyIn(string partitionKeyPath) =>
        new(partitionKeyPath == UtilizationSettings.ByOwner ? OwnerId : PartitionKey);
}

/// <summary>A delivery's drone assignment (container <c>Drones:ContainerId</c>, partitioned by <c>/id</c> = delivery id).</summary>
internal sealed record DroneAssignmentDocument(
    string Id,
    string DroneId,
    string OwnerId,
    string PackageId,
    string PickupLocation,
    string DropoffLocation,
    DateTimeOffset PickupTime,
    bool Expedited,
    int Year,
    int Month,
    double TraveledMiles,
    double AssignedHours)
{
    public DroneAssignment ToAssignment() => new(Id, DroneId, OwnerId, Year, Month, TraveledMiles, AssignedHours);

    /// <summary>Same flight (the assignment time aside): a repeated request.</summary>
    public bool SameFlight(DroneAssignmentDocument other) => this == other;
}

/// <summary>
/// What a delivery costs in drone time: the great-circle distance from pickup to dropoff, flown at
/// cruise speed (faster when expedited), plus a fixed time for loading and handing over.
/// </summary>
public readonly record struct FlightPlan(double Miles, double Hours)
{
    public const double CruiseSpeedMph = 40;
    public const double ExpeditedSpeedMph = 60;
    public const double HandlingHours = 0.25;

    public static FlightPlan For(GeoLocation pickup, GeoLocation dropoff, bool expedited)
    {
        var miles = pickup.MilesTo(dropoff);
        var hours = miles / (expedited ? ExpeditedSpeedMph : CruiseSpeedMph) + HandlingHours;
        return new FlightPlan(Math.Round(miles, 3), Math.Round(hours, 3));
    }
}

/// <summary>Which drone of the fleet flies a delivery: a stable hash of the delivery id, so a repeated request gets the same drone.</summary>
public static class DroneFleet
{
    public static string DroneFor(string deliveryId, int fleetSize)
    {
        // FNV-1a: stable across processes and versions, unlike string.GetHashCode.
        var hash = 2166136261u;
        foreach (var c in deliveryId)
        {
            hash = (hash ^ c) * 16777619u;
        }

        return $"drone-{hash % (uint)fleetSize + 1:D4}";
    }
}
