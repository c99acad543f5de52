using System.Net;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Contracts;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// Delivery requests at the edge: the write scope and the caller's own owner id (or the role), checked
/// before anything is queued; the 202's Location works through the gateway for the owner only.
/// </summary>
[Collection(SystemCollection.Name)]
public sealed class IngestionAccessTests(SystemFixture system)
{
    [Fact]
    public async Task An_owner_requests_its_delivery_and_follows_the_location_through_the_gateway_where_no_one_else_can()
    {
        var owner = DevelopmentCaller.ForOwner(NewId());
        var request = NewRequest(owner.Owner!, new DateTimeOffset(2025, 11, 3, 9, 0, 0, TimeSpan.Zero));

        using var accepted = await system.Ingestion.ClientAs(owner).PostJsonAsync("api/deliveryrequests", request);

        Assert.Equal(HttpStatusCode.Accepted, accepted.StatusCode);
        var location = accepted.Headers.Location!;
        var ownClient = system.Gateway.ClientAs(owner);
        HttpResponseMessage? status = null;
        Assert.True(
            await Eventually.TrueAsync(async () => (status = await ownClient.GetAsync(location.OriginalString.TrimStart('/'))).StatusCode == HttpStatusCode.OK, Patience, TimeSpan.FromMilliseconds(100)),
            $"The owner never saw its delivery's status at {location}; last answer {status?.StatusCode}.");
        var body = await status!.ReadAsync<DeliveryStatus>();
        Assert.Equal((owner.Owner, DeliveryStage.Created), (body.OwnerId, body.Stage));
        using var stranger = await system.Gateway.ClientAs(DevelopmentCaller.ForOwner(NewId())).GetAsync(location.OriginalString.TrimStart('/'));
        Assert.Equal(HttpStatusCode.NotFound, stranger.StatusCode);
    }

    [Fact]
    public async Task A_request_for_another_owner_is_403()
    {
        using var response = await system.Ingestion.ClientAs(DevelopmentCaller.ForOwner("owner-a"))
            .PostJsonAsync("api/deliveryrequests", NewRequest("owner-b", DateTimeOffset.UtcNow));

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
        Assert.Contains("owner-b", (await response.ProblemAsync()).GetProperty("detail").GetString());
    }

    [Fact]
    public async Task A_request_needs_the_write_scope_or_the_role()
    {
        var readOnly = DevelopmentCaller.ForOwner("owner-r") with { Scopes = [ApiAccess.Scopes.InvoicesRead, ApiAccess.Scopes.DeliveriesRead] };
        var partner = new DevelopmentCaller("partner-app") { Roles = [ApiAccess.Roles.DeliveriesWriteAll] };

        using var refused = await system.Ingestion.ClientAs(readOnly).PostJsonAsync("api/deliveryrequests", NewRequest("owner-r", DateTimeOffset.UtcNow));
        using var anonymous = await system.Ingestion.ClientAs(null).PostJsonAsync("api/deliveryrequests", NewRequest("owner-r", DateTimeOffset.UtcNow));
        using var forAnyOwner = await system.Ingestion.ClientAs(partner).PostJsonAsync("api/deliveryrequests", NewRequest(NewId(), DateTimeOffset.UtcNow));

        Assert.Equal(HttpStatusCode.Forbidden, refused.StatusCode);
        Assert.Equal(HttpStatusCode.Unauthorized, anonymous.StatusCode);
        Assert.Equal(HttpStatusCode.Accepted, forAnyOwner.StatusCode);
    }

    [Fact]
    public async Task Only_the_owner_cancels_or_reschedules_its_delivery_anyone_else_gets_the_404_of_an_unknown_one()
    {
        var owner = DevelopmentCaller.ForOwner(NewId());
        var stranger = system.Ingestion.ClientAs(DevelopmentCaller.ForOwner(NewId()));
        var ownerClient = system.Ingestion.ClientAs(owner);
        var id = (await (await ownerClient.PostJsonAsync("api/deliveryrequests", NewRequest(owner.Owner!, new DateTimeOffset(2025, 11, 4, 9, 0, 0, TimeSpan.Zero))))
            .ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Created);

        using var strangerPatch = await stranger.PatchJsonAsync($"api/deliveryrequests/{id}", new RescheduleRequest { DropoffLocation = "47.45,-122.30" });
        using var strangerCancel = await stranger.DeleteAsync($"api/deliveryrequests/{id}");
        using var unknown = await ownerClient.DeleteAsync($"api/deliveryrequests/{NewId()}");
        using var ownerCancel = await ownerClient.DeleteAsync($"api/deliveryrequests/{id}");

        Assert.Equal(HttpStatusCode.NotFound, strangerPatch.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, strangerCancel.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, unknown.StatusCode);
        Assert.Equal(HttpStatusCode.Accepted, ownerCancel.StatusCode);
        await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Cancelled);
    }

    [Fact]
    public async Task An_oversized_body_from_an_authenticated_caller_is_413()
    {
        var owner = DevelopmentCaller.ForOwner("owner-big");
        var huge = "{\"ownerId\": \"owner-big\", \"tag\": \"" + new string('x', 2 * 1024 * 1024) + "\"}";

        using var response = await system.Ingestion.ClientAs(owner).SendOversizedAsync(HttpMethod.Post, "api/deliveryrequests", huge);

        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
    }
}
