using System.Xml;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The local lab starts each service with the environment the chart renders for it — every step,
/// every service, names and values — and with the chart's replica counts, queues and containers.
/// The lab renders this itself (a user's machine may lack helm); these tests hold it to helm's output.
/// The lab points the connections at its local processes instead of the in-cluster Services, so here
/// its renderer is wired the way the chart wires them; the pod's own ASPNETCORE_HTTP_PORTS and POD_NAME
/// are each process's (the lab gives every replica its own port and name).
/// </summary>
public sealed class LabEnvironmentTests
{
    private static readonly StepCatalog Catalog = StepCatalog.Load(Chart.Directory);

    /// <summary>
    /// Connections as the chart renders them with emulators.enabled: Services by name, the emulator Secret,
    /// and the development issuer's Secret (its key, and the previous key while one is being rotated out).
    /// </summary>
    private static readonly ServiceWiring ClusterWiring = new(
        backend => $"http://{backend.Name}/",
        $"secret:{Chart.ReleaseName}-emulator-connections/cosmos-connection-string",
        $"secret:{Chart.ReleaseName}-emulator-connections/servicebus-connection-string",
        "redis:6379",
        [$"secret:{Chart.ReleaseName}-development-issuer/signing-key", $"secret?:{Chart.ReleaseName}-development-issuer/previous-signing-key"]);

    private static readonly string[] PodVariables = ["ASPNETCORE_HTTP_PORTS", "POD_NAME"];

    public static TheoryData<string, string> StepsAndServices()
    {
        var data = new TheoryData<string, string>();
        foreach (var step in Chart.StepNames)
        {
            foreach (var service in ServiceKind.All)
            {
                data.Add(step, service.ValuesKey);
            }
        }

        return data;
    }

    public static TheoryData<string> Steps => Chart.Steps;

    [Theory]
    [MemberData(nameof(StepsAndServices))]
    public void The_lab_s_environment_for_a_service_is_the_rendered_Deployment_s(string step, string service)
    {
        var kind = ServiceKind.All.Single(s => s.ValuesKey == service);
        AssertSameEnvironment(Chart.Template(Chart.Step(step)), Catalog[step], kind);
    }

