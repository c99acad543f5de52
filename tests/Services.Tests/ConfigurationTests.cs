using System.Net;
using DroneDelivery.DroneScheduler;
using DroneDelivery.ServiceBus;
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
}
