using System.Net;
using DroneDelivery.LocalProcesses;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Services.Tests;

/// <summary>The services' real programs, run as processes the way a container runs them.</summary>
[Collection(SystemCollection.Name)]
public sealed class ProgramTests(SystemFixture system)
{
    [Theory]
    [InlineData("DroneDelivery.Gateway", "Backends__Delivery__Timeout", "forever", "Backends:Delivery:Timeout")]
    [InlineData("DroneDelivery.Gateway", "Authentication__Audience", "", "Setting 'Authentication:Audience' = '' is invalid")]
    [InlineData("DroneDelivery.Ingestion", "Hosting__MaxRequestHeadersTotalSize", "100", "Setting 'Hosting:MaxRequestHeadersTotalSize' = '100' is invalid")]
    [InlineData("DroneDelivery.Ingestion", "Batching__MaxBatchSize", "0", "Setting 'Batching:MaxBatchSize' = '0' is invalid")]
    [InlineData("DroneDelivery.Workflow", "Processor__PrefetchCount", "-5", "Setting 'Processor:PrefetchCount' = '-5' is invalid")]
    [InlineData("DroneDelivery.Delivery", "Redis__DeliveryTtl", "-1.00:00:00", "Setting 'Redis:DeliveryTtl'")]
    [InlineData("DroneDelivery.Package", "Packages__ContainerId", "a/b", "Setting 'Packages:ContainerId' = 'a/b' is invalid")]
    [InlineData("DroneDelivery.DroneScheduler", "Utilization__MaxConcurrency", "-7", "Setting 'Utilization:MaxConcurrency' = '-7' is invalid")]
    public async Task A_service_with_a_bad_setting_exits_with_code_2_naming_it(string project, string variable, string value, string expected)
    {
        var environment = ValidEnvironment();
        environment[variable] = value;

        var (exitCode, output) = await RunToExitAsync(project, environment);

        Assert.Equal(2, exitCode);
        Assert.Contains(expected, output);
    }

    [Fact]
    public async Task A_service_process_answers_its_api_health_and_metrics()
    {
        var port = FreePort.Next();
        var environment = ValidEnvironment();
        await using var delivery = await LocalProcess.StartAsync(
            LocalProcessSpec.ForProject("delivery", "DroneDelivery.Delivery", "--urls", $"http://127.0.0.1:{port}") with
            {
                Environment = environment,
                IsReadyLine = line => line.Contains("Now listening on", StringComparison.Ordinal),
            });
        using var client = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{port}/") };

        var ready = await client.GetAsync("health/ready");
        var summary = await client.GetAsync("api/deliveries/summary?ownerId=owner-0001&year=2025&month=1");
        var metrics = await client.GetStringAsync("metrics");

        Assert.Equal(HttpStatusCode.OK, ready.StatusCode);
        Assert.Equal(HttpStatusCode.OK, summary.StatusCode);
        Assert.Contains("dronedelivery_delivery_redis_calls_total{", metrics);
        Assert.Contains("http_server_request_duration_seconds_bucket{", metrics);
        Assert.Contains(delivery.RecentOutput, line => line.Contains("Setting Redis:DeliveryTtl = 00:00:00", StringComparison.Ordinal));
    }

    [Fact]
    public async Task The_drone_scheduler_program_runs_the_seed_command()
    {
        var container = "process-" + Guid.NewGuid().ToString("N")[..8];
        var (exitCode, output) = await RunToExitAsync("DroneDelivery.DroneScheduler", ValidEnvironment(),
            "seed", "--container", container, "--owners", "2", "--deliveries", "3", "--throughput", "10000", "--other-throughput", "10000");

        Assert.Equal(0, exitCode);
        Assert.Contains("Loaded 6 documents", output);
    }

    /// <summary>Settings with which every service starts against the system's dependencies (the public ones with a development issuer).</summary>
    private Dictionary<string, string?> ValidEnvironment()
    {
        var environment = new Dictionary<string, string?>
        {
            ["Redis__ConnectionString"] = system.Redis.ConnectionString,
            ["Cosmos__ConnectionString"] = system.Cosmos.ConnectionString,
            ["ServiceBus__ConnectionString"] = system.ServiceBus.ConnectionString,
            ["ServiceBus__QueueName"] = "no-such-queue",
        };
        foreach (var (key, value) in TestAccess.Issuer(TimeProvider.System).ServiceEnvironment())
        {
            environment[key] = value;
        }

        return environment;
    }

    private static async Task<(int ExitCode, string Output)> RunToExitAsync(string project, Dictionary<string, string?> environment, params string[] args)
    {
        string[] arguments = args.Length > 0 ? args : ["--urls", "http://127.0.0.1:0"];
        await using var process = await LocalProcess.StartAsync(LocalProcessSpec.ForProject(project, project, arguments) with
        {
            Environment = environment,
        });
        var exitCode = await process.Exited.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(await Eventually.TrueAsync(() => process.RecentOutput.Count > 0, TimeSpan.FromSeconds(5)));
        return (exitCode, string.Join(Environment.NewLine, process.RecentOutput));
    }
}
