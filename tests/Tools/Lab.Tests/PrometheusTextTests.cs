using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Tests;

public class PrometheusTextTests
{
    [Fact]
    public void Parses_samples_with_and_without_labels_including_escapes_and_infinities()
    {
        const string text = """
            # HELP http_server_request_duration_seconds Duration of HTTP server requests.
            # TYPE http_server_request_duration_seconds histogram
            http_server_request_duration_seconds_bucket{http_route="/api/invoices/{ownerId}",le="0.005"} 3
            http_server_request_duration_seconds_bucket{http_route="/api/invoices/{ownerId}",le="+Inf"} 7
            dotnet_process_cpu_time_seconds_total{cpu_mode="user"} 1.25
            odd{message="say \"hi\"\nthere",path="a\\b"} 2e3
            dotnet_timer_count 5
            """;

        var samples = PrometheusText.Parse(text);

        Assert.Equal(5, samples.Count);
        Assert.Equal("/api/invoices/{ownerId}", samples[0].Label("http_route"));
        Assert.Equal("+Inf", samples[1].Label("le"));
        Assert.Equal(7, samples[1].Value);
        Assert.Equal(1.25, samples[2].Value);
        Assert.Equal("say \"hi\"\nthere", samples[3].Label("message"));
        Assert.Equal("a\\b", samples[3].Label("path"));
        Assert.Equal(2000, samples[3].Value);
        Assert.Equal("dotnet_timer_count", samples[4].Name);
        Assert.Empty(samples[4].Labels);
    }

    [Fact]
    public void Reads_the_names_the_lab_needs_from_the_services_exposition()
    {
        // The shape OpenTelemetry.Exporter.Prometheus.AspNetCore writes: TYPE before HELP, an empty
        // label set on unlabelled samples, and one target_info series.
        const string text = """
            # TYPE target_info gauge
            # HELP target_info Target metadata
            target_info{deployment_environment_name="Production",service_name="dronescheduler",service_namespace="dronedelivery",service_instance_id="dronescheduler-0"} 1
            # TYPE dotnet_thread_pool_queue_length_total counter
            # HELP dotnet_thread_pool_queue_length_total The number of work items that are currently queued to be processed by the thread pool.
            dotnet_thread_pool_queue_length_total{} 12
            # TYPE dronedelivery_cosmos_operation_calls histogram
            dronedelivery_cosmos_operation_calls_bucket{operation="GetDroneUtilization",le="+Inf"} 3
            dronedelivery_cosmos_operation_calls_sum{operation="GetDroneUtilization"} 30
            dronedelivery_cosmos_operation_calls_count{operation="GetDroneUtilization"} 3
            # TYPE resilience_polly_strategy_events_total counter
            resilience_polly_strategy_events_total{event_name="OnRetry",event_severity="Warning",pipeline_name="delivery",strategy_name="Standard-Retry"} 4
            """;

        var samples = PrometheusText.Parse(text);

        var queue = Assert.Single(samples, s => s.Name == SystemSampler.ThreadPoolQueueMetric);
        Assert.Equal(12, queue.Value);
        Assert.Empty(queue.Labels);
        Assert.Equal("dronedelivery", Assert.Single(samples, s => s.Name == "target_info").Label("service_namespace"));
        Assert.Equal(30, Assert.Single(samples, s => s.Name == "dronedelivery_cosmos_operation_calls_sum").Value);
        Assert.Equal("GetDroneUtilization", Assert.Single(samples, s => s.Name == "dronedelivery_cosmos_operation_calls_count").Label("operation"));
        Assert.Equal("delivery", Assert.Single(samples, s => s.Name == "resilience_polly_strategy_events_total").Label("pipeline_name"));
    }
}
