namespace DroneDelivery.Contracts;

/// <summary>
/// The month a delivery is invoiced in: the UTC month of its requested pickup time. Every service
/// derives it the same way, so an invoice's deliveries, packages and drone utilization agree.
/// </summary>
public readonly record struct BillingPeriod(int Year, int Month)
{
    public const int MinYear = 2000;
    public const int MaxYear = 2100;

    public static BillingPeriod Of(DateTimeOffset pickupTime)
    {
        var utc = pickupTime.UtcDateTime;
        return new BillingPeriod(utc.Year, utc.Month);
    }

    /// <summary>
    /// Reads an owner/year/month query (as strings, so that every bad parameter is reported, not only
    /// the first that fails to bind); null with one error per bad parameter.
    /// </summary>
    public static BillingPeriod? ParseQuery(FieldErrors errors, string? ownerId, string? year, string? month)
    {
        errors.RequireIdentifier("ownerId", ownerId);
        var validYear = int.TryParse(year, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var y)
                        && y is >= MinYear and <= MaxYear;
        errors.Check(validYear, "year", $"year is required and must be a whole number between {MinYear} and {MaxYear}.");
        var validMonth = int.TryParse(month, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var m)
                         && m is >= 1 and <= 12;
        errors.Check(validMonth, "month", "month is required and must be a whole number between 1 and 12.");
        return errors.IsEmpty ? new BillingPeriod(y, m) : null;
    }

    public override string ToString() => string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{Year:D4}-{Month:D2}");
}
