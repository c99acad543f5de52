using System.Diagnostics;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.ServiceDefaults.Tests;

public sealed class TelemetrySourcesTests
{
    [Fact]
    public async Task The_service_bus_sdks_activity_sources_are_switched_on_and_traced()
    {
        // The SDK creates its spans through ActivitySources only with the switch on, and reads it once: the defaults
        // set it while the host is built, before any client exists, and the tracer listens to the SDK's sources.
        await using var service = await TestService.StartAsync();
        using var processor = new ActivitySource("Azure.Messaging.ServiceBus.ServiceBusProcessor");
        using var other = new ActivitySource("Azure.Storage.Blobs.BlobContainerClient");

        Assert.True(AppContext.TryGetSwitch(TelemetrySources.AzureActivitySourceSwitch, out var on) && on);
        Assert.True(processor.HasListeners());
        Assert.False(other.HasListeners());
    }
}
