using DroneDelivery.Lab.Deployment;
using DroneDelivery.LocalProcesses;
using StackExchange.Redis;
using Xunit;

namespace DroneDelivery.Lab.Tests;

/// <summary>The lab's own commands against a real redis-server on loopback.</summary>
public sealed class RedisCommandsTests : IAsyncLifetime
{
    private RedisServer _redis = null!;
    private ConnectionMultiplexer _client = null!;

    public async Task InitializeAsync()
    {
        _redis = await RedisServer.StartAsync(new RedisServerOptions());
        _client = await ConnectionMultiplexer.ConnectAsync($"{_redis.ConnectionString},allowAdmin=true");
    }

    public async Task DisposeAsync()
    {
        await _client.DisposeAsync();
        await _redis.DisposeAsync();
    }

    private IServer Server => _client.GetServer(_client.GetEndPoints().Single());

    [Fact]
    public async Task Fill_stores_the_working_set_with_an_expiry_and_memory_reports_it()
    {
        var written = await RedisCommands.FillAsync(_redis.Port, 2, CancellationToken.None);

        Assert.Equal(2 * 1024, written);
        Assert.Equal(2 * 1024, await Server.DatabaseSizeAsync());
        var database = _client.GetDatabase();
        Assert.Equal(1024, (await database.StringGetAsync("lab:working-set:2047")).Length());
        Assert.InRange((await database.KeyTimeToLiveAsync("lab:working-set:0"))!.Value, TimeSpan.FromMinutes(59), TimeSpan.FromHours(1));
        var (used, max) = await RedisCommands.MemoryAsync(_redis.Port, CancellationToken.None);
        Assert.True(used > 2 * 1024 * 1024, $"used_memory {used}");
        Assert.Equal(0, max);
    }

    [Fact]
    public async Task Reset_empties_the_cache_and_sets_its_limit_and_policy_in_place()
    {
        await _client.GetDatabase().StringSetAsync("before", "x");
        await _client.GetDatabase().StringGetAsync("before");

        await RedisCommands.ResetAsync(_redis.Port, "8mb", "allkeys-lru", CancellationToken.None);

        Assert.Equal(0, await Server.DatabaseSizeAsync());
        Assert.Equal("allkeys-lru", (await Server.ConfigGetAsync("maxmemory-policy")).Single().Value);
        Assert.Equal((8L * 1024 * 1024), (await RedisCommands.MemoryAsync(_redis.Port, CancellationToken.None)).Max);
        // CONFIG RESETSTAT: the earlier read no longer counts.
        Assert.Equal("0", Stat(await Server.InfoAsync("stats"), "keyspace_hits"));

        await RedisCommands.ResetAsync(_redis.Port, null, "noeviction", CancellationToken.None);

        Assert.Equal(0, (await RedisCommands.MemoryAsync(_redis.Port, CancellationToken.None)).Max);
        Assert.Equal("noeviction", (await Server.ConfigGetAsync("maxmemory-policy")).Single().Value);
    }

    [Fact]
    public async Task Fill_stops_without_error_when_a_full_cache_refuses_writes()
    {
        await RedisCommands.ResetAsync(_redis.Port, "4mb", "noeviction", CancellationToken.None);

        var written = await RedisCommands.FillAsync(_redis.Port, 16, CancellationToken.None);

        Assert.InRange(written, 1, 12 * 1024);
        Assert.Equal(written, await Server.DatabaseSizeAsync());
        var (used, max) = await RedisCommands.MemoryAsync(_redis.Port, CancellationToken.None);
        Assert.Equal(4L * 1024 * 1024, max);
        Assert.True(used > max, $"used_memory {used} of {max}");
    }

    [Fact]
    public async Task Fill_leaves_a_full_cache_refusing_writes_after_a_step_frees_some_memory()
    {
        await RedisCommands.ResetAsync(_redis.Port, "4mb", "noeviction", CancellationToken.None);
        await RedisCommands.FillAsync(_redis.Port, 16, CancellationToken.None);

        // What a step frees while it runs (idle clients' buffers, a key expiring): here 64 KB of the working set.
        var freed = Server.Keys(pattern: "lab:working-set:[0-9]*", pageSize: 64).Take(64).ToArray();
        Assert.Equal(64, await _client.GetDatabase().KeyDeleteAsync(freed));

        var refused = await Assert.ThrowsAsync<RedisServerException>(() => _client.GetDatabase().StringSetAsync("delivery", new string('x', 1024)));
        Assert.StartsWith("OOM", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Reset_with_a_policy_redis_does_not_know_fails_naming_it()
    {
        var error = await Assert.ThrowsAsync<RedisServerException>(() => RedisCommands.ResetAsync(_redis.Port, null, "evict-everything", CancellationToken.None));

        Assert.Contains("maxmemory-policy", error.Message, StringComparison.Ordinal);
    }

    private static string Stat(IGrouping<string, KeyValuePair<string, string>>[] info, string name) =>
        info.SelectMany(section => section).Single(f => f.Key == name).Value;
}
