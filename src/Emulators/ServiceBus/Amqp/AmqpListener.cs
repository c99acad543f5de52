using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>Accepts AMQP connections on a TCP endpoint (the listener role). Each connection runs independently.</summary>
public sealed class AmqpListener : IAsyncDisposable
{
    private readonly Socket _socket;
    private readonly AmqpListenerOptions _options;
    private readonly CancellationTokenSource _stopping = new();
    private readonly ConcurrentDictionary<AmqpConnection, byte> _connections = new();
    private readonly Task _acceptLoop;

    private AmqpListener(Socket socket, AmqpListenerOptions options)
    {
        _socket = socket;
        _options = options;
        EndPoint = (IPEndPoint)socket.LocalEndPoint!;
        _acceptLoop = Task.Run(AcceptLoopAsync);
    }

    public IPEndPoint EndPoint { get; }

    public IReadOnlyCollection<AmqpConnection> Connections => [.. _connections.Keys];

    /// <summary>Binds <paramref name="endPoint"/> (port 0 picks a free port) and starts accepting.</summary>
    public static AmqpListener Start(IPEndPoint endPoint, AmqpListenerOptions options)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            socket.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
            socket.Bind(endPoint);
            socket.Listen(512);
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        return new AmqpListener(socket, options);
    }

    public async ValueTask DisposeAsync()
    {
        await _stopping.CancelAsync().ConfigureAwait(false);
        _socket.Dispose();
        await _acceptLoop.ConfigureAwait(false);
        var closing = _connections.Keys.Select(c => c.CloseAsync(new Error { Condition = ErrorCondition.ConnectionForced, Description = "The listener is shutting down." }));
        await Task.WhenAll(closing).ConfigureAwait(false);
        _stopping.Dispose();
    }

    private async Task AcceptLoopAsync()
    {
        while (!_stopping.IsCancellationRequested)
        {
            Socket client;
            try
            {
                client = await _socket.AcceptAsync(_stopping.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException)
            {
                if (_stopping.IsCancellationRequested)
                {
                    return;
                }

                continue;
            }

            _ = Task.Run(() => ServeAsync(client));
        }
    }

    private async Task ServeAsync(Socket client)
    {
        var connection = await AmqpConnection.AcceptAsync(client, _options, _stopping.Token).ConfigureAwait(false);
        if (connection is null)
        {
            return;
        }

        _connections[connection] = 0;
        connection.Closed += (c, error) =>
        {
            _connections.TryRemove(c, out _);
            if (error is not null && error.Condition != ErrorCondition.ConnectionForced)
            {
                _options.ConnectionFailed?.Invoke(c, error);
            }
        };
        if (connection.IsClosed)
        {
            _connections.TryRemove(connection, out _);
        }
    }
}