    [Theory]
    [MemberData(nameof(StepsAndServices))]
    public void The_lab_runs_the_rendered_Deployment_s_replica_count(string step, string service)
    {
        var kind = ServiceKind.All.Single(s => s.ValuesKey == service);
        var deployment = Chart.Template(Chart.Step(step)).Get("Deployment", kind.Name);

        Assert.Equal(deployment.Body.Text("spec", "replicas"), Catalog[step].Replicas(kind).ToString(System.Globalization.CultureInfo.InvariantCulture));
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void The_lab_s_queues_are_the_rendered_Service_Bus_emulator_config_s(string step)
    {
        var rendered = EmulatorConfigTests.LoadConfig(Chart.Template(Chart.Step(step)), "servicebus-emulator", "Config.json", path => ServiceBusEmulatorOptions.LoadConfigFile(path));

        Assert.Equal(
            rendered.Queues.Select(q => (q.Name, q.LockDuration, q.MaxDeliveryCount)).OrderBy(q => q.Name, StringComparer.Ordinal),
            QueueSpec.Of(Catalog[step], timeScale: 1).Select(q => (q.Name, XmlConvert.ToTimeSpan(q.LockDuration), q.MaxDeliveryCount)));
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void The_lab_s_containers_are_the_rendered_Cosmos_DB_emulator_config_s(string step)
    {
        var rendered = EmulatorConfigTests.LoadConfig(Chart.Template(Chart.Step(step)), "cosmosdb-emulator", "cosmosdb-emulator.json", CosmosEmulatorOptionsValidator.Load);

        Assert.Equal(
            Assert.Single(rendered.Databases).Containers.Select(c => (c.Id, c.Throughput, c.PhysicalPartitions, c.PartitionKeyPath)).OrderBy(c => c.Id, StringComparer.Ordinal),
            CosmosContainerSpec.Of(Catalog[step]).Select(c => (c.Id, (int?)c.Throughput, (int?)c.PhysicalPartitions, c.PartitionKeyPath)));
    }

    /// <summary>A what-if's values reach the services as helm would render them, fractions and booleans included.</summary>
    [Theory]
    [InlineData("workflow")]
    [InlineData("droneScheduler")]
    [InlineData("gateway")]
    public void A_what_if_s_environment_is_what_helm_renders_for_the_same_values(string service)
    {
        var file = Path.Combine(Path.GetTempPath(), $"dronedelivery-whatif-{Guid.NewGuid():N}.yaml");
        File.WriteAllText(file, """
            commonSettings:
              Telemetry:
                TraceSamplingRatio: 0.25
              Resilience:
                Enabled: false
            droneScheduler:
              settings:
                Utilization:
                  MaxItemCount: 1000
            telemetry:
              otlpEndpoint: http://collector.monitoring:4318
              otlpProtocol: http/protobuf
            """);
        try
        {
            var whatIf = new WhatIf([
                new(ValuesSourceKind.File, file),
                new(ValuesSourceKind.Set, "workflow.settings.Processor.PrefetchCount=100,serviceBus.queues.deliveryrequests.maxDeliveryCount=7"),
                new(ValuesSourceKind.SetString, "gateway.settings.Backends.Delivery.Timeout=00:00:03")]);
            var render = Chart.Template(Chart.Step("B4").With("what-if", [.. whatIf.InHelmOrder.SelectMany(s => new[] { s.Flag, s.Text })]));

            AssertSameEnvironment(render, Catalog.WhatIf("B4", whatIf), ServiceKind.All.Single(s => s.ValuesKey == service));
        }
        finally
        {
            File.Delete(file);
        }
    }

    /// <summary>The lab renders every auth mode's settings as the chart does, not only the development issuer's.</summary>
    [Theory]
    [InlineData("auth.mode=entraId,auth.entraId.clientId=00000000-0000-0000-0000-0000000000c1,azure.tenantId=contoso.onmicrosoft.com")]
    [InlineData("auth.mode=entraId,auth.entraId.clientId=00000000-0000-0000-0000-0000000000c1,auth.entraId.tenantId=fabrikam.onmicrosoft.com,auth.audience=api://dronedelivery")]
    [InlineData("auth.mode=openIdConnect,auth.authority=https://issuer.example/realms/dd,auth.issuer=https://issuer.example/,auth.ownerClaim=customer_id,auth.clockSkew=00:00:30")]
    [InlineData("auth.developmentIssuer.issuer=kind-issuer,auth.audience=kind-api")]
    public void Each_auth_mode_s_settings_are_what_helm_renders(string values)
    {
        var render = Chart.Template(Chart.Step("A1").With("auth", "--set", values));
        var step = Catalog.WhatIf("A1", new WhatIf([new(ValuesSourceKind.Set, values)]));

        foreach (var service in ServiceKind.All)
        {
            var rendered = Render.Environment(render.Get("Deployment", service.Name).Containers.Single())
                .Where(e => e.Key.StartsWith("Authentication__", StringComparison.Ordinal))
                .OrderBy(e => e.Key, StringComparer.Ordinal);
            var lab = ServiceEnvironment.Render(step.Values, service, ClusterWiring)
                .Where(e => e.Key.StartsWith("Authentication__", StringComparison.Ordinal))
                .OrderBy(e => e.Key, StringComparer.Ordinal);

            Assert.Equal(rendered, lab);
            Assert.Equal(service.Public, lab.Any());
        }
    }

    private static void AssertSameEnvironment(Render render, Step step, ServiceKind service)
    {
        var rendered = Render.Environment(render.Get("Deployment", service.Name).Containers.Single())
            .Where(e => !PodVariables.Contains(e.Key))
            .OrderBy(e => e.Key, StringComparer.Ordinal);

        Assert.Equal(rendered, ServiceEnvironment.Render(step.Values, service, ClusterWiring).OrderBy(e => e.Key, StringComparer.Ordinal));
    }
}
