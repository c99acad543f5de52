using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>The chart lints strictly and renders only valid Kubernetes 1.33 objects, whatever the values.</summary>
public sealed class ChartValidityTests
{
    [Fact]
    public void Chart_passes_strict_lint()
    {
        var result = ExternalTool.Run(ExternalTool.Helm, ["lint", "--strict", "--kube-version", Chart.KubernetesVersion, Chart.Directory]);

        Assert.True(result.ExitCode == 0, result.Describe());
    }

    [Theory]
    [MemberData(nameof(Chart.Steps), MemberType = typeof(Chart))]
    public void Chart_passes_strict_lint_with_each_step_overlay(string step)
    {
        var result = ExternalTool.Run(ExternalTool.Helm,
            ["lint", "--strict", "--kube-version", Chart.KubernetesVersion, Chart.Directory, "-f", Chart.StepFile(step)]);

        Assert.True(result.ExitCode == 0, result.Describe());
    }

    [Theory]
    [MemberData(nameof(Chart.ValueSetNames), MemberType = typeof(Chart))]
    public void Rendered_objects_are_valid_for_Kubernetes_1_33(string valueSet)
    {
        var render = Chart.Template(Chart.ValueSet(valueSet));

        var result = Kubeconform.Validate(render.Text);

        Assert.True(result.ExitCode == 0, result.Describe());
        Assert.Contains($"Valid: {render.Manifests.Count}, Invalid: 0, Errors: 0, Skipped: 0", result.StandardOutput);
    }

    [Fact]
    public void Kubeconform_rejects_a_misspelt_field_of_a_custom_resource()
    {
        // Proves the CRD schemas are really applied: a typo in a ScaledObject must not pass.
        var render = Chart.Template(Chart.EverythingOn);
        var broken = render.Text.Replace("minReplicaCount:", "minReplicasCount:", StringComparison.Ordinal);

        var result = Kubeconform.Validate(broken);

        Assert.NotEqual(0, result.ExitCode);
        Assert.Contains("minReplicasCount", result.StandardOutput);
    }

    [Fact]
    public void Emulators_on_renders_the_emulators_and_Redis_and_off_renders_neither()
    {
        var on = Chart.Template(Chart.Defaults);
        var off = Chart.Template(Chart.Azure);

        foreach (var name in new[] { "cosmosdb-emulator", "servicebus-emulator", "redis" })
        {
            Assert.Contains(on.OfKind("Deployment"), d => d.Name == name);
            Assert.DoesNotContain(off.OfKind("Deployment"), d => d.Name == name);
        }

        Assert.Equal(
            ["delivery", "dronescheduler", "gateway", "ingestion", "package", "workflow"],
            off.OfKind("Deployment").Select(d => d.Name).Order(StringComparer.Ordinal));
    }
}
