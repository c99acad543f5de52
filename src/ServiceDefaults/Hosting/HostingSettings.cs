using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.ServiceDefaults.Hosting;

/// <summary>Limits of the HTTP server (section <c>Hosting</c>).</summary>
public sealed class HostingSettings
{
    /// <summary>Largest request body accepted, in bytes; larger bodies get 413. Default 1 MiB.</summary>
    [Range(1024, 64 * 1024 * 1024)]
    public long MaxRequestBodySize { get; set; } = 1024 * 1024;
}
