using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalSystem;

namespace DroneDelivery.Charts.Tests;

/// <summary>What k8s/ adds around the chart agrees with the chart: valid objects, matching ports and labels.</summary>
public sealed class KubernetesFilesTests
{
    private static readonly string K8s = RepositoryLayout.InRepository("k8s");

    [Fact]
    public void Namespace_manifest_is_valid_and_enforces_the_restricted_pod_security_standard()
    {
        var text = File.ReadAllText(Path.Combine(K8s, "namespace.yaml"));

        var result = Kubeconform.Validate(text);

        Assert.True(result.ExitCode == 0, result.Describe());
        var ns = Yaml.Parse(text);
        Assert.Equal(Chart.Namespace, ns.Text("metadata", "name"));
        Assert.Equal("restricted", ns.Text("metadata", "labels", "pod-security.kubernetes.io/enforce"));
    }

    [Fact]
    public void Kind_nodes_run_a_node_image_pinned_by_digest()
    {
        var cluster = Yaml.Parse(File.ReadAllText(Path.Combine(K8s, "kind", "cluster.yaml")));

        var images = cluster.List("nodes").Select(node => node.Text("image")).ToList();

        Assert.NotEmpty(images);
        Assert.All(images, image => Assert.Matches(@"^kindest/node:v1\.33\.\d+@sha256:[0-9a-f]{64}$", image));
    }

    [Fact]
    public void Kind_cluster_maps_every_NodePort_the_kind_values_open_to_a_loopback_host_port()
    {
        var cluster = Yaml.Parse(File.ReadAllText(Path.Combine(K8s, "kind", "cluster.yaml")));
        var mappings = cluster.List("nodes").First().List("extraPortMappings").OfType<IDictionary<object, object?>>().ToList();
        var render = Chart.Template(Chart.Kind);

        var nodePorts = render.OfKind("Service")
            .Where(s => s.Body.Text("spec", "type") == "NodePort")
            .Select(s => (s.Name, Port: s.Body.List("spec", "ports").OfType<IDictionary<object, object?>>().Single().Text("nodePort")))
            .ToList();

        Assert.Equal(["delivery", "gateway", "ingestion"], nodePorts.Select(p => p.Name).Order(StringComparer.Ordinal));
        foreach (var (name, port) in nodePorts)
        {
            var mapping = mappings.SingleOrDefault(m => m.Text("containerPort") == port);
            Assert.True(mapping is not null, $"{name}'s NodePort {port} is not mapped by k8s/kind/cluster.yaml");
            Assert.Equal("127.0.0.1", mapping.Text("listenAddress"));
        }

        Assert.All(cluster.List("nodes").OfType<IDictionary<object, object?>>(), node => Assert.StartsWith("kindest/node:v1.33.", node.Text("image")));
    }

    [Fact]
    public void Grafana_sidecar_looks_for_the_label_the_chart_puts_on_its_dashboards()
    {
        var stack = Yaml.Parse(File.ReadAllText(Path.Combine(K8s, "observability", "kube-prometheus-stack-values.yaml")));
        var dashboards = Chart.Template(Chart.Kind).OfKind("ConfigMap").Where(c => c.Name.StartsWith("dashboard-", StringComparison.Ordinal)).ToList();

        Assert.NotEmpty(dashboards);
        var label = stack.Text("grafana", "sidecar", "dashboards", "label")!;
        var value = stack.Text("grafana", "sidecar", "dashboards", "labelValue")!;
        Assert.All(dashboards, d => Assert.Equal(value, d.Body.Text("metadata", "labels", label)));
        Assert.Equal("ALL", stack.Text("grafana", "sidecar", "dashboards", "searchNamespace"));
        Assert.Equal("false", stack.Text("prometheus", "prometheusSpec", "serviceMonitorSelectorNilUsesHelmValues"));
    }

    [Fact]
    public void Image_build_script_builds_every_image_the_chart_deploys()
    {
        var script = File.ReadAllText(Path.Combine(K8s, "build-images.sh"));
        var images = Chart.Template(Chart.Defaults).Manifests
            .SelectMany(m => m.Containers)
            .Select(c => c.Text("image")!)
            .Where(i => i.StartsWith("dronedelivery/", StringComparison.Ordinal))
            .Select(i => i["dronedelivery/".Length..i.IndexOf(':', StringComparison.Ordinal)])
            .Distinct()
            .ToList();

        Assert.Equal(8, images.Count);
        foreach (var image in images)
        {
            Assert.Contains($"\"{image}:", script);
        }
    }
}
