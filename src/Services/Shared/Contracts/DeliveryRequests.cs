using System.Text.Json.Serialization;

namespace DroneDelivery.Contracts;

public enum ConfirmationType
{
    None,
    FingerPrint,
    Picture,
    Voice,
}

public enum PackageSize
{
    Small,
    Medium,
    Large,
}

/// <summary>The package a client asks to have delivered.</summary>
public sealed record PackageInfo
{
    public const double MaxWeight = 1000;

    public string? PackageId { get; init; }

    public PackageSize? Size { get; init; }

    /// <summary>Weight in kilograms, greater than 0 and at most <see cref="MaxWeight"/>.</summary>
    public double? Weight { get; init; }

    /// <summary>Free text the client attaches (optional, at most 256 characters).</summary>
    public string? Tag { get; init; }
}

/// <summary>
/// What a delivery request and a delivery schedule both say: whose delivery, from where to where, when, and how
/// it is confirmed. Every member is nullable so that a missing field is reported by name instead of failing
/// deserialization; in JSON these come first.
/// </summary>
public abstract record DeliveryTerms
{
    protected DeliveryTerms()
    {
    }

    /// <summary>The terms of a valid request, its optional ones filled in.</summary>
    protected DeliveryTerms(ValidDeliveryRequest terms)
    {
        OwnerId = terms.OwnerId;
        PickupLocation = terms.PickupLocation;
        DropoffLocation = terms.DropoffLocation;
        PickupTime = terms.PickupTime;
        Deadline = terms.Deadline;
        Expedited = terms.Expedited;
        ConfirmationRequired = terms.ConfirmationRequired;
    }

    [JsonPropertyOrder(-1)]
    public string? OwnerId { get; init; }

    [JsonPropertyOrder(-1)]
    public string? PickupLocation { get; init; }

    [JsonPropertyOrder(-1)]
    public string? DropoffLocation { get; init; }

    [JsonPropertyOrder(-1)]
    public DateTimeOffset? PickupTime { get; init; }

    [JsonPropertyOrder(-1)]
    public DateTimeOffset? Deadline { get; init; }

    /// <summary>Optional; false when absent.</summary>
    [JsonPropertyOrder(-1)]
    public bool? Expedited { get; init; }

    /// <summary>Optional; <see cref="ConfirmationType.None"/> when absent.</summary>
    [JsonPropertyOrder(-1)]
    public ConfirmationType? ConfirmationRequired { get; init; }

    /// <summary>Checks the owner, both locations and both times (a deadline after the pickup, in a billable year).</summary>
    protected void ValidateTerms(FieldErrors errors)
    {
        errors.RequireTrip(OwnerId, PickupLocation, DropoffLocation, PickupTime);
        errors.Require("deadline", Deadline);
        errors.CheckTimes(PickupTime, Deadline);
    }
}

/// <summary>A client's delivery request as Ingestion accepts it (<c>POST /api/deliveryrequests</c>).</summary>
public record DeliveryRequest : DeliveryTerms
{
    public const int MaxTagLength = 256;

    public DeliveryRequest()
    {
    }

    /// <summary>A valid request as its client would have sent it, its optional terms filled in.</summary>
    protected DeliveryRequest(ValidDeliveryRequest request)
        : base(request)
    {
        PackageInfo = new PackageInfo
        {
            PackageId = request.PackageId,
            Size = request.PackageSize,
            Weight = request.PackageWeight,
            Tag = request.PackageTag,
        };
    }

    public PackageInfo? PackageInfo { get; init; }

    /// <summary>Checks every field; the valid request when there is no error.</summary>
    public ValidDeliveryRequest? Validate(FieldErrors errors)
    {
        ValidateTerms(errors);
        if (errors.Check(PackageInfo is not null, "packageInfo", "packageInfo is required."))
        {
            errors.RequireIdentifier("packageInfo.packageId", PackageInfo!.PackageId);
            errors.Require("packageInfo.size", PackageInfo.Size);
            errors.Check(PackageInfo.Weight is > 0 and <= PackageInfo.MaxWeight, "packageInfo.weight",
                $"packageInfo.weight is required and must be greater than 0 and at most {PackageInfo.MaxWeight} (kg).");
            errors.Check(PackageInfo.Tag is null || PackageInfo.Tag.Length <= MaxTagLength, "packageInfo.tag",
                $"packageInfo.tag must be at most {MaxTagLength} characters.");
        }

        return errors.IsEmpty
            ? new ValidDeliveryRequest(
                OwnerId!,
                PickupLocation!,
                DropoffLocation!,
                PickupTime!.Value,
                Deadline!.Value,
                Expedited ?? false,
                ConfirmationRequired ?? ConfirmationType.None,
                PackageInfo!.PackageId!,
                PackageInfo.Size!.Value,
                PackageInfo.Weight!.Value,
                PackageInfo.Tag)
            : null;
    }
}

/// <summary>A delivery request whose every field has been checked.</summary>
public sealed record ValidDeliveryRequest(
    string OwnerId,
    string PickupLocation,
    string DropoffLocation,
    DateTimeOffset PickupTime,
    DateTimeOffset Deadline,
    bool Expedited,
    ConfirmationType ConfirmationRequired,
    string PackageId,
    PackageSize PackageSize,
    double PackageWeight,
    string? PackageTag)
{
    [System.Text.Json.Serialization.JsonIgnore]
    public BillingPeriod Period => BillingPeriod.Of(PickupTime);
}

/// <summary>
/// A change of a delivery's schedule (<c>PATCH</c> on Ingestion and on Delivery): any of the four
/// fields, at least one.
/// </summary>
public record RescheduleRequest
{
    public string? PickupLocation { get; init; }

    public string? DropoffLocation { get; init; }

    public DateTimeOffset? PickupTime { get; init; }

    public DateTimeOffset? Deadline { get; init; }

    public bool Validate(FieldErrors errors)
    {
        if (PickupLocation is null && DropoffLocation is null && PickupTime is null && Deadline is null)
        {
            errors.Add("body", "at least one of pickupLocation, dropoffLocation, pickupTime or deadline is required.");
            return false;
        }

        if (PickupLocation is not null)
        {
            errors.RequireLocation("pickupLocation", PickupLocation);
        }

        if (DropoffLocation is not null)
        {
            errors.RequireLocation("dropoffLocation", DropoffLocation);
        }

        errors.CheckTimes(PickupTime, Deadline);
        return errors.IsEmpty;
    }
}

/// <summary>Ingestion's answer to an accepted request.</summary>
public sealed record DeliveryRequestAccepted(string DeliveryId);
