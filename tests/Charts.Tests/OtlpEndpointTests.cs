using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// telemetry.otlpEndpoint and telemetry.otlpProtocol reach the exporters of every service and of both emulators,
/// and each of their NetworkPolicies lets them out to the endpoint's port: in the endpoint's namespace for a
/// Service of the cluster, through the external CIDRs for anything else.
/// </summary>
public sealed class OtlpEndpointTests
{
    private static readonly string[] Variables = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"];

    private static readonly string[] EmulatorNames = ["cosmosdb-emulator", "servicebus-emulator"];

    /// <summary>The pods with an OTLP exporter: the six services and the two emulators.</summary>
    private static List<Manifest> Exporters(Render render)
    {
        var services = PodSpecTests.Services(render).ToList();
        var emulators = PodSpecTests.Emulators(render).ToList();
        Assert.Equal(6, services.Count);
        Assert.Equal(EmulatorNames, emulators.Select(e => e.Name).Order(StringComparer.Ordinal));
        return [.. services, .. emulators];
    }

    [Theory]
    [InlineData("")]
    [InlineData("grpc")]
    [InlineData("http/protobuf")]
    public void The_endpoint_and_protocol_are_set_on_every_service_and_emulator_and_on_no_other_pod(string protocol)
    {
        var render = Chart.Template(Chart.Kind.With($"kind, OTLP {protocol}",
            "--set", "telemetry.otlpEndpoint=http://aspire-dashboard.dronedelivery:18889",
            "--set", $"telemetry.otlpProtocol={protocol}"));

        var exporters = Exporters(render);
        foreach (var workload in exporters)
        {
            var environment = Render.Environment(workload.Containers.Single());
            Assert.Equal("http://aspire-dashboard.dronedelivery:18889", environment.GetValueOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT"));
            Assert.Equal(protocol.Length == 0 ? null : protocol, environment.GetValueOrDefault("OTEL_EXPORTER_OTLP_PROTOCOL"));
        }

        // Redis and the Jobs (the seed, the load tests) have no OTLP exporter.
        var others = render.Manifests.Where(m => m.PodSpec is not null && !exporters.Contains(m)).ToList();
        Assert.Contains(others, m => m.Kind == "Deployment" && m.Name == "redis");
        Assert.Contains(others, m => m.Kind == "Job");
        Assert.All(others, m => Assert.All(m.Containers, c => Assert.DoesNotContain(Render.Environment(c).Keys, Variables.Contains)));
    }

    [Fact]
    public void Without_an_endpoint_no_service_or_emulator_gets_either_variable_or_a_rule_for_a_collector()
    {
        var render = Chart.Template(Chart.Kind);

        foreach (var workload in Exporters(render))
        {
            Assert.DoesNotContain(Render.Environment(workload.Containers.Single()).Keys, Variables.Contains);
            var egress = render.Get("NetworkPolicy", workload.Name).Body.List("spec", "egress");
            Assert.DoesNotContain(egress, rule => rule.List("to").Any(peer => peer.Map("namespaceSelector") is not null || peer.Map("ipBlock") is not null));
        }

        // The emulators call no one: their policies govern only who reaches them.
        foreach (var emulator in EmulatorNames)
        {
            var policy = render.Get("NetworkPolicy", emulator);
            Assert.Equal(["Ingress"], policy.Body.List("spec", "policyTypes").Cast<string>());
            Assert.Null(policy.Body.At("spec", "egress"));
        }
    }

    [Theory]
    [InlineData("http://aspire-dashboard.dronedelivery:18889", "dronedelivery", "18889")]
    [InlineData("http://otel-collector.monitoring:4317", "monitoring", "4317")]
    [InlineData("http://otel-collector.monitoring.svc.cluster.local:4318", "monitoring", "4318")]
    [InlineData("http://otel-collector:4317", Chart.Namespace, "4317")]
    [InlineData("https://otlp.example.com", null, "443")]
    [InlineData("http://10.1.2.3:4317", null, "4317")]
    public void Every_service_and_emulator_may_reach_the_endpoint_s_port_in_its_namespace_or_outside_the_cluster(string endpoint, string? inNamespace, string port)
    {
        var render = Chart.Template(Chart.Kind.With($"kind, OTLP at {endpoint}", "--set", $"telemetry.otlpEndpoint={endpoint}"));

        foreach (var workload in Exporters(render))
        {
            var policy = render.Get("NetworkPolicy", workload.Name);
            Assert.Contains("Egress", policy.Body.List("spec", "policyTypes").Cast<string>());
            var rules = policy.Body.List("spec", "egress").Where(rule => rule.List("ports").Any(p => p.Text("port") == port)).ToList();
            var rule = Assert.Single(rules);
            var peers = rule.List("to").ToList();
            if (inNamespace is not null)
            {
                var peer = Assert.Single(peers);
                Assert.Equal(inNamespace, peer.Text("namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"));
                // A collector in the cluster opens nothing towards the outside.
                Assert.DoesNotContain(policy.Body.List("spec", "egress"), r => r.List("to").Any(p => p.Map("ipBlock") is not null));
            }
            else
            {
                Assert.Equal(["0.0.0.0/0"], peers.Select(p => p.Text("ipBlock", "cidr")));
            }
        }

        // The collector is the only destination the emulators have.
        foreach (var emulator in EmulatorNames)
        {
            Assert.Single(render.Get("NetworkPolicy", emulator).Body.List("spec", "egress"));
        }

        var valid = Kubeconform.Validate(render.Text);
        Assert.True(valid.ExitCode == 0, valid.Describe());
    }

    [Fact]
    public void A_protocol_the_exporters_do_not_speak_is_refused()
    {
        var error = Chart.TemplateError("--set", "telemetry.otlpEndpoint=http://collector:4317", "--set", "telemetry.otlpProtocol=http/json");

        Assert.Contains("otlpProtocol", error, StringComparison.Ordinal);
    }
}
