namespace DroneDelivery.Contracts;

/// <summary>The body of <c>PUT /api/packages/{id}</c>.</summary>
public sealed record PackageUpsert
{
    public string? DeliveryId { get; init; }

    public string? OwnerId { get; init; }

    public PackageSize? Size { get; init; }

    /// <summary>Kilograms, greater than 0.</summary>
    public double? Weight { get; init; }

    public string? Tag { get; init; }

    /// <summary>The billing period (see <see cref="BillingPeriod"/>).</summary>
    public int? Year { get; init; }

    public int? Month { get; init; }

    public void Validate(FieldErrors errors)
    {
        errors.RequireIdentifier("deliveryId", DeliveryId);
        errors.RequireIdentifier("ownerId", OwnerId);
        errors.Require("size", Size);
        errors.Check(Weight is > 0 and <= PackageInfo.MaxWeight, "weight",
            $"weight is required and must be greater than 0 and at most {PackageInfo.MaxWeight} (kg).");
        errors.Check(Tag is null || Tag.Length <= DeliveryRequest.MaxTagLength, "tag",
            $"tag must be at most {DeliveryRequest.MaxTagLength} characters.");
        errors.Check(Year is >= BillingPeriod.MinYear and <= BillingPeriod.MaxYear, "year",
            $"year is required and must be between {BillingPeriod.MinYear} and {BillingPeriod.MaxYear}.");
        errors.Check(Month is >= 1 and <= 12, "month", "month is required and must be between 1 and 12.");
    }
}

/// <summary>A package as Package stores and returns it.</summary>
public sealed record PackageRecord(
    string PackageId,
    string DeliveryId,
    string OwnerId,
    PackageSize Size,
    double Weight,
    string? Tag,
    int Year,
    int Month);

/// <summary><c>GET /api/packages/summary</c>: an owner's packages in a month.</summary>
public sealed record PackageSummary(string OwnerId, int Year, int Month, long Count, double TotalWeight);
