using System.Net;
using System.Net.Sockets;

namespace DroneDelivery.LocalSystem;

/// <summary>Loopback TCP ports nobody is listening on.</summary>
public static class FreePort
{
    /// <summary>
    /// Asks the kernel for an ephemeral port on 127.0.0.1 and releases it at once. Another process
    /// could take it before the caller binds it; callers that start a listener should retry on
    /// "address in use" rather than assume the port stays free.
    /// </summary>
    public static int Next()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }

    /// <summary>True when something accepts TCP connections on 127.0.0.1:<paramref name="port"/>.</summary>
    public static bool IsListening(int port)
    {
        try
        {
            using var client = new TcpClient();
            client.Connect(IPAddress.Loopback, port);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }
}
