using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// The few Redis commands the lab itself sends (the services use StackExchange.Redis): reading
/// memory figures and pre-loading a working set, over plain RESP on loopback.
/// </summary>
internal static class RedisCommands
{
    /// <summary>
    /// Stores <paramref name="megabytes"/> MB of earlier deliveries (1 KB values that expire after an
    /// hour), pipelined. It stands for the working set a long-running cache already holds, so a small
    /// maxmemory fills within a short lab step. Stops early, without error, when Redis refuses writes.
    /// </summary>
    public static async Task<int> FillAsync(int port, int megabytes, CancellationToken cancellationToken)
    {
        const int valueSize = 1024;
        const int batch = 500;
        var keys = megabytes * 1024;
        var value = new string('x', valueSize);
        using var client = new TcpClient();
        await client.ConnectAsync(IPAddress.Loopback, port, cancellationToken).ConfigureAwait(false);
        var stream = client.GetStream();
        using var reader = new StreamReader(stream, Encoding.ASCII, false, 64 * 1024, leaveOpen: true);
        var written = 0;
        for (var start = 0; start < keys; start += batch)
        {
            var builder = new StringBuilder();
            var count = Math.Min(batch, keys - start);
            for (var i = start; i < start + count; i++)
            {
                Command(builder, "SET", $"lab:working-set:{i}", value, "EX", "3600");
            }

            await stream.WriteAsync(Encoding.ASCII.GetBytes(builder.ToString()), cancellationToken).ConfigureAwait(false);
            var refused = false;
            for (var i = 0; i < count; i++)
            {
                var reply = await reader.ReadLineAsync(cancellationToken).ConfigureAwait(false);
                if (reply is null)
                {
                    return written;
                }

                if (reply.StartsWith('-'))
                {
                    refused = true;
                }
                else
                {
                    written++;
                }
            }

            if (refused)
            {
                break;
            }
        }

        return written;
    }

    /// <summary>Redis' <c>used_memory</c> and <c>maxmemory</c>, in bytes.</summary>
    public static async Task<(long Used, long Max)> MemoryAsync(int port, CancellationToken cancellationToken)
    {
        using var client = new TcpClient();
        await client.ConnectAsync(IPAddress.Loopback, port, cancellationToken).ConfigureAwait(false);
        var stream = client.GetStream();
        var request = new StringBuilder();
        Command(request, "INFO", "memory");
        await stream.WriteAsync(Encoding.ASCII.GetBytes(request.ToString()), cancellationToken).ConfigureAwait(false);
        using var reader = new StreamReader(stream, Encoding.ASCII);
        var header = await reader.ReadLineAsync(cancellationToken).ConfigureAwait(false) ?? string.Empty;
        var length = int.Parse(header.AsSpan(1), CultureInfo.InvariantCulture);
        var body = new char[length];
        var read = 0;
        while (read < length)
        {
            var n = await reader.ReadAsync(body.AsMemory(read), cancellationToken).ConfigureAwait(false);
            if (n == 0)
            {
                break;
            }

            read += n;
        }

        long used = 0, max = 0;
        foreach (var line in new string(body, 0, read).Split("\r\n"))
        {
            if (line.StartsWith("used_memory:", StringComparison.Ordinal))
            {
                used = long.Parse(line.AsSpan("used_memory:".Length), CultureInfo.InvariantCulture);
            }
            else if (line.StartsWith("maxmemory:", StringComparison.Ordinal))
            {
                max = long.Parse(line.AsSpan("maxmemory:".Length), CultureInfo.InvariantCulture);
            }
        }

        return (used, max);
    }

    /// <summary>
    /// Empties the cache and sets its memory limit and policy in place (<c>FLUSHALL</c>, <c>CONFIG SET</c>):
    /// a fresh cache for a step without restarting redis-server, so Delivery keeps its connection.
    /// </summary>
    /// <param name="maxMemory">e.g. <c>64mb</c>; null for unlimited.</param>
    public static async Task ResetAsync(int port, string? maxMemory, string policy, CancellationToken cancellationToken)
    {
        using var client = new TcpClient();
        await client.ConnectAsync(IPAddress.Loopback, port, cancellationToken).ConfigureAwait(false);
        var stream = client.GetStream();
        var request = new StringBuilder();
        string[][] commands = [["FLUSHALL"], ["CONFIG", "SET", "maxmemory", maxMemory ?? "0"], ["CONFIG", "SET", "maxmemory-policy", policy], ["CONFIG", "RESETSTAT"]];
        foreach (var command in commands)
        {
            Command(request, command);
        }

        await stream.WriteAsync(Encoding.ASCII.GetBytes(request.ToString()), cancellationToken).ConfigureAwait(false);
        using var reader = new StreamReader(stream, Encoding.ASCII);
        foreach (var command in commands)
        {
            var reply = await reader.ReadLineAsync(cancellationToken).ConfigureAwait(false);
            if (reply is null || !reply.StartsWith('+'))
            {
                throw new InvalidOperationException($"redis-server refused {string.Join(' ', command)}: {reply ?? "connection closed"}");
            }
        }
    }

    private static void Command(StringBuilder builder, params string[] parts)
    {
        builder.Append('*').Append(parts.Length).Append("\r\n");
        foreach (var part in parts)
        {
            builder.Append('$').Append(Encoding.ASCII.GetByteCount(part)).Append("\r\n").Append(part).Append("\r\n");
        }
    }
}
