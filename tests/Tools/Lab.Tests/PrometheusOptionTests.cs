using System.CommandLine;
using DroneDelivery.Lab.Deployment;
using Xunit;

namespace DroneDelivery.Lab.Tests;

public sealed class PrometheusOptionTests
{
    [Theory]
    [InlineData(new string[0], null)]
    [InlineData(new[] { "--prometheus" }, 9090)]
    [InlineData(new[] { "--prometheus", "9191" }, 9191)]
    public void Prometheus_is_off_unless_asked_for_and_listens_on_9090_by_default(string[] arguments, int? expected)
    {
        var option = LabCommands.PrometheusOption();
        var command = new RootCommand { option };
        var parse = command.Parse(arguments);
        Assert.Empty(parse.Errors);
        Assert.Equal(expected, parse.GetValue(option));
    }

    [Fact]
    public void The_generated_configuration_scrapes_every_component_every_2_seconds_from_its_target_file()
    {
        var yaml = PrometheusServer.Configuration("/out/prometheus");
        Assert.Contains("scrape_interval: 2s", yaml, StringComparison.Ordinal);
        foreach (var job in new[] { "gateway", "ingestion", "workflow", "delivery", "package", "dronescheduler", "cosmos-emulator", "servicebus-emulator" })
        {
            Assert.Contains($"  - job_name: {job}\n", yaml, StringComparison.Ordinal);
            Assert.Contains($"/out/prometheus/targets/{job}.json", yaml, StringComparison.Ordinal);
        }

        Assert.Contains("honor_labels: true", yaml, StringComparison.Ordinal);
    }
}
