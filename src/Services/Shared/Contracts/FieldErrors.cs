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
