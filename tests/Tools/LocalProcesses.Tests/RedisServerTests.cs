using System.Net.Sockets;
using System.Text;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.LocalProcesses.Tests;

public class RedisServerTests
{
    [Fact]
    public async Task Starts_a_real_redis_server_on_loopback_and_stops_it()
    {
        var server = await RedisServer.StartAsync(new RedisServerOptions { MaxMemory = "8mb" });
        var port = server.Port;

        Assert.Equal("+PONG", await SendAsync(port, "PING"));
        Assert.Contains("8388608", await SendAsync(port, "CONFIG GET maxmemory", lines: 5));

        await server.DisposeAsync();
        Assert.False(FreePort.IsListening(port));
    }

    private static async Task<string> SendAsync(int port, string command, int lines = 1)
    {
        using var client = new TcpClient();
        await client.ConnectAsync("127.0.0.1", port);
        var stream = client.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes(command + "\r\n"));
        using var reader = new StreamReader(stream, Encoding.ASCII);
        var reply = new StringBuilder();
        for (var i = 0; i < lines; i++)
        {
            reply.AppendLine(await reader.ReadLineAsync());
        }

        return reply.ToString().Trim();
    }
}
