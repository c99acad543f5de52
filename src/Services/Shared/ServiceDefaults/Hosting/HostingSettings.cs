using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.ServiceDefaults.Hosting;

/// <summary>Limits of the HTTP server (section <c>Hosting</c>).</summary>
public sealed class HostingSettings
{
    /// <summary>Largest request body accepted, in bytes; larger bodies get 413. Default 1 MiB.</summary>
    [Range(1024, 64 * 1024 * 1024)]
    public long MaxRequestBodySize { get; set; } = 1024 * 1024;

    /// <summary>
    /// Largest total size of a request's headers, in bytes (request line excluded); larger: 431. Default
    /// 32 KiB (Kestrel's), room for an Entra ID token with many claims.
    /// </summary>
    [Range(4096, 1024 * 1024)]
    public int MaxRequestHeadersTotalSize { get; set; } = 32 * 1024;

    /// <summary>Most headers a request may have; more: 431. Default 100 (Kestrel's).</summary>
    [Range(10, 1000)]
    public int MaxRequestHeaderCount { get; set; } = 100;
}
