using System.Net;
using System.Net.Sockets;

namespace DroneDelivery.LocalProcesses;

/// <summary>Loopback TCP ports nobody is listening on.</summary>
public static class FreePort
{
    // Ports handed out by this process: a port is released as soon as it is found free, so two
    // calls in a row could otherwise pick the same one before either caller binds it.
    private static readonly HashSet<int> HandedOut = [];

    /// <summary>
    /// Asks the kernel for an ephemeral port on 127.0.0.1 and releases it at once. Another process
    /// could take it before the caller binds it; callers that start a listener should retry on
    /// "address in use" rather than assume the port stays free.
    /// </summary>
    public static int Next()
    {
        while (true)
        {
            using var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            if (Reserve(((IPEndPoint)listener.LocalEndpoint).Port) is { } port)
            {
                return port;
            }
        }
    }

    /// <summary>
    /// A free loopback port below the kernel's ephemeral range, for a server that clients may try
    /// to reach before it listens. A client connecting to a free port inside that range can be
    /// given that same port as its own local port and connect to itself (a TCP simultaneous open),
    /// which looks like an open connection that never answers; a cluster's fixed service ports
    /// never meet this.
    /// </summary>
    public static int NextOutsideEphemeralRange()
    {
        var lowest = EphemeralRangeStart();
        for (var attempt = 0; attempt < 1000; attempt++)
        {
            var port = Random.Shared.Next(10_000, lowest);
            try
            {
                using var listener = new TcpListener(IPAddress.Loopback, port);
                listener.Start();
                if (Reserve(port) is not null)
                {
                    return port;
                }
            }
            catch (SocketException)
            {
                // Taken; try another.
            }
        }

        throw new InvalidOperationException($"No free loopback port between 10000 and {lowest}.");
    }

    private static int? Reserve(int port)
    {
        lock (HandedOut)
        {
            return HandedOut.Add(port) ? port : null;
        }
    }

    private static int EphemeralRangeStart()
    {
        // Linux publishes the range; elsewhere assume the IANA dynamic range.
        const string RangeFile = "/proc/sys/net/ipv4/ip_local_port_range";
        return File.Exists(RangeFile) && int.TryParse(File.ReadAllText(RangeFile).Split((char[])['\t', ' '], StringSplitOptions.RemoveEmptyEntries)[0], out var start) && start > 11_000
            ? start
            : 49_152;
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
