using System.Net;

namespace DroneDelivery.LoadDriver.Running;

/// <summary>The driver's HTTP clients: a <see cref="SocketsHttpHandler"/> with nothing between it and the target.</summary>
internal static class DriverHttp
{
    public static HttpMessageInvoker CreateInvoker(int maxConnections, HttpSettings settings)
    {
        var handler = new SocketsHttpHandler
        {
            MaxConnectionsPerServer = maxConnections,
            // Load goes to the target given, never through a proxy picked up from the environment.
            UseProxy = false,
            AllowAutoRedirect = false,
            UseCookies = false,
            AutomaticDecompression = DecompressionMethods.None,
            ConnectTimeout = settings.EffectiveConnectTimeout,
            PooledConnectionLifetime = Timeout.InfiniteTimeSpan,
            PooledConnectionIdleTimeout = TimeSpan.FromMinutes(2),
        };
        return new HttpMessageInvoker(handler, disposeHandler: true);
    }
}
