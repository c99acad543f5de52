using System.Diagnostics;
using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The standalone Aspire dashboard of k8s/observability (docs/deploy-kind.md, section 8): a valid manifest whose
/// pod passes the namespace's restricted Pod Security Standard, listening where its Service and the guide's
/// <c>telemetry.otlpEndpoint</c> send, reachable through the NetworkPolicies from the release's pods only, and an
/// image k8s/build-images.sh builds under the name and version the manifest runs.
/// </summary>
public sealed partial class AspireDashboardTests
{
    private static readonly string K8s = RepositoryLayout.InRepository("k8s");

    private static readonly string ManifestFile = Path.Combine(K8s, "observability", "aspire-dashboard.yaml");

    private static readonly string DockerfileFile = Path.Combine(K8s, "observability", "aspire-dashboard.Dockerfile");

    private static readonly Lazy<IReadOnlyList<Manifest>> Objects = new(() =>
        [.. Yaml.Documents(File.ReadAllText(ManifestFile)).Select(d => new Manifest(d.Text("kind")!, d.Text("metadata", "name")!, d))]);

    private static Manifest Deployment => Objects.Value.Single(m => m.Kind == "Deployment");

    private static IDictionary<object, object?> Container => Deployment.Containers.Single();

    [Fact]
    public void Every_Kubernetes_object_under_k8s_passes_kubeconform_strict()
    {
        // Everything with an apiVersion and a kind but kind's own cluster configuration, which no cluster receives.
        var files = Directory.GetFiles(K8s, "*.yaml", SearchOption.AllDirectories)
            .Where(f => Yaml.Documents(File.ReadAllText(f)).Any(d => d.Text("apiVersion") is { } api && !api.StartsWith("kind.x-k8s.io/", StringComparison.Ordinal) && d.Text("kind") is not null))
            .Select(f => Path.GetRelativePath(K8s, f).Replace('\\', '/'))
            .Order(StringComparer.Ordinal)
            .ToList();

        Assert.Equal(["namespace.yaml", "observability/aspire-dashboard.yaml"], files);
        foreach (var file in files)
        {
            var result = Kubeconform.Validate(File.ReadAllText(Path.Combine(K8s, file)));
            Assert.True(result.ExitCode == 0, $"{file}: {result.Describe()}");
        }

        Assert.Equal(["Deployment", "Service", "NetworkPolicy"], Objects.Value.Select(o => o.Kind));
    }

    [Fact]
    public void The_dashboard_pod_passes_the_restricted_standard_with_a_writable_tmp_and_bounded_resources()
    {
        PodSpecTests.AssertRestricted(Deployment, Container);

        var tmp = Container.List("volumeMounts").Single(m => m.Text("mountPath") == "/tmp").Text("name");
        Assert.NotNull(Deployment.PodSpec.List("volumes").Single(v => v.Text("name") == tmp).Map("emptyDir"));
        foreach (var kind in new[] { "requests", "limits" })
        {
            Assert.All(new[] { "cpu", "memory" }, resource => Assert.False(string.IsNullOrEmpty(Container.Text("resources", kind, resource)), $"no resources.{kind}.{resource}"));
        }

        Assert.Null(Deployment.Body.Text("metadata", "namespace"));
    }

    [Fact]
    public void The_dashboard_listens_where_its_Service_and_the_guide_s_endpoint_send()
    {
        var environment = Render.Environment(Container);
        var containerPorts = Container.List("ports").ToDictionary(p => p.Text("name")!, p => p.Text("containerPort")!);

        // Every address it listens on is on all interfaces (the pod's address), on the port its Service targets by name.
        Assert.Equal(
            new Dictionary<string, string>
            {
                ["http"] = environment["ASPNETCORE_URLS"],
                ["otlp-grpc"] = environment["ASPIRE_DASHBOARD_OTLP_ENDPOINT_URL"],
                ["otlp-http"] = environment["ASPIRE_DASHBOARD_OTLP_HTTP_ENDPOINT_URL"],
            },
            containerPorts.ToDictionary(p => p.Key, p => $"http://0.0.0.0:{p.Value}"));
        Assert.Equal("true", environment["ASPIRE_DASHBOARD_UNSECURED_ALLOW_ANONYMOUS"]);

        var service = Objects.Value.Single(m => m.Kind == "Service");
        Assert.Equal(Deployment.Body.Map("spec", "selector", "matchLabels"), service.Body.Map("spec", "selector"));
        var servicePorts = service.Body.List("spec", "ports").ToDictionary(p => p.Text("targetPort")!, p => p.Text("port")!);
        Assert.Equal(containerPorts.OrderBy(p => p.Key), servicePorts.OrderBy(p => p.Key));

        // The guide points the services at the Service's gRPC port, in the namespace it installs in.
        var endpoint = new Uri(GuideEndpoint());
        Assert.Equal($"{service.Name}.{Chart.Namespace}", endpoint.Host);
        Assert.Equal(servicePorts["otlp-grpc"], endpoint.Port.ToString(System.Globalization.CultureInfo.InvariantCulture));
    }

