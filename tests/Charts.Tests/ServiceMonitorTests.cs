using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The ServiceMonitor renders in the group its Prometheus reads: monitoring.coreos.com/v1 for the
/// Prometheus Operator (kind), azmonitoring.coreos.com/v1 for Azure Monitor managed Prometheus (AKS),
/// which ignores the former.
/// </summary>
public sealed class ServiceMonitorTests
{
    public static TheoryData<string> ApiVersions => new("monitoring.coreos.com/v1", "azmonitoring.coreos.com/v1");

    [Theory]
    [MemberData(nameof(ApiVersions))]
    public void The_ServiceMonitor_renders_in_the_chosen_group_and_passes_kubeconform(string apiVersion)
    {
        var render = Chart.Template(Chart.EverythingOn.With($"service monitor {apiVersion}",
            "--set", $"telemetry.serviceMonitor.apiVersion={apiVersion}"));

        var monitor = render.Get("ServiceMonitor", "dronedelivery");
        Assert.Equal(apiVersion, monitor.Body.Text("apiVersion"));
        var result = Kubeconform.Validate(render.Text);
        Assert.True(result.ExitCode == 0, result.Describe());
        Assert.Contains($"Valid: {render.Manifests.Count}, Invalid: 0, Errors: 0, Skipped: 0", result.StandardOutput);
    }

    [Fact]
    public void Both_groups_scrape_the_same_targets_with_the_same_relabelling()
    {
        var operatorMonitor = Document(Chart.Template(Chart.EverythingOn));
        var azureMonitor = Document(Chart.Template(Chart.EverythingOn.With("service monitor azmonitoring.coreos.com/v1",
            "--set", "telemetry.serviceMonitor.apiVersion=azmonitoring.coreos.com/v1")));

        Assert.Contains("apiVersion: monitoring.coreos.com/v1\n", operatorMonitor, StringComparison.Ordinal);
        Assert.Equal(
            operatorMonitor.Replace("apiVersion: monitoring.coreos.com/v1\n", "", StringComparison.Ordinal),
            azureMonitor.Replace("apiVersion: azmonitoring.coreos.com/v1\n", "", StringComparison.Ordinal));
    }

    /// <summary>The ServiceMonitor's document in helm's output, as text.</summary>
    private static string Document(Render render) =>
        render.Text.Replace("\r\n", "\n", StringComparison.Ordinal).Split("\n---", StringSplitOptions.None)
            .Single(d => d.Contains("\nkind: ServiceMonitor\n", StringComparison.Ordinal));

    [Fact]
    public void The_default_and_the_kind_values_use_the_Prometheus_Operator_group()
    {
        Assert.Equal("monitoring.coreos.com/v1", Chart.Template(Chart.Kind).Get("ServiceMonitor", "dronedelivery").Body.Text("apiVersion"));
        Assert.Equal("monitoring.coreos.com/v1", Chart.Template(Chart.EverythingOn).Get("ServiceMonitor", "dronedelivery").Body.Text("apiVersion"));
    }

    [Fact]
    public void The_AKS_values_use_the_group_managed_Prometheus_reads()
    {
        Assert.Equal("azmonitoring.coreos.com/v1", Chart.Template(Chart.AzureEverythingOn).Get("ServiceMonitor", "dronedelivery").Body.Text("apiVersion"));
    }

    [Fact]
    public void The_AKS_guide_s_managed_Prometheus_values_render_a_ServiceMonitor_it_reads_and_let_its_scraper_in()
    {
        var guide = File.ReadAllText(RepositoryLayout.InRepository("docs", "deploy-aks.md")).Replace("\r\n", "\n", StringComparison.Ordinal);
        var paragraph = guide.IndexOf("**Prometheus metrics.**", StringComparison.Ordinal);
        Assert.True(paragraph >= 0, "deploy-aks.md has no paragraph on Prometheus metrics");
        var start = guide.IndexOf("```yaml\n", paragraph, StringComparison.Ordinal) + "```yaml\n".Length;
        var values = guide[start..guide.IndexOf("```", start, StringComparison.Ordinal)];
        var file = Path.Combine(Path.GetTempPath(), $"dronedelivery-managed-prometheus-{Guid.NewGuid():N}.yaml");
        File.WriteAllText(file, values);
        try
        {
            var render = Chart.Template(Chart.Azure.With("azure, guide's managed Prometheus values", "-f", file));

            Assert.Equal("azmonitoring.coreos.com/v1", render.Get("ServiceMonitor", "dronedelivery").Body.Text("apiVersion"));
            var scrapers = render.Get("NetworkPolicy", "gateway").Body.List("spec", "ingress")
                .Where(rule => rule.List("ports").Any(p => p.Text("port") == "8080"))
                .SelectMany(rule => rule.List("from"))
                .ToList();
            Assert.Contains(scrapers, peer => peer.Text("namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") == "kube-system"
                && peer.Text("podSelector", "matchLabels", "rsName") == "ama-metrics");
            var result = Kubeconform.Validate(render.Text);
            Assert.True(result.ExitCode == 0, result.Describe());
        }
        finally
        {
            File.Delete(file);
        }
    }

    [Fact]
    public void Schema_refuses_a_group_no_Prometheus_reads()
    {
        var error = Chart.TemplateError("--set", "telemetry.serviceMonitor.enabled=true", "--set", "telemetry.serviceMonitor.apiVersion=monitoring.coreos.com/v2");

        Assert.Contains("at '/telemetry/serviceMonitor/apiVersion'", error);
        Assert.Contains("value must be one of", error);
    }
}
