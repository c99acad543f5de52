using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.ServiceClients.Backends;

/// <summary>The three backend services Gateway and Workflow call (section <c>Backends</c>).</summary>
public sealed class BackendsSettings
{
    public BackendEndpoint Delivery { get; set; } = new() { BaseAddress = new Uri("http://delivery/") };

    public BackendEndpoint Package { get; set; } = new() { BaseAddress = new Uri("http://package/") };

    public BackendEndpoint DroneScheduler { get; set; } = new() { BaseAddress = new Uri("http://dronescheduler/") };

    /// <summary>The endpoint of the backend named <paramref name="backend"/> (one of <see cref="BackendNames"/>).</summary>
    public BackendEndpoint For(string backend) => backend switch
    {
        BackendNames.Delivery => Delivery,
        BackendNames.Package => Package,
        BackendNames.DroneScheduler => DroneScheduler,
        _ => throw new ArgumentOutOfRangeException(nameof(backend), backend, "Unknown backend."),
    };
}

/// <summary>Where one backend is and how long a call to it may take.</summary>
public sealed class BackendEndpoint : IValidatableObject
{
    /// <summary>
    /// Absolute http(s) address of the service. Defaults are the Kubernetes Service names
    /// (<c>http://delivery/</c>, <c>http://package/</c>, <c>http://dronescheduler/</c>).
    /// </summary>
    [Required]
    public Uri? BaseAddress { get; set; }

    /// <summary>
    /// Limit for one call to this backend including its retries (hh:mm:ss[.fff]); past it the call fails
    /// as timed out. Unset: <c>Resilience:TotalRequestTimeout</c> (default 30 s). Range 10 ms – 10 min.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00.010", "00:10:00")]
    public TimeSpan? Timeout { get; set; }

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (BaseAddress is { } address && (!address.IsAbsoluteUri || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps)))
        {
            yield return new ValidationResult("BaseAddress must be an absolute http or https address.", [nameof(BaseAddress)]);
        }
    }
}

/// <summary>The backends' names: named HttpClients, telemetry tags and problem-details texts.</summary>
public static class BackendNames
{
    public const string Delivery = "delivery";
    public const string Package = "package";
    public const string DroneScheduler = "dronescheduler";

    public static IReadOnlyList<string> All { get; } = [Delivery, Package, DroneScheduler];
}
