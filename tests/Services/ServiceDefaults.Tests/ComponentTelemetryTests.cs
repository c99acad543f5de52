using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.ServiceDefaults.Tests;

public sealed class ComponentTelemetryTests
{
    [Fact]
    public async Task A_components_spans_and_instruments_are_exported_under_their_names_and_units()
    {
        await using var service = await TestService.StartAsync();
        var telemetry = new ComponentTelemetry("DroneDelivery.ComponentTelemetryTests");
        var calls = telemetry.Counter("dronedelivery.tests.calls", "{call}", "Calls.");
        var duration = telemetry.Duration("dronedelivery.tests.duration", "Duration of a call.");
        var sizes = telemetry.Histogram<int>("dronedelivery.tests.batch.size", "{message}", "Messages per batch.");
        telemetry.Gauge("dronedelivery.tests.buffer.messages", () => 3, "{message}", "Messages waiting.");

        calls.Add(2, new KeyValuePair<string, object?>("outcome", "success"));
        duration.Record(0.25);
        sizes.Record(7);
        var scrape = await service.Client.GetStringAsync("/metrics");

        Assert.True(telemetry.Source.HasListeners());
        Assert.Equal("DroneDelivery.ComponentTelemetryTests", telemetry.Source.Name);
        Assert.Equal(("s", "Duration of a call."), (duration.Unit, duration.Description));
        Assert.Equal(("{call}", "Calls."), (calls.Unit, calls.Description));
        Assert.Contains("dronedelivery_tests_calls_total{outcome=\"success\"", scrape);
        Assert.Contains("dronedelivery_tests_duration_seconds_count", scrape);
        Assert.Contains("dronedelivery_tests_batch_size_count", scrape);
        Assert.Contains("dronedelivery_tests_buffer_messages{} 3", scrape);
    }

    [Fact]
    public async Task A_duration_of_a_few_milliseconds_lands_in_its_own_bucket_so_percentiles_can_be_read()
    {
        await using var service = await TestService.StartAsync();
        var telemetry = new ComponentTelemetry("DroneDelivery.ComponentTelemetryBuckets");
        var duration = telemetry.Duration("dronedelivery.tests.bucketed.duration", "Duration of a call.");

        duration.Record(0.012);
        duration.Record(0.3);
        var scrape = await service.Client.GetStringAsync("/metrics");

        // Cumulative counts: nothing up to 10 ms, the 12 ms call by 25 ms, both by 500 ms.
        Assert.Contains("dronedelivery_tests_bucketed_duration_seconds_bucket{le=\"0.01\"} 0", scrape);
        Assert.Contains("dronedelivery_tests_bucketed_duration_seconds_bucket{le=\"0.025\"} 1", scrape);
        Assert.Contains("dronedelivery_tests_bucketed_duration_seconds_bucket{le=\"0.25\"} 1", scrape);
        Assert.Contains("dronedelivery_tests_bucketed_duration_seconds_bucket{le=\"0.5\"} 2", scrape);
    }

    [Theory]
    [InlineData("Delivery")]
    [InlineData("DroneDelivery.")]
    [InlineData("dronedelivery.delivery")]
    public void A_name_outside_the_prefix_the_services_listen_to_is_refused(string name)
    {
        Assert.Throws<ArgumentException>(() => new ComponentTelemetry(name));
    }
}
