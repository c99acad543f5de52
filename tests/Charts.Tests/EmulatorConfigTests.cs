using System.Net;
using System.Xml;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.Emulators.CosmosDb;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// What the chart hands the emulators is what they accept: the rendered config files load with
/// the emulators' own loaders and say what the values say, the command lines start them, and the
/// services' connection strings carry the emulators' development credentials.
/// </summary>
public sealed class EmulatorConfigTests
{
    public static TheoryData<string> Steps => Chart.Steps;

    [Theory]
    [MemberData(nameof(Steps))]
    public void Cosmos_emulator_config_loads_and_declares_the_containers_of_the_values(string step)
    {
        var values = MergedValues(step);
        var options = LoadConfig(Chart.Template(Chart.Step(step)), "cosmosdb-emulator", "cosmosdb-emulator.json", CosmosEmulatorOptionsValidator.Load);

        CosmosEmulatorOptionsValidator.Validate(options);
        var database = Assert.Single(options.Databases);
        Assert.Equal(values.Text("cosmosDb", "databaseId"), database.Id);
        var declared = values.Map("cosmosDb", "containers")!;
        Assert.Equal(declared.Keys.Select(k => k.ToString()).Order(StringComparer.Ordinal), database.Containers.Select(c => c.Id).Order(StringComparer.Ordinal));
        foreach (var container in database.Containers)
        {
            var expected = declared[container.Id];
            Assert.Equal(expected.Text("throughput"), container.Throughput?.ToString(System.Globalization.CultureInfo.InvariantCulture));
            Assert.Equal(expected.Text("physicalPartitions"), container.PhysicalPartitions?.ToString(System.Globalization.CultureInfo.InvariantCulture));
            Assert.Equal(expected.Text("partitionKeyPath"), container.PartitionKeyPath);
        }
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void Service_Bus_emulator_config_loads_and_declares_the_queues_of_the_values(string step)
    {
        var values = MergedValues(step);
        var options = LoadConfig(Chart.Template(Chart.Step(step)), "servicebus-emulator", "Config.json", path => ServiceBusEmulatorOptions.LoadConfigFile(path));

        options.Validate();
        var declared = values.Map("serviceBus", "queues")!;
        Assert.Equal(declared.Keys.Select(k => k.ToString()).Order(StringComparer.Ordinal), options.Queues.Select(q => q.Name).Order(StringComparer.Ordinal));
        foreach (var queue in options.Queues)
        {
            Assert.Equal(XmlConvert.ToTimeSpan(declared[queue.Name].Text("lockDuration")!), queue.LockDuration);
            Assert.Equal(declared[queue.Name].Text("maxDeliveryCount"), queue.MaxDeliveryCount.ToString(System.Globalization.CultureInfo.InvariantCulture));
        }
    }

    [Theory]
    [InlineData("defaults", "5")]
    [InlineData("azure", "5")]
    public void Workflow_is_told_the_queue_s_max_delivery_count(string valueSet, string expected)
    {
        var workflow = Chart.Template(Chart.ValueSet(valueSet)).Get("Deployment", "workflow").Containers.Single();
        Assert.Equal(expected, Render.Environment(workflow)["Processor__MaxDeliveryCount"]);

        var changed = Chart.Template(Chart.Defaults.With("queue delivers 3 times", "--set", "serviceBus.queues.deliveryrequests.maxDeliveryCount=3"));
        Assert.Equal("3", Render.Environment(changed.Get("Deployment", "workflow").Containers.Single())["Processor__MaxDeliveryCount"]);
    }

    [Fact]
    public void Connection_strings_point_at_the_emulator_Services_with_their_development_credentials()
    {
        var render = Chart.Template(Chart.Defaults);
        var secret = render.Get("Secret", $"{Chart.ReleaseName}-emulator-connections").Body;

        var cosmos = Parts(secret.Text("stringData", "cosmos-connection-string")!);
        Assert.Equal(CosmosEmulatorOptions.WellKnownAccountKey, cosmos["AccountKey"]);
        Assert.Equal(new Uri($"http://cosmosdb-emulator:{ServicePort(render, "cosmosdb-emulator", "http")}/"), new Uri(cosmos["AccountEndpoint"]));

        var bus = Parts(secret.Text("stringData", "servicebus-connection-string")!);
        Assert.Equal(ServiceBusEmulatorOptions.DefaultKeyName, bus["SharedAccessKeyName"]);
        Assert.Equal(ServiceBusEmulatorOptions.DevelopmentKey, bus["SharedAccessKey"]);
        Assert.Equal("true", bus["UseDevelopmentEmulator"]);
        Assert.Equal(new Uri($"sb://servicebus-emulator:{ServicePort(render, "servicebus-emulator", "amqp")}"), new Uri(bus["Endpoint"]));
    }

    [Fact]
    public async Task Service_Bus_emulator_starts_with_the_rendered_command_line_and_answers_its_probe()
    {
        await AssertStartsAndAnswersProbe("servicebus-emulator", "DroneDelivery.Emulators.ServiceBus", ServiceBusEmulator.ReadyLinePrefix);
    }

    [Fact]
    public async Task Cosmos_emulator_starts_with_the_rendered_command_line_and_answers_its_probe()
    {
        await AssertStartsAndAnswersProbe("cosmosdb-emulator", "DroneDelivery.Emulators.CosmosDb", "Cosmos DB emulator ready");
    }

    [Fact]
    public void Nothing_of_the_seed_outlives_helm_uninstall_even_after_a_failed_seed()
    {
        // Hooks are not part of the release, so `helm uninstall` leaves them; and when a hook fails,
        // Helm deletes only that hook (by its hook-failed policy), never the hooks that ran before
        // it. A NetworkPolicy hook ahead of the Job therefore outlived a failed seed. Only the Job is
        // a hook: Helm deletes it on success and the TTL controller after a failure; its
        // NetworkPolicy is a release object that uninstall deletes.
        var render = Chart.Template(Chart.Defaults);
        var hooks = render.Manifests.Where(m => m.Body.Text("metadata", "annotations", "helm.sh/hook") is not null).ToList();

        Assert.Equal(["Job/seed"], hooks.Select(h => h.Id));
        var job = hooks.Single();
        var deletePolicy = job.Body.Text("metadata", "annotations", "helm.sh/hook-delete-policy") ?? "";
        Assert.Contains("hook-succeeded", deletePolicy, StringComparison.Ordinal);
        Assert.Contains("before-hook-creation", deletePolicy, StringComparison.Ordinal);
        Assert.True(int.TryParse(job.Body.Text("spec", "ttlSecondsAfterFinished"), out var ttl) && ttl > 0,
            "a failed seed Job (kept for its logs) must still go away after uninstall: set spec.ttlSecondsAfterFinished");

        var policy = render.Get("NetworkPolicy", "seed");
        Assert.Null(policy.Body.Text("metadata", "annotations", "helm.sh/hook"));
        Assert.Equal("seed", policy.Body.Text("spec", "podSelector", "matchLabels", "app.kubernetes.io/name"));
    }

    [Theory]
    [InlineData("A1")]
    [InlineData("A4")]
    public async Task Seed_job_loads_the_data_set_into_the_container_the_step_configures(string step)
    {
        var values = MergedValues(step);
        var render = Chart.Template(Chart.Step(step));
        var options = LoadConfig(render, "cosmosdb-emulator", "cosmosdb-emulator.json", CosmosEmulatorOptionsValidator.Load);
        options.Port = 0;
        await using var emulator = await CosmosEmulator.StartAsync(options);
        var job = render.Get("Job", "seed").Containers.Single();
        var environment = Render.Environment(job);
        Assert.StartsWith("secret:", environment["Cosmos__ConnectionString"], StringComparison.Ordinal);

        var result = ExternalTool.Run("dotnet",
            [RepositoryLayout.ProjectAssembly("DroneDelivery.DroneScheduler"), .. job.List("args").Select(a => a!.ToString()!)],
            environment: new Dictionary<string, string>
            {
                ["Cosmos__ConnectionString"] = emulator.ConnectionString,
                ["Cosmos__DatabaseId"] = environment["Cosmos__DatabaseId"],
            });

        Assert.True(result.ExitCode == 0, result.Describe());
        var containerId = values.Text("droneScheduler", "settings", "Utilization", "ContainerId")!;
        var container = emulator.GetMetrics().Container(values.Text("cosmosDb", "databaseId")!, containerId);
        Assert.NotNull(container);
        var expected = int.Parse(values.Text("seed", "owners")!, System.Globalization.CultureInfo.InvariantCulture)
            * int.Parse(values.Text("seed", "months")!, System.Globalization.CultureInfo.InvariantCulture)
            * int.Parse(values.Text("seed", "deliveriesPerOwnerMonth")!, System.Globalization.CultureInfo.InvariantCulture);
        Assert.Equal(expected, container.Partitions.Sum(p => p.Documents));
        Assert.Equal(values.Text("cosmosDb", "containers", containerId, "physicalPartitions"), container.PhysicalPartitionCount.ToString(System.Globalization.CultureInfo.InvariantCulture));
        Assert.Equal(double.Parse(values.Text("cosmosDb", "containers", containerId, "throughput")!, System.Globalization.CultureInfo.InvariantCulture), container.ProvisionedThroughput);
    }

    /// <summary>
    /// Runs the emulator with the arguments and config the chart renders (ports moved to free
    /// loopback ports, the config file to a temporary path) and calls its readiness probe.
    /// </summary>
    private static async Task AssertStartsAndAnswersProbe(string name, string project, string readyLine)
    {
        var render = Chart.Template(Chart.Defaults);
        var deployment = render.Get("Deployment", name);
        var container = deployment.Containers.Single();
        var config = render.Get("ConfigMap", name).Body.Map("data")!.Single();
        var directory = Directory.CreateTempSubdirectory("dronedelivery-chart-").FullName;
        try
        {
            File.WriteAllText(Path.Combine(directory, config.Key.ToString()!), config.Value!.ToString());
            var ports = container.List("ports").OfType<IDictionary<object, object?>>().ToDictionary(p => p.Text("containerPort")!, _ => FreePort.Next().ToString(System.Globalization.CultureInfo.InvariantCulture));
            var arguments = container.List("args").Select(a => a!.ToString()!)
                .Select(a => ports.GetValueOrDefault(a) ?? (a == "0.0.0.0" ? "127.0.0.1" : a.StartsWith("/config/", StringComparison.Ordinal) ? Path.Combine(directory, a["/config/".Length..]) : a))
                .ToList();
            Assert.Contains(Path.Combine(directory, config.Key.ToString()!), arguments);

            await using var process = await LocalProcess.StartAsync(LocalProcessSpec.ForProject(name, project, arguments) with
            {
                IsReadyLine = line => line.StartsWith(readyLine, StringComparison.Ordinal),
                ReadyTimeout = TimeSpan.FromSeconds(30),
            });

            var probe = container.Map("readinessProbe", "httpGet")!;
            var httpPort = container.List("ports").OfType<IDictionary<object, object?>>().Single(p => p.Text("name") == probe.Text("port")).Text("containerPort")!;
            using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(10) };
            var response = await http.GetAsync(new Uri($"http://127.0.0.1:{ports[httpPort]}{probe.Text("path")}"));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }

    private static object MergedValues(string step) =>
        Yaml.Merge(Yaml.Parse(File.ReadAllText(Chart.ValuesFile)), Yaml.Parse(File.ReadAllText(Chart.StepFile(step))) ?? new Dictionary<object, object?>())!;

    internal static T LoadConfig<T>(Render render, string configMap, string file, Func<string, T> load)
    {
        var path = Path.Combine(Path.GetTempPath(), $"dronedelivery-{Guid.NewGuid():N}-{file}");
        File.WriteAllText(path, render.Get("ConfigMap", configMap).Body.Text("data", file));
        try
        {
            return load(path);
        }
        finally
        {
            File.Delete(path);
        }
    }

    private static Dictionary<string, string> Parts(string connectionString) =>
        connectionString.Split(';', StringSplitOptions.RemoveEmptyEntries)
            .Select(p => p.Split('=', 2))
            .ToDictionary(p => p[0], p => p[1]);

    private static string ServicePort(Render render, string service, string portName) =>
        render.Get("Service", service).Body.List("spec", "ports").OfType<IDictionary<object, object?>>().Single(p => p.Text("name") == portName).Text("port")!;
}
