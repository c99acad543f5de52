using System.Globalization;
using StackExchange.Redis;

namespace DroneDelivery.Lab.Deployment;

/// <summary>
/// The few Redis commands the lab itself sends to its local redis-server: reading memory figures,
/// pre-loading a working set and resetting the cache between steps. Each opens a short-lived
/// connection with admin commands allowed (FLUSHALL, CONFIG), which the services' connections never are.
/// </summary>
internal static class RedisCommands
{
    /// <summary>
    /// Stores <paramref name="megabytes"/> MB of earlier deliveries (1 KB values that expire after an
    /// hour), pipelined in batches. It stands for the working set a long-running cache already holds,
    /// so a small maxmemory fills within a short lab step. Stops after the first batch Redis refuses
    /// writes in (a full cache answers OOM), without error, and leaves that cache over its limit by
    /// <see cref="OverflowKilobytes"/> KB; returns the 1 KB values it holds.
    /// </summary>
    public static async Task<int> FillAsync(int port, int megabytes, CancellationToken cancellationToken)
    {
        const int valueSize = 1024;
        const int batch = 500;
        var keys = megabytes * 1024;
        RedisValue value = new string('x', valueSize);
        await using var redis = await ConnectAsync(port).ConfigureAwait(false);
        var database = redis.GetDatabase();
        var written = 0;
        for (var start = 0; start < keys; start += batch)
        {
            cancellationToken.ThrowIfCancellationRequested();
            var writes = StoreWorkingSet(database, start, Math.Min(batch, keys - start), value);
            try
            {
                await Task.WhenAll(writes).WaitAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (RedisServerException)
            {
                // Refused (OOM): count what this batch stored, then stop.
            }

            written += writes.Count(w => w.IsCompletedSuccessfully && w.Result);
            if (writes.Any(w => !w.IsCompletedSuccessfully))
            {
                await OverflowAsync(redis, start + batch, value, cancellationToken).ConfigureAwait(false);
                written += OverflowKilobytes;
                break;
            }
        }

        return written;
    }

    /// <summary>How far past its limit <see cref="FillAsync"/> leaves a cache it filled: far more than a step frees.</summary>
    private const int OverflowKilobytes = 4 * 1024;

    /// <summary>
    /// Redis checks its limit before each write, so a cache filled to just over it takes writes again as soon as
    /// it frees a few kilobytes (idle clients' buffers shrink, a key expires): a step would see only some of its
    /// writes refused, a smaller share the fewer it makes. The limit lifted for a moment, more of the working set
    /// goes in, and the cache is left over its limit for good, as the case study's was (noeviction evicts nothing).
    /// </summary>
    private static async Task OverflowAsync(ConnectionMultiplexer redis, int next, RedisValue value, CancellationToken cancellationToken)
    {
        var server = Server(redis);
        var limit = (await server.ConfigGetAsync("maxmemory").WaitAsync(cancellationToken).ConfigureAwait(false)).Single().Value;
        await server.ConfigSetAsync("maxmemory", "0").WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await Task.WhenAll(StoreWorkingSet(redis.GetDatabase(), next, OverflowKilobytes, value)).WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            await server.ConfigSetAsync("maxmemory", limit).ConfigureAwait(false);
        }
    }

    /// <summary>Sends <paramref name="count"/> working-set values from key number <paramref name="first"/> on, pipelined; each expires after an hour.</summary>
    private static List<Task<bool>> StoreWorkingSet(IDatabase database, int first, int count, RedisValue value) =>
        [.. Enumerable.Range(first, count).Select(i => database.StringSetAsync($"lab:working-set:{i}", value, TimeSpan.FromHours(1)))];

    /// <summary>Redis' <c>used_memory</c> and <c>maxmemory</c>, in bytes (<c>INFO memory</c>).</summary>
    public static async Task<(long Used, long Max)> MemoryAsync(int port, CancellationToken cancellationToken)
    {
        await using var redis = await ConnectAsync(port).ConfigureAwait(false);
        var info = await Server(redis).InfoAsync("memory").WaitAsync(cancellationToken).ConfigureAwait(false);
        var fields = info.SelectMany(section => section).ToDictionary(f => f.Key, f => f.Value, StringComparer.Ordinal);
        return (Bytes(fields, "used_memory"), Bytes(fields, "maxmemory"));
    }

    /// <summary>
    /// Empties the cache and sets its memory limit and policy in place (<c>FLUSHALL</c>, <c>CONFIG SET</c>,
    /// <c>CONFIG RESETSTAT</c>): a fresh cache for a step without restarting redis-server, so Delivery
    /// keeps its connection. A value redis-server refuses throws its error, which names the setting.
    /// </summary>
    /// <param name="maxMemory">e.g. <c>64mb</c>; null for unlimited.</param>
    public static async Task ResetAsync(int port, string? maxMemory, string policy, CancellationToken cancellationToken)
    {
        await using var redis = await ConnectAsync(port).ConfigureAwait(false);
        var server = Server(redis);
        await server.FlushAllDatabasesAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
        await server.ConfigSetAsync("maxmemory", maxMemory ?? "0").WaitAsync(cancellationToken).ConfigureAwait(false);
        await server.ConfigSetAsync("maxmemory-policy", policy).WaitAsync(cancellationToken).ConfigureAwait(false);
        await server.ConfigResetStatisticsAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    private static Task<ConnectionMultiplexer> ConnectAsync(int port) =>
        ConnectionMultiplexer.ConnectAsync(new ConfigurationOptions
        {
            EndPoints = { { "127.0.0.1", port } },
            AllowAdmin = true,
            AbortOnConnectFail = true,
        });

    private static IServer Server(ConnectionMultiplexer redis) => redis.GetServer(redis.GetEndPoints().Single());

    private static long Bytes(Dictionary<string, string> fields, string name) =>
        fields.TryGetValue(name, out var text)
            ? long.Parse(text, NumberStyles.None, CultureInfo.InvariantCulture)
            : throw new InvalidDataException($"redis-server's INFO memory has no {name}.");
}
