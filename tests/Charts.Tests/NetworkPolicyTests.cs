using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>The NetworkPolicies admit what a real cluster's add-ons and Azure need, and nothing wider.</summary>
public sealed class NetworkPolicyTests
{
    [Theory]
    [InlineData("ingress-nginx")]
    [InlineData("app-routing-system")]
    public void The_public_services_admit_the_configured_ingress_controller_namespace(string controllerNamespace)
    {
        var render = Chart.Template(Chart.EverythingOn.With($"ingress from {controllerNamespace}",
            "--set", $"ingress.controllerNamespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name={controllerNamespace}"));

        var gateway = render.OfKind("NetworkPolicy").Single(p => p.Name == "gateway");
        var admitted = gateway.Body.List("spec", "ingress")
            .SelectMany(rule => rule.List("from"))
            .Select(peer => peer.Text("namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"))
            .OfType<string>()
            .ToList();

        Assert.Contains(controllerNamespace, admitted);
    }

    [Fact]
    public void Cosmos_DB_clients_may_reach_the_Direct_mode_port_range_on_Azure()
    {
        var render = Chart.Template(Chart.Azure);

        var scheduler = render.OfKind("NetworkPolicy").Single(p => p.Name == "dronescheduler");
        var ports = scheduler.Body.List("spec", "egress").SelectMany(rule => rule.List("ports")).ToList();

        Assert.Contains(ports, p => p.Text("port") == "10000" && p.Text("endPort") == "20000");
        Assert.Contains(ports, p => p.Text("port") == "443" && p.Text("endPort") is null);
    }
}
