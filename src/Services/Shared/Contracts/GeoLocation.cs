using System.Globalization;

namespace DroneDelivery.Contracts;

/// <summary>A point on Earth written as <c>"latitude,longitude"</c> in decimal degrees, e.g. <c>"47.64,-122.13"</c>.</summary>
public readonly record struct GeoLocation(double Latitude, double Longitude)
{
    public const string Rule = "must be \"latitude,longitude\" in decimal degrees (latitude -90..90, longitude -180..180)";

    private const double EarthRadiusMiles = 3958.8;

    public static bool TryParse(string? text, out GeoLocation location)
    {
        location = default;
        if (string.IsNullOrWhiteSpace(text))
        {
            return false;
        }

        var comma = text.IndexOf(',', StringComparison.Ordinal);
        if (comma < 0
            || !double.TryParse(text.AsSpan(0, comma), NumberStyles.Float, CultureInfo.InvariantCulture, out var latitude)
            || !double.TryParse(text.AsSpan(comma + 1), NumberStyles.Float, CultureInfo.InvariantCulture, out var longitude)
            || latitude is < -90 or > 90 || double.IsNaN(latitude)
            || longitude is < -180 or > 180 || double.IsNaN(longitude))
        {
            return false;
        }

        location = new GeoLocation(latitude, longitude);
        return true;
    }

    /// <summary>Great-circle (haversine) distance in statute miles.</summary>
    public double MilesTo(GeoLocation other)
    {
        static double Radians(double degrees) => degrees * Math.PI / 180;
        var dLat = Radians(other.Latitude - Latitude);
        var dLon = Radians(other.Longitude - Longitude);
        var a = Math.Pow(Math.Sin(dLat / 2), 2) +
                Math.Cos(Radians(Latitude)) * Math.Cos(Radians(other.Latitude)) * Math.Pow(Math.Sin(dLon / 2), 2);
        return 2 * EarthRadiusMiles * Math.Asin(Math.Min(1, Math.Sqrt(a)));
    }

    public override string ToString() =>
        string.Create(CultureInfo.InvariantCulture, $"{Latitude},{Longitude}");
}
