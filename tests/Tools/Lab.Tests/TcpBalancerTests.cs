using System.Net;
using System.Net.Sockets;
using System.Text;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

public class TcpBalancerTests
{
    [Fact]
    public async Task New_connections_are_spread_round_robin_over_the_replicas()
    {
        await using var a = new NamedServer("replica-a");
        await using var b = new NamedServer("replica-b");
        await using var balancer = new TcpBalancer("svc", 0, [a.Port, b.Port]);

        var answers = new List<string>();
        for (var i = 0; i < 6; i++)
        {
            answers.Add(await AskAsync(balancer.Port));
        }

        Assert.Equal(3, answers.Count(x => x == "replica-a"));
        Assert.Equal(3, answers.Count(x => x == "replica-b"));
    }

    [Fact]
    public async Task A_stopped_replica_is_skipped()
    {
        await using var a = new NamedServer("replica-a");
        var stoppedPort = FreePort.Next();
        await using var balancer = new TcpBalancer("svc", 0, [stoppedPort, a.Port]);

        for (var i = 0; i < 4; i++)
        {
            Assert.Equal("replica-a", await AskAsync(balancer.Port));
        }
    }

    [Fact]
    public async Task Replicas_can_be_replaced_while_running()
    {
        await using var a = new NamedServer("replica-a");
        await using var b = new NamedServer("replica-b");
        await using var balancer = new TcpBalancer("svc", 0, [a.Port]);
        Assert.Equal("replica-a", await AskAsync(balancer.Port));

        balancer.BackendPorts = [b.Port];

        Assert.Equal("replica-b", await AskAsync(balancer.Port));
        Assert.Equal("replica-b", await AskAsync(balancer.Port));
    }

    [Fact]
    public async Task Bytes_flow_both_ways_through_the_balancer()
    {
        await using var echo = new EchoServer();
        await using var balancer = new TcpBalancer("svc", 0, [echo.Port]);
        using var client = new TcpClient();
        await client.ConnectAsync(IPAddress.Loopback, balancer.Port);
        var payload = Enumerable.Range(0, 200_000).Select(i => (byte)i).ToArray();

        var stream = client.GetStream();
        var send = Task.Run(async () =>
        {
            await stream.WriteAsync(payload);
            client.Client.Shutdown(SocketShutdown.Send);
        });
        using var received = new MemoryStream();
        await stream.CopyToAsync(received);
        await send;

        Assert.Equal(payload, received.ToArray());
    }

    private static async Task<string> AskAsync(int port)
    {
        using var client = new TcpClient();
        await client.ConnectAsync(IPAddress.Loopback, port);
        using var reader = new StreamReader(client.GetStream(), Encoding.ASCII);
        return await reader.ReadToEndAsync();
    }

    /// <summary>Answers every connection with its name and closes it.</summary>
    private sealed class NamedServer(string name) : LoopbackServer(async socket =>
    {
        await socket.SendAsync(Encoding.ASCII.GetBytes(name));
        socket.Shutdown(SocketShutdown.Both);
    });

    /// <summary>Echoes each connection's bytes back until the client half-closes.</summary>
    private sealed class EchoServer() : LoopbackServer(async socket =>
    {
        using var stream = new NetworkStream(socket);
        await stream.CopyToAsync(stream);
        socket.Shutdown(SocketShutdown.Send);
    });

    /// <summary>Serves connections on 127.0.0.1, one at a time, until disposed.</summary>
    private abstract class LoopbackServer : IAsyncDisposable
    {
        private readonly TcpListener _listener = new(IPAddress.Loopback, 0);
        private readonly CancellationTokenSource _stopping = new();
        private readonly Task _loop;

        protected LoopbackServer(Func<Socket, Task> serve)
        {
            _listener.Start();
            _loop = Task.Run(async () =>
            {
                try
                {
                    while (true)
                    {
                        using var socket = await _listener.AcceptSocketAsync(_stopping.Token);
                        await serve(socket);
                    }
                }
                catch (Exception e) when (e is OperationCanceledException or SocketException or IOException)
                {
                }
            });
        }

        public int Port => ((IPEndPoint)_listener.LocalEndpoint).Port;

        // The pending accept is cancelled before the listener stops, so the loop never calls
        // accept on a stopped listener.
        public async ValueTask DisposeAsync()
        {
            await _stopping.CancelAsync();
            await _loop;
            _listener.Stop();
            _stopping.Dispose();
        }
    }
}
