using System.Diagnostics;
using System.Net;
using DroneDelivery.Contracts;
using DroneDelivery.DroneScheduler;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

/// <summary>Requests through Ingestion → queue → Workflow → Package, DroneScheduler, Delivery → the gateway's invoice.</summary>
[Collection(SystemCollection.Name)]
public sealed class EndToEndTests(SystemFixture system)
{
    [Fact]
    public async Task An_ingested_request_flows_through_the_queue_to_all_three_backends_and_into_the_invoice()
    {
        var owner = NewId();
        var request = NewRequest(owner, new DateTimeOffset(2025, 8, 14, 9, 30, 0, TimeSpan.Zero));

        var accepted = await system.Ingestion.Client.PostJsonAsync("api/deliveryrequests", request);

        Assert.Equal(HttpStatusCode.Accepted, accepted.StatusCode);
        var id = (await accepted.ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        Assert.Equal($"/api/deliveries/{id}/status", accepted.Headers.Location?.OriginalString);
        var status = await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Created);

        var package = await (await system.Package.Client.GetAsync($"api/packages/{request.PackageInfo!.PackageId}")).ReadAsync<PackageRecord>();
        var drone = await (await system.DroneScheduler.Client.GetAsync($"api/dronedeliveries/{id}")).ReadAsync<DroneAssignment>();
        var invoice = await (await system.Gateway.Client.GetAsync($"api/invoices/{owner}?year=2025&month=8")).ReadAsync<Invoice>();

        Assert.Equal((id, owner, 2025, 8), (package.DeliveryId, package.OwnerId, package.Year, package.Month));
        Assert.Equal(drone.DroneId, status.DroneId);
        var plan = FlightPlan.For(Location(request.PickupLocation), Location(request.DropoffLocation), expedited: false);
        Assert.Equal(
            new Invoice(owner, 2025, 8, new InvoiceDeliveries(1), new InvoicePackages(1, 2.5), new InvoiceUtilization(plan.Miles, plan.Hours)),
            invoice);
    }

    [Fact]
    public async Task The_trace_of_an_ingested_request_continues_through_the_queue_into_the_workflow_and_the_backends()
    {
        using var trace = new TraceRecorder();

        var accepted = await system.Ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest(NewId(), DateTimeOffset.UtcNow));
        var id = (await accepted.ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        trace.StopRoot();

        // The processing span ends last: after the delivery is scheduled and the message completed.
        Assert.True(await Eventually.TrueAsync(() => trace.Spans.Any(s => s.DisplayName == "ServiceBusProcessor.ProcessMessage"), Patience));
        var spans = trace.Spans;
        var process = Assert.Single(spans, s => s.DisplayName == "ServiceBusProcessor.ProcessMessage");
        Assert.Equal(ActivityKind.Consumer, process.Kind);
        Assert.Equal(id, process.GetTagItem("dronedelivery.delivery_id"));
        Assert.Contains(spans, s => s.DisplayName == "POST /api/deliveryrequests");
        Assert.Contains(spans, s => s.DisplayName == "PUT /api/packages/{id}");
        Assert.Contains(spans, s => s.DisplayName == "PUT /api/dronedeliveries/{deliveryId}");
        Assert.Contains(spans, s => s.Kind == ActivityKind.Server && s.DisplayName == "PUT /api/deliveries/{id}");
        Assert.Contains(spans, s => s.DisplayName == "ServiceBusReceiver.Complete");
    }

    [Fact]
    public async Task A_cancelled_delivery_releases_its_drone_removes_its_package_and_leaves_the_invoice()
    {
        var owner = NewId();
        var request = NewRequest(owner, new DateTimeOffset(2025, 9, 1, 10, 0, 0, TimeSpan.Zero));
        var id = (await (await system.Ingestion.Client.PostJsonAsync("api/deliveryrequests", request)).ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Created);

        var cancel = await system.Ingestion.Client.DeleteAsync($"api/deliveryrequests/{id}");

        Assert.Equal(HttpStatusCode.Accepted, cancel.StatusCode);
        Assert.Equal($"/api/deliveries/{id}/status", cancel.Headers.Location?.OriginalString);
        await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Cancelled);
        Assert.True(await Eventually.TrueAsync(
            async () => (await system.Package.Client.GetAsync($"api/packages/{request.PackageInfo!.PackageId}")).StatusCode == HttpStatusCode.NotFound, Patience));
        Assert.Equal(HttpStatusCode.NotFound, (await system.DroneScheduler.Client.GetAsync($"api/dronedeliveries/{id}")).StatusCode);
        var invoice = await (await system.Gateway.Client.GetAsync($"api/invoices/{owner}?year=2025&month=9")).ReadAsync<Invoice>();
        Assert.Equal(new Invoice(owner, 2025, 9, new InvoiceDeliveries(0), new InvoicePackages(0, 0), new InvoiceUtilization(0, 0)), invoice);
    }

    [Fact]
    public async Task A_rescheduled_delivery_gets_a_new_flight_and_keeps_its_drone()
    {
        var owner = NewId();
        var id = (await (await system.Ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest(owner, new DateTimeOffset(2025, 10, 1, 10, 0, 0, TimeSpan.Zero))))
            .ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        var created = await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Created);
        var before = await (await system.DroneScheduler.Client.GetAsync($"api/dronedeliveries/{id}")).ReadAsync<DroneAssignment>();

        var patch = await system.Ingestion.Client.PatchJsonAsync($"api/deliveryrequests/{id}", new RescheduleRequest { DropoffLocation = "47.45,-122.30" });

        Assert.Equal(HttpStatusCode.Accepted, patch.StatusCode);
        var rescheduled = await system.Delivery.WaitForStatusAsync(id, s => s.Stage == DeliveryStage.Rescheduled);
        var after = await (await system.DroneScheduler.Client.GetAsync($"api/dronedeliveries/{id}")).ReadAsync<DroneAssignment>();
        var delivery = await (await system.Delivery.Client.GetAsync($"api/deliveries/{id}")).ReadAsync<DeliveryRecord>();
        Assert.Equal("47.45,-122.30", delivery.DropoffLocation);
        Assert.Equal(created.DroneId, rescheduled.DroneId);
        Assert.Equal(before.DroneId, after.DroneId);
        var plan = FlightPlan.For(Location("47.64,-122.13"), Location("47.45,-122.30"), expedited: false);
        Assert.Equal((plan.Miles, plan.Hours), (after.TraveledMiles, after.AssignedHours));
        Assert.NotEqual(before.TraveledMiles, after.TraveledMiles);
    }

    private static GeoLocation Location(string? text) => GeoLocation.TryParse(text, out var location) ? location : throw new ArgumentException(text);
}
