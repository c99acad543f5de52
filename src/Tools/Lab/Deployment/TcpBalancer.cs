using System.Net;
using System.Net.Sockets;

namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// A round-robin TCP balancer on 127.0.0.1, the local stand-in for a Kubernetes Service in front of
/// a service's replicas. Like kube-proxy it balances CONNECTIONS, not requests: a client's pooled
/// connection stays on one replica until the client recycles it, which is exactly why clients bound
/// their connection lifetime. Replicas can be swapped while it runs (a restart with new settings).
/// </summary>
internal sealed class TcpBalancer : IAsyncDisposable
{
    private readonly TcpListener _listener;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Task _acceptLoop;
    private readonly Lock _connectionsLock = new();
    private readonly HashSet<Task> _connections = [];
    private volatile IPEndPoint[] _backends;
    private long _next;

    public TcpBalancer(string name, int port, IEnumerable<int> backendPorts)
    {
        Name = name;
        _backends = [.. backendPorts.Select(p => new IPEndPoint(IPAddress.Loopback, p))];
        _listener = new TcpListener(IPAddress.Loopback, port);
        _listener.Server.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
        _listener.Start(backlog: 1024);
        Port = ((IPEndPoint)_listener.LocalEndpoint).Port;
        _acceptLoop = Task.Run(AcceptLoopAsync);
    }

    public string Name { get; }

    public int Port { get; }

    public Uri Address => new($"http://127.0.0.1:{Port}");

    /// <summary>The replicas new connections are spread over; existing connections keep their replica.</summary>
    public IReadOnlyList<int> BackendPorts
    {
        get => [.. _backends.Select(b => b.Port)];
        set => _backends = [.. value.Select(p => new IPEndPoint(IPAddress.Loopback, p))];
    }

    public async ValueTask DisposeAsync()
    {
        // The pending accept ends by its cancellation before the listener stops: stopping first
        // would let a loop between its check and its next accept call find the listener gone.
        await _stopping.CancelAsync();
        await _acceptLoop.ConfigureAwait(false);
        _listener.Stop();
        Task[] open;
        lock (_connectionsLock)
        {
            open = [.. _connections];
        }

        await Task.WhenAll(open).ConfigureAwait(false);
        _stopping.Dispose();
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stopping.IsCancellationRequested)
        {
            Socket client;
            try
            {
                client = await _listener.AcceptSocketAsync(_stopping.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException)
            {
                return;
            }

            var connection = ServeAsync(client);
            lock (_connectionsLock)
            {
                _connections.Add(connection);
            }

            _ = connection.ContinueWith(
                done =>
                {
                    lock (_connectionsLock)
                    {
                        _connections.Remove(done);
                    }
                },
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously,
                TaskScheduler.Default);
        }
    }

    private async Task ServeAsync(Socket client)
    {
        client.NoDelay = true;
        using (client)
        {
            var backends = _backends;
            if (backends.Length == 0)
            {
                return;
            }

            // Try each replica once, starting from the next in turn, so one stopped replica does not
            // fail connections while others are up.
            var start = Interlocked.Increment(ref _next);
            for (var attempt = 0; attempt < backends.Length; attempt++)
            {
                var backend = backends[(int)((start + attempt) % backends.Length)];
                using var upstream = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
                try
                {
                    await upstream.ConnectAsync(backend, _stopping.Token).ConfigureAwait(false);
                }
                catch (SocketException)
                {
                    continue;
                }
                catch (OperationCanceledException)
                {
                    return;
                }

                await PumpAsync(client, upstream).ConfigureAwait(false);
                return;
            }
        }
    }

    private async Task PumpAsync(Socket client, Socket upstream)
    {
        using var both = CancellationTokenSource.CreateLinkedTokenSource(_stopping.Token);
        var toUpstream = CopyAsync(client, upstream, both.Token);
        var toClient = CopyAsync(upstream, client, both.Token);
        await Task.WhenAny(toUpstream, toClient).ConfigureAwait(false);

        // One side finished: let the other drain briefly (half-close), then tear both down.
        var rest = toUpstream.IsCompleted ? toClient : toUpstream;
        if (await Task.WhenAny(rest, Task.Delay(TimeSpan.FromSeconds(5), CancellationToken.None)).ConfigureAwait(false) != rest)
        {
            await both.CancelAsync().ConfigureAwait(false);
        }

        await Task.WhenAll(toUpstream, toClient).ConfigureAwait(false);
    }

    private static async Task CopyAsync(Socket from, Socket to, CancellationToken cancellationToken)
    {
        var buffer = System.Buffers.ArrayPool<byte>.Shared.Rent(16 * 1024);
        try
        {
            while (true)
            {
                var read = await from.ReceiveAsync(buffer, SocketFlags.None, cancellationToken).ConfigureAwait(false);
                if (read == 0)
                {
                    to.Shutdown(SocketShutdown.Send);
                    return;
                }

                await to.SendAsync(buffer.AsMemory(0, read), SocketFlags.None, cancellationToken).ConfigureAwait(false);
            }
        }
        catch (Exception e) when (e is SocketException or OperationCanceledException or ObjectDisposedException)
        {
            // The peer went away or the balancer is stopping; the connection simply ends.
        }
        finally
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(buffer);
        }
    }
}
