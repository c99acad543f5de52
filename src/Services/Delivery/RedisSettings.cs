using System.ComponentModel.DataAnnotations;
using StackExchange.Redis;

namespace DroneDelivery.Delivery;

/// <summary>Where deliveries are kept and for how long (section <c>Redis</c>).</summary>
public sealed class RedisSettings : IValidatableObject
{
    /// <summary>Longest TTL accepted: one year.</summary>
    public const string MaxTtl = "365.00:00:00";

    /// <summary>
    /// StackExchange.Redis configuration string, e.g. <c>127.0.0.1:6379</c> or
    /// <c>name.redis.cache.windows.net:6380,password=...,ssl=True</c> (the password is masked in logs).
    /// Required; <c>abortConnect=false</c> is implied so the service starts while Redis is unreachable.
    /// </summary>
    [Required]
    public string? ConnectionString { get; set; }

    /// <summary>
    /// Time a delivery (and its owner/month summary entry) lives after its last change (hh:mm:ss or
    /// d.hh:mm:ss). Default <c>00:00:00</c> = never expires: the case study's baseline (B1), where keys
    /// pile up until Redis reaches maxmemory. Range 0 – 365 days.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00", MaxTtl)]
    public TimeSpan DeliveryTtl { get; set; } = TimeSpan.Zero;

    /// <summary>
    /// Time a delivery's tracking events live after the last event. Default <c>00:00:00</c> = never
    /// expire (baseline B1). Range 0 – 365 days.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00", MaxTtl)]
    public TimeSpan TrackingEventTtl { get; set; } = TimeSpan.Zero;

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (string.IsNullOrWhiteSpace(ConnectionString))
        {
            yield break;
        }

        string? error = null;
        try
        {
            if (ConfigurationOptions.Parse(ConnectionString).EndPoints.Count == 0)
            {
                error = "ConnectionString names no Redis endpoint (host:port).";
            }
        }
        catch (ArgumentException e)
        {
            error = $"ConnectionString is not a valid StackExchange.Redis configuration: {e.Message}";
        }

        if (error is not null)
        {
            yield return new ValidationResult(error, [nameof(ConnectionString)]);
        }
    }
}
