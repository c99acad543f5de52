namespace DroneDelivery.Contracts;

/// <summary>
/// The invalid or missing fields of one request, keyed by their JSON path (e.g. <c>packageInfo.weight</c>);
/// answered as one 400 validation problem listing them all.
/// </summary>
public sealed class FieldErrors
{
    private readonly Dictionary<string, List<string>> _errors = new(StringComparer.Ordinal);

    public bool IsEmpty => _errors.Count == 0;

    public void Add(string field, string message)
    {
        if (!_errors.TryGetValue(field, out var messages))
        {
            _errors[field] = messages = [];
        }

        messages.Add(message);
    }

    /// <summary>Adds an error unless <paramref name="valid"/>; returns <paramref name="valid"/>.</summary>
    public bool Check(bool valid, string field, string message)
    {
        if (!valid)
        {
            Add(field, message);
        }

        return valid;
    }

    public void RequireIdentifier(string field, string? value) =>
        Check(Identifiers.IsValid(value), field, $"{field} is required and {Identifiers.Rule}.");

    public void RequireLocation(string field, string? value) =>
        Check(GeoLocation.TryParse(value, out _), field, $"{field} is required and {GeoLocation.Rule}.");

    public void Require<T>(string field, T? value)
        where T : struct =>
        Check(value.HasValue, field, $"{field} is required.");

    /// <summary>
    /// What a delivery and a drone's flight for it both need: whose it is (<c>ownerId</c>), from where to where
    /// (<c>pickupLocation</c>, <c>dropoffLocation</c>) and when it is picked up (<c>pickupTime</c>).
    /// </summary>
    public void RequireTrip(string? ownerId, string? pickupLocation, string? dropoffLocation, DateTimeOffset? pickupTime)
    {
        RequireIdentifier("ownerId", ownerId);
        RequireLocation("pickupLocation", pickupLocation);
        RequireLocation("dropoffLocation", dropoffLocation);
        Require("pickupTime", pickupTime);
    }

    /// <summary>
    /// The times of a delivery, where given: <c>pickupTime</c> in a billable year
    /// (<see cref="BillingPeriod.MinYear"/>–<see cref="BillingPeriod.MaxYear"/>), and <c>deadline</c> later than it.
    /// </summary>
    public void CheckTimes(DateTimeOffset? pickupTime, DateTimeOffset? deadline = null)
    {
        if (pickupTime is not { } pickup)
        {
            return;
        }

        Check(pickup.Year is >= BillingPeriod.MinYear and <= BillingPeriod.MaxYear, "pickupTime",
            $"pickupTime must be in the years {BillingPeriod.MinYear}-{BillingPeriod.MaxYear}.");
        if (deadline is { } due)
        {
            Check(due > pickup, "deadline", "deadline must be later than pickupTime.");
        }
    }

    /// <summary>Validates a request body, or records that it is missing (<c>A JSON {what} is required.</c>).</summary>
    public void RequireBody<T>(T? body, string what, Action<T, FieldErrors> validate)
        where T : class
    {
        if (body is null)
        {
            Add("body", $"A JSON {what} is required.");
        }
        else
        {
            validate(body, this);
        }
    }

    public IDictionary<string, string[]> ToDictionary() =>
        _errors.ToDictionary(entry => entry.Key, entry => entry.Value.ToArray(), StringComparer.Ordinal);

    public override string ToString() =>
        string.Join("; ", _errors.Select(entry => $"{entry.Key}: {string.Join(" ", entry.Value)}"));
}
