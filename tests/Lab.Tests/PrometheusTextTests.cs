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
}
