using System.Net;
using System.Text.Json;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Contracts;
using DroneDelivery.Services.Tests.Infrastructure;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// A body that names a property twice is refused with a 400 problem naming it, by every service that
/// reads a JSON request body (the gateway's backend answers and Workflow's messages: GatewayTests,
/// WorkflowTests). Readers disagree on which of the two values wins; accepted, the owner check could
/// read one owner and a proxy, a firewall or a later reader of the same body another. Each test sends
/// a body that is accepted as it is, then the same body with the property given a second time.
/// </summary>
[Collection(SystemCollection.Name)]
public sealed class DuplicatePropertyTests(SystemFixture system)
{
    [Fact]
    public async Task Ingestion_refuses_a_delivery_request_naming_its_owner_twice()
    {
        var owner = DevelopmentCaller.ForOwner("owner-0001");
        var client = system.Ingestion.ClientAs(owner);
        var request = NewRequest("owner-0001", new DateTimeOffset(2025, 12, 1, 9, 0, 0, TimeSpan.Zero));

        using var once = await client.SendRawAsync(HttpMethod.Post, "api/deliveryrequests", Json(request));
        using var twice = await client.SendRawAsync(HttpMethod.Post, "api/deliveryrequests", Twice(request, "ownerId", "owner-0002"));

        Assert.Equal(HttpStatusCode.Accepted, once.StatusCode);
        await AssertRefusedNamingAsync(twice, "ownerId");
    }

    [Fact]
    public async Task Ingestion_refuses_a_reschedule_naming_a_field_twice()
    {
        var change = new RescheduleRequest { DropoffLocation = "47.45,-122.30" };

        using var twice = await system.Ingestion.Client.SendRawAsync(HttpMethod.Patch, $"api/deliveryrequests/{NewId()}", Twice(change, "dropoffLocation", "47.00,-122.00"));

        await AssertRefusedNamingAsync(twice, "dropoffLocation");
    }

    [Fact]
    public async Task Delivery_refuses_a_schedule_naming_its_owner_twice()
    {
        var schedule = DeliveryTests.Schedule("owner-dup", new DateTimeOffset(2025, 12, 2, 9, 0, 0, TimeSpan.Zero));

        using var once = await system.Delivery.Client.SendRawAsync(HttpMethod.Put, $"api/deliveries/{NewId()}", Json(schedule));
        using var twice = await system.Delivery.Client.SendRawAsync(HttpMethod.Put, $"api/deliveries/{NewId()}", Twice(schedule, "ownerId", "owner-other"));
        using var change = await system.Delivery.Client.SendRawAsync(
            HttpMethod.Patch, $"api/deliveries/{NewId()}", Twice(new RescheduleRequest { PickupLocation = "47.60,-122.10" }, "pickupLocation", "0,0"));

        Assert.Equal(HttpStatusCode.Created, once.StatusCode);
        await AssertRefusedNamingAsync(twice, "ownerId");
        await AssertRefusedNamingAsync(change, "pickupLocation");
    }

    [Fact]
    public async Task Package_refuses_a_package_naming_its_weight_twice()
    {
        var package = new PackageUpsert { DeliveryId = NewId(), OwnerId = "owner-dup", Size = PackageSize.Small, Weight = 1.5, Year = 2025, Month = 12 };

        using var once = await system.Package.Client.SendRawAsync(HttpMethod.Put, $"api/packages/{NewId()}", Json(package));
        using var twice = await system.Package.Client.SendRawAsync(HttpMethod.Put, $"api/packages/{NewId()}", Twice(package, "weight", 99));

        Assert.Equal(HttpStatusCode.Created, once.StatusCode);
        await AssertRefusedNamingAsync(twice, "weight");
    }

    [Fact]
    public async Task DroneScheduler_refuses_an_assignment_naming_its_owner_twice()
    {
        var request = DroneSchedulerTests.Request("owner-dup", new DateTimeOffset(2025, 12, 3, 9, 0, 0, TimeSpan.Zero));

        using var once = await system.DroneScheduler.Client.SendRawAsync(HttpMethod.Put, $"api/dronedeliveries/{NewId()}", Json(request));
        using var twice = await system.DroneScheduler.Client.SendRawAsync(HttpMethod.Put, $"api/dronedeliveries/{NewId()}", Twice(request, "ownerId", "owner-other"));

        Assert.True(once.IsSuccessStatusCode, $"the body as it is was answered {once.StatusCode}");
        await AssertRefusedNamingAsync(twice, "ownerId");
    }

    /// <summary>The 400 problem a body that names a property twice gets, naming that property.</summary>
    internal static async Task AssertRefusedNamingAsync(HttpResponseMessage response, string property)
    {
        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        var detail = (await response.ProblemAsync()).GetProperty("detail").GetString();
        Assert.Contains($"Duplicate property '{property}'", detail, StringComparison.Ordinal);
    }

    private static string Json<T>(T body) => JsonSerializer.Serialize(body, ContractJson.Options);

    /// <summary>The body with <paramref name="property"/> given once more, first, with <paramref name="firstValue"/>.</summary>
    internal static string Twice<T>(T body, string property, object firstValue)
    {
        var json = Json(body);
        Assert.Contains($"\"{property}\":", json, StringComparison.Ordinal);
        return $"{{\"{property}\":{JsonSerializer.Serialize(firstValue)},{json[1..]}";
    }
}