    [Fact]
    public void The_release_s_services_and_emulators_may_send_to_the_dashboard_and_nothing_may_reach_its_UI()
    {
        var render = Chart.Template(Chart.Kind.With("kind, the guide's OTLP endpoint", "--set", $"telemetry.otlpEndpoint={GuideEndpoint()}"));
        var policy = Objects.Value.Single(m => m.Kind == "NetworkPolicy");
        Assert.Equal(Deployment.Body.Text("spec", "template", "metadata", "labels", "app.kubernetes.io/name"), policy.Body.Text("spec", "podSelector", "matchLabels", "app.kubernetes.io/name"));
        Assert.Equal(["Ingress", "Egress"], policy.Body.List("spec", "policyTypes").Cast<string>());
        Assert.Empty(policy.Body.List("spec", "egress"));

        var rule = Assert.Single(policy.Body.List("spec", "ingress"));
        Assert.Equal(["18889", "18890"], rule.List("ports").Select(p => p.Text("port")));
        var from = Assert.Single(rule.List("from")).Map("podSelector", "matchLabels")!;
        var senders = PodSpecTests.Services(render).Concat(PodSpecTests.Emulators(render)).ToList();
        Assert.Equal(8, senders.Count);
        foreach (var service in senders)
        {
            var labels = service.Body.Map("spec", "template", "metadata", "labels")!;
            Assert.All(from, label => Assert.Equal(label.Value, labels.TryGetValue(label.Key, out var value) ? value : null));
            var egress = render.Get("NetworkPolicy", service.Name).Body.List("spec", "egress");
            Assert.Contains(egress, r => r.List("ports").Any(p => p.Text("port") == "18889")
                && r.List("to").Any(p => p.Text("namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") == Chart.Namespace));
        }
    }

    [Fact]
    public void The_kind_build_makes_the_image_the_manifest_runs_from_the_package_at_its_version()
    {
        var dockerfile = File.ReadAllText(DockerfileFile);
        var version = VersionArgument().Match(dockerfile).Groups["version"].Value;
        Assert.Matches(@"^\d+\.\d+\.\d+$", version);
        Assert.Contains("PackageDownload Include=\\\"Aspire.Dashboard.Sdk.linux-x64\\\" Version=\\\"[${ASPIRE_DASHBOARD_VERSION}]\\\"", dockerfile, StringComparison.Ordinal);
        Assert.Equal($"dronedelivery/aspire-dashboard:{version}", Container.Text("image"));
        Assert.Equal("IfNotPresent", Container.Text("imagePullPolicy"));

        var kind = KubernetesFilesTests.KindMode(File.ReadAllText(Path.Combine(K8s, "build-images.sh")));
        Assert.Contains(
            "\"${build[@]}\" -f k8s/observability/aspire-dashboard.Dockerfile -t \"dronedelivery/aspire-dashboard:$dashboard\" k8s/observability",
            kind);
        Assert.Contains("load \"dronedelivery/aspire-dashboard:$dashboard\"", kind);

        // The script's own reading of the version, run as the script runs it (from the repository's root).
        var reading = kind.Split('\n').Select(l => l.Trim()).Single(l => l.StartsWith("dashboard=", StringComparison.Ordinal));
        var bash = new ProcessStartInfo("bash", ["-c", reading + "; printf %s \"$dashboard\""])
        {
            WorkingDirectory = RepositoryLayout.Root,
            RedirectStandardOutput = true,
        };
        using var process = Process.Start(bash)!;
        var read = process.StandardOutput.ReadToEnd();
        process.WaitForExit();
        Assert.Equal(version, read);
    }

    /// <summary>The <c>telemetry.otlpEndpoint</c> docs/deploy-kind.md sets.</summary>
    private static string GuideEndpoint() =>
        GuideSetting().Match(File.ReadAllText(RepositoryLayout.InRepository("docs", "deploy-kind.md"))).Groups["endpoint"].Value is { Length: > 0 } endpoint
            ? endpoint
            : throw new InvalidOperationException("docs/deploy-kind.md sets no telemetry.otlpEndpoint");

    [GeneratedRegex(@"--set telemetry\.otlpEndpoint=(?<endpoint>\S+)")]
    private static partial Regex GuideSetting();

    [GeneratedRegex(@"^ARG ASPIRE_DASHBOARD_VERSION=(?<version>\S+)$", RegexOptions.Multiline)]
    private static partial Regex VersionArgument();
}
