using System.Net;
using System.Net.Sockets;
using Azure.Messaging.ServiceBus;
using DroneDelivery.DroneScheduler;
using DroneDelivery.Services.Tests.Infrastructure;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.DependencyInjection;

namespace DroneDelivery.Services.Tests;

/// <summary>Settings not covered by a behaviour test elsewhere, proven to reach what they configure.</summary>
[Collection(CosmosCollection.Name)]
public sealed class ConfigurationTests(CosmosFixture cosmos)
{
    [Fact]
    public async Task The_fleet_size_decides_which_drones_are_assigned()
    {
        await using var service = await ServiceApp.StartAsync(Definitions.DroneScheduler, cosmos.Settings(new() { ["Drones:FleetSize"] = "1" }));

        var drones = new HashSet<string>();
        for (var i = 0; i < 5; i++)
        {
            var response = await service.Client.PutJsonAsync($"api/dronedeliveries/{Guid.NewGuid():N}", DroneSchedulerTests.Request("owner-fleet", DateTimeOffset.UtcNow));
            drones.Add((await response.ReadAsync<Contracts.DroneAssignment>()).DroneId);
        }

        Assert.Equal(["drone-0001"], drones);
        Assert.True(Enumerable.Range(0, 200).Select(i => DroneFleet.DroneFor($"d-{i}", 100)).Distinct().Count() > 50);
    }

    [Fact]
    public async Task The_drones_container_setting_is_the_container_used()
    {
        await using var service = await ServiceApp.StartAsync(Definitions.DroneScheduler, cosmos.Settings(new() { ["Drones:ContainerId"] = "no-drones-here" }));

        var ready = await service.Client.GetAsync("health/ready");
        var assign = await service.Client.PutJsonAsync($"api/dronedeliveries/{Guid.NewGuid():N}", DroneSchedulerTests.Request("owner-x", DateTimeOffset.UtcNow));
        var read = await service.Client.GetAsync($"api/dronedeliveries/{Guid.NewGuid():N}");

        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        Assert.Contains("no-drones-here does not exist", await ready.Content.ReadAsStringAsync());
        Assert.Equal(HttpStatusCode.BadGateway, assign.StatusCode);

        // A missing container is a deployment fault, not an unknown delivery.
        Assert.Equal(HttpStatusCode.BadGateway, read.StatusCode);
    }

    [Fact]
    public async Task The_database_setting_is_the_database_used()
    {
        await using var service = await ServiceApp.StartAsync(Definitions.Package, cosmos.Settings(new() { ["Cosmos:DatabaseId"] = "other-database" }));

        var ready = await service.Client.GetAsync("health/ready");
        var read = await service.Client.GetAsync("api/packages/pkg-1");

        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        Assert.Contains("other-database/packages does not exist", await ready.Content.ReadAsStringAsync());
        Assert.Equal(HttpStatusCode.BadGateway, read.StatusCode);
    }

    // Built, not started: nothing may try to reach Azure from a test.
    [Fact]
    public async Task An_account_endpoint_makes_an_entra_id_cosmos_client_for_that_account()
    {
        await using var service = ServiceApp.Build(Definitions.Package, new Dictionary<string, string?>
        {
            ["Cosmos:AccountEndpoint"] = "https://contoso.documents.azure.com/",
            ["Cosmos:DatabaseId"] = "deliveries",
        });

        var client = service.Services.GetRequiredService<CosmosClient>();

        Assert.Equal(new Uri("https://contoso.documents.azure.com/"), client.Endpoint);
        Assert.Equal(ConnectionMode.Gateway, client.ClientOptions.ConnectionMode);
    }

    [Fact]
    public async Task A_fully_qualified_namespace_makes_an_entra_id_service_bus_client_for_that_namespace()
    {
        await using var service = ServiceApp.Build(Definitions.Workflow, new Dictionary<string, string?>
        {
            ["ServiceBus:FullyQualifiedNamespace"] = "contoso.servicebus.windows.net",
            ["ServiceBus:QueueName"] = "requests",
        });

        var client = service.Services.GetRequiredService<ServiceBusClient>();
        var processor = service.Services.GetRequiredService<Workflow.DeliveryProcessor>().Processor;

        Assert.Equal("contoso.servicebus.windows.net", client.FullyQualifiedNamespace);
        Assert.Equal("requests", processor.EntityPath);
    }

    [Fact]
    public async Task The_retry_settings_reach_the_service_bus_client()
    {
        // A namespace that takes each connection and drops it at once: every attempt fails transiently, so the
        // connections it counts are the client's attempts, one plus MaxRetries.
        using var dropping = new ConnectionCounter(hold: false);
        await using var service = ServiceApp.Build(Definitions.Ingestion, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = dropping.ConnectionString,
            ["ServiceBus:Retry:Mode"] = "Fixed",
            ["ServiceBus:Retry:MaxRetries"] = "2",
            ["ServiceBus:Retry:Delay"] = "00:00:00.010",
        });
        await using var sender = service.Services.GetRequiredService<ServiceBusClient>().CreateSender("requests");

        await Assert.ThrowsAnyAsync<Exception>(() => sender.SendMessageAsync(new ServiceBusMessage("x")));

        Assert.Equal(3, dropping.Connections);
    }

    [Fact]
    public async Task The_try_timeout_setting_ends_an_attempt_the_namespace_never_answers()
    {
        // A namespace that takes the connection and never answers: only the 2 s try timeout ends the send. The
        // SDK's default, a minute per attempt and three retries, would outlast the bound, which only catches that.
        using var silent = new ConnectionCounter(hold: true);
        await using var service = ServiceApp.Build(Definitions.Ingestion, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = silent.ConnectionString,
            ["ServiceBus:Retry:MaxRetries"] = "0",
            ["ServiceBus:Retry:TryTimeout"] = "00:00:02",
        });
        await using var sender = service.Services.GetRequiredService<ServiceBusClient>().CreateSender("requests");

        var send = sender.SendMessageAsync(new ServiceBusMessage("x"));
        var ended = await Task.WhenAny(send, Task.Delay(TimeSpan.FromSeconds(60)));

        Assert.Same(send, ended);
        await Assert.ThrowsAnyAsync<Exception>(() => send);
        Assert.Equal(1, silent.Connections);
    }

    /// <summary>A TCP port on 127.0.0.1 that counts connections and either drops each at once or holds it open in silence.</summary>
    private sealed class ConnectionCounter : IDisposable
    {
        private readonly TcpListener _listener = new(IPAddress.Loopback, 0);
        private readonly List<TcpClient> _held = [];
        private int _connections;

        public ConnectionCounter(bool hold)
        {
            _listener.Start();
            _ = AcceptAsync(hold);
        }

        public int Connections => Volatile.Read(ref _connections);

        public string ConnectionString =>
            $"Endpoint=sb://127.0.0.1:{((IPEndPoint)_listener.LocalEndpoint).Port};SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true";

        public void Dispose()
        {
            _listener.Stop();
            lock (_held)
            {
                _held.ForEach(c => c.Dispose());
            }
        }

        private async Task AcceptAsync(bool hold)
        {
            try
            {
                while (true)
                {
                    var client = await _listener.AcceptTcpClientAsync();
                    Interlocked.Increment(ref _connections);
                    if (hold)
                    {
                        lock (_held)
                        {
                            _held.Add(client);
                        }
                    }
                    else
                    {
                        client.Dispose();
                    }
                }
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                // Stopped.
            }
        }
    }
}
