using DroneDelivery.LocalProcesses;
using StackExchange.Redis;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>One real redis-server (no memory limit) shared by the tests of a collection, with a client for inspecting keys.</summary>
public sealed class RedisFixture : IAsyncLifetime
{
    private RedisServer? _server;
    private ConnectionMultiplexer? _client;

    public string ConnectionString => _server!.ConnectionString;

    public IDatabase Database => _client!.GetDatabase();

    public async Task InitializeAsync()
    {
        _server = await RedisServer.StartAsync(new RedisServerOptions());
        _client = await ConnectionMultiplexer.ConnectAsync(_server.ConnectionString);
    }

    public async Task DisposeAsync()
    {
        _client?.Dispose();
        if (_server is not null)
        {
            await _server.DisposeAsync();
        }
    }
}

[CollectionDefinition(Name)]
public sealed class RedisCollection : ICollectionFixture<RedisFixture>
{
    public const string Name = "redis";
}
