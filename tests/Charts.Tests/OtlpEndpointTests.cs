using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// telemetry.otlpEndpoint and telemetry.otlpProtocol reach every service's exporters, and each service's
/// NetworkPolicy lets it out to the endpoint's port: in the endpoint's namespace for a Service of the cluster,
/// through the external CIDRs for anything else.
/// </summary>
public sealed class OtlpEndpointTests
{
    private static readonly string[] Variables = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"];

    [Theory]
    [InlineData("")]
    [InlineData("grpc")]
    [InlineData("http/protobuf")]
    public void The_endpoint_and_protocol_are_set_on_every_service_and_on_no_other_pod(string protocol)
    {
        var render = Chart.Template(Chart.Kind.With($"kind, OTLP {protocol}",
            "--set", "telemetry.otlpEndpoint=http://aspire-dashboard.dronedelivery:18889",
            "--set", $"telemetry.otlpProtocol={protocol}"));

        var services = PodSpecTests.Services(render).ToList();
        Assert.Equal(6, services.Count);
        foreach (var service in services)
        {
            var environment = Render.Environment(service.Containers.Single());
            Assert.Equal("http://aspire-dashboard.dronedelivery:18889", environment.GetValueOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT"));
            Assert.Equal(protocol.Length == 0 ? null : protocol, environment.GetValueOrDefault("OTEL_EXPORTER_OTLP_PROTOCOL"));
        }

        // The emulators (Prometheus's /metrics only), Redis and the Jobs have no OTLP exporter.
        var others = render.Manifests.Where(m => m.PodSpec is not null && !services.Contains(m)).ToList();
        Assert.NotEmpty(others);
        Assert.All(others, m => Assert.All(m.Containers, c => Assert.DoesNotContain(Render.Environment(c).Keys, Variables.Contains)));
    }

    [Fact]
    public void Without_an_endpoint_no_service_gets_either_variable_or_a_rule_for_a_collector()
    {
        var render = Chart.Template(Chart.Kind);

        foreach (var service in PodSpecTests.Services(render))
        {
            Assert.DoesNotContain(Render.Environment(service.Containers.Single()).Keys, Variables.Contains);
            var egress = render.Get("NetworkPolicy", service.Name).Body.List("spec", "egress");
            Assert.DoesNotContain(egress, rule => rule.List("to").Any(peer => peer.Map("namespaceSelector") is not null || peer.Map("ipBlock") is not null));
        }
    }

    [Theory]
    [InlineData("http://aspire-dashboard.dronedelivery:18889", "dronedelivery", "18889")]
    [InlineData("http://otel-collector.monitoring:4317", "monitoring", "4317")]
    [InlineData("http://otel-collector.monitoring.svc.cluster.local:4318", "monitoring", "4318")]
    [InlineData("http://otel-collector:4317", Chart.Namespace, "4317")]
    [InlineData("https://otlp.example.com", null, "443")]
    [InlineData("http://10.1.2.3:4317", null, "4317")]
    public void Every_service_may_reach_the_endpoint_s_port_in_its_namespace_or_outside_the_cluster(string endpoint, string? inNamespace, string port)
    {
        var render = Chart.Template(Chart.Kind.With($"kind, OTLP at {endpoint}", "--set", $"telemetry.otlpEndpoint={endpoint}"));

        foreach (var service in PodSpecTests.Services(render))
        {
            var policy = render.Get("NetworkPolicy", service.Name);
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
