using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

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

        // The public APIs only: Delivery, Package and DroneScheduler stay internal on kind too.
        Assert.Equal(["gateway", "ingestion"], nodePorts.Select(p => p.Name).Order(StringComparer.Ordinal));
        foreach (var (name, port) in nodePorts)
        {
            var mapping = mappings.SingleOrDefault(m => m.Text("containerPort") == port);
            Assert.True(mapping is not null, $"{name}'s NodePort {port} is not mapped by k8s/kind/cluster.yaml");
            Assert.Equal("127.0.0.1", mapping.Text("listenAddress"));
        }

        Assert.All(cluster.List("nodes").OfType<IDictionary<object, object?>>(), node => Assert.StartsWith("kindest/node:v1.33.", node.Text("image")));
    }

    [Fact]
    public void The_README_names_the_services_the_kind_cluster_maps_to_host_ports_and_no_others()
    {
        var row = File.ReadAllLines(Path.Combine(K8s, "README.md")).Single(l => l.StartsWith("| `kind/cluster.yaml` |", StringComparison.Ordinal));
        var nodePorts = Chart.Template(Chart.Kind).OfKind("Service")
            .Where(s => s.Body.Text("spec", "type") == "NodePort").Select(s => s.Name).ToHashSet(StringComparer.Ordinal);

        foreach (var service in new[] { "gateway", "ingestion", "workflow", "delivery", "package", "dronescheduler" })
        {
            Assert.True(nodePorts.Contains(service) == Regex.IsMatch(row, $@"\b{service}\b"),
                $"k8s/README.md {(nodePorts.Contains(service) ? "does not name" : "names")} {service} among the host ports, but the kind values {(nodePorts.Contains(service) ? "give it" : "give it no")} NodePort: {row}");
        }
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
    public void Kind_images_are_built_without_attestations_so_kind_can_import_them()
    {
        // With Docker's containerd image store, BuildKit's provenance/SBOM attestation manifests are
        // left out of `docker save`'s archive and kind's import fails on the missing content.
        var kind = KindMode(File.ReadAllText(Path.Combine(K8s, "build-images.sh")));
        var lines = kind.Split('\n').Select(l => l.Trim()).Where(l => !l.StartsWith('#')).ToList();

        // The services', emulators' and load driver's images, and the Aspire dashboard's.
        var imageBuilds = lines.Where(l => Regex.IsMatch(l, @" -f \S*Dockerfile ")).ToList();
        Assert.Equal(["src/Dockerfile", "k8s/observability/aspire-dashboard.Dockerfile"], imageBuilds.Select(l => Regex.Match(l, @" -f (\S+)").Groups[1].Value));
        Assert.All(imageBuilds, l => Assert.StartsWith("\"${build[@]}\"", l, StringComparison.Ordinal));
        var builders = lines.Where(l => l.StartsWith("build=(", StringComparison.Ordinal)).ToList();
        Assert.Equal(["build=(docker buildx build --load --provenance=false --sbom=false)", "build=(docker build)"], builders);
        // The classic builder (no attestations) only where there is no BuildKit client.
        Assert.True(lines.IndexOf("if docker buildx version >/dev/null 2>&1; then") is var check and >= 0
            && lines.IndexOf("else") > check && lines.IndexOf("build=(docker build)") > lines.IndexOf("else"),
            "the kind mode must fall back to the classic builder only when docker buildx is missing");

        var guide = File.ReadAllText(RepositoryLayout.InRepository("docs", "deploy-kind.md"));
        Assert.Contains("docker buildx build --load --provenance=false --sbom=false", guide, StringComparison.Ordinal);
        Assert.DoesNotContain("\ndocker build ", guide, StringComparison.Ordinal);
    }

    /// <summary>The kind mode of build-images.sh: from its <c>kind)</c> to its <c>;;</c>.</summary>
    internal static string KindMode(string script)
    {
        var start = script.IndexOf("\n  kind)\n", StringComparison.Ordinal);
        Assert.True(start >= 0, "build-images.sh has no kind mode");
        return script[start..script.IndexOf("\n    ;;", start, StringComparison.Ordinal)];
    }

    [Fact]
    public void Image_build_script_builds_every_image_the_chart_deploys()
    {
        var script = File.ReadAllText(Path.Combine(K8s, "build-images.sh"));
        var images = Chart.Template(Chart.KindLoadTests).Manifests
            .SelectMany(m => m.Containers)
            .Select(c => c.Text("image")!)
            .Where(i => i.StartsWith("dronedelivery/", StringComparison.Ordinal))
            .Select(i => i["dronedelivery/".Length..i.IndexOf(':', StringComparison.Ordinal)])
            .Distinct()
            .ToList();

        Assert.Equal(9, images.Count);
        foreach (var image in images)
        {
            Assert.Contains($"\"{image}:", script);
        }
    }
}
