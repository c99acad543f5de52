using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>Production defaults every pod of the chart must have, in every values set.</summary>
public sealed partial class PodSpecTests
{
    public static TheoryData<string> ValueSetNames => Chart.ValueSetNames;

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void Every_container_has_requests_and_limits(string valueSet)
    {
        foreach (var (workload, container) in Containers(valueSet))
        {
            foreach (var kind in new[] { "requests", "limits" })
            {
                foreach (var resource in new[] { "cpu", "memory" })
                {
                    Assert.False(string.IsNullOrEmpty(container.Text("resources", kind, resource)),
                        $"{workload.Id} container {container.Text("name")} has no resources.{kind}.{resource}");
                }
            }
        }
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void The_workflow_pod_is_given_longer_to_stop_than_the_workflow_waits_for_the_messages_it_holds(string valueSet)
    {
        var (workload, container) = Containers(valueSet).Single(c => c.Workload.Kind == "Deployment" && c.Workload.Id.EndsWith("workflow", StringComparison.Ordinal));
        var grace = int.Parse(workload.PodSpec.Text("terminationGracePeriodSeconds")!, System.Globalization.CultureInfo.InvariantCulture);
        var shutdown = container.List("env").OfType<IDictionary<object, object?>>().Single(e => e.Text("name") == "Processor__ShutdownTimeout").Text("value")!;

        // Room for the host's own stop after the processor's: what is still held when the grace period ends is cut off.
        Assert.True(TimeSpan.FromSeconds(grace) >= TimeSpan.Parse(shutdown, System.Globalization.CultureInfo.InvariantCulture) + TimeSpan.FromSeconds(15),
            $"{workload.Id}: terminationGracePeriodSeconds {grace} leaves no room after Processor:ShutdownTimeout {shutdown}.");
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void A_service_that_takes_requests_keeps_serving_until_it_has_left_its_endpoints_and_then_stops_gracefully(string valueSet)
    {
        // Gateway, Ingestion and the backends are called over their Services (and the ingress); the Workflow is not.
        var render = Chart.Template(Chart.ValueSet(valueSet));
        foreach (var deployment in Services(render).Where(d => d.Name != "workflow"))
        {
            var container = deployment.Containers.Single();
            var sleep = container.Text("lifecycle", "preStop", "sleep", "seconds");
            Assert.True(sleep is not null && int.Parse(sleep, System.Globalization.CultureInfo.InvariantCulture) >= 5,
                $"{deployment.Id} has no preStop sleep: during a rollout the ingress and kube-proxy still send it requests after it stopped.");
            var grace = int.Parse(deployment.PodSpec.Text("terminationGracePeriodSeconds")!, System.Globalization.CultureInfo.InvariantCulture);
            Assert.True(grace > int.Parse(sleep, System.Globalization.CultureInfo.InvariantCulture) + AspNetCoreShutdownSeconds,
                $"{deployment.Id}: terminationGracePeriodSeconds {grace} leaves no room for the {sleep} s preStop sleep and ASP.NET Core's {AspNetCoreShutdownSeconds} s graceful stop.");
        }
    }

    [Fact]
    public void The_host_stops_gracefully_for_the_30_seconds_the_chart_allows_for()
    {
        Assert.Equal(TimeSpan.FromSeconds(AspNetCoreShutdownSeconds), new Microsoft.Extensions.Hosting.HostOptions().ShutdownTimeout);
    }

    [Fact]
    public void The_chart_refuses_a_cluster_older_than_the_preStop_sleep_action()
    {
        // lifecycle.preStop.sleep is beta and on by default from Kubernetes 1.30 (alpha, off, in 1.29).
        var older = ExternalTool.Run(ExternalTool.Helm, ["template", Chart.ReleaseName, Chart.Directory, "--kube-version", "1.29.9"]);
        var supported = ExternalTool.Run(ExternalTool.Helm, ["template", Chart.ReleaseName, Chart.Directory, "--kube-version", "1.30.0"]);

        Assert.NotEqual(0, older.ExitCode);
        Assert.Contains("incompatible with Kubernetes v1.29.9", older.StandardError, StringComparison.Ordinal);
        Assert.True(supported.ExitCode == 0, supported.Describe());
    }

    [Fact]
    public void The_chart_refuses_a_grace_period_too_short_for_the_preStop_sleep()
    {
        var error = Chart.TemplateError("--set", "serviceDefaults.terminationGracePeriodSeconds=30");

        Assert.Contains("terminationGracePeriodSeconds (30) must exceed preStopSleepSeconds (10)", error);
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void Every_long_running_container_has_liveness_and_readiness_probes(string valueSet)
    {
        foreach (var (workload, container) in Containers(valueSet).Where(c => c.Workload.Kind == "Deployment"))
        {
            Assert.True(container.At("livenessProbe") is not null, $"{workload.Id} has no liveness probe");
            Assert.True(container.At("readinessProbe") is not null, $"{workload.Id} has no readiness probe");
        }
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void Our_services_probe_the_health_endpoints_of_ServiceDefaults(string valueSet)
    {
        foreach (var (workload, container) in Containers(valueSet).Where(c => c.Workload.Body.Text("metadata", "labels", "app.kubernetes.io/component") == "service"))
        {
            Assert.Equal("/health/live", container.Text("livenessProbe", "httpGet", "path"));
            Assert.Equal("/health/ready", container.Text("readinessProbe", "httpGet", "path"));
            Assert.Equal("/health/live", container.Text("startupProbe", "httpGet", "path"));
            Assert.True(container.List("ports").OfType<IDictionary<object, object?>>().Any(p => p.Text("name") == "http" && p.Text("containerPort") == "8080"),
                $"{workload.Id} does not expose http on 8080");
        }
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void Every_pod_runs_non_root_read_only_without_privileges(string valueSet)
    {
        foreach (var (workload, container) in Containers(valueSet))
        {
            AssertRestricted(workload, container);
        }
    }

    /// <summary>The pod and the container run non-root, with a read-only root file system, no privileges and RuntimeDefault seccomp.</summary>
    internal static void AssertRestricted(Manifest workload, IDictionary<object, object?> container)
    {
        var pod = workload.PodSpec!;
        var name = $"{workload.Id} container {container.Text("name")}";
        Assert.Equal("true", pod.Text("securityContext", "runAsNonRoot"));
        Assert.Equal("RuntimeDefault", pod.Text("securityContext", "seccompProfile", "type"));
        Assert.NotEqual("0", pod.Text("securityContext", "runAsUser"));
        Assert.True(container.Text("securityContext", "runAsNonRoot") == "true", $"{name}: runAsNonRoot");
        Assert.True(container.Text("securityContext", "readOnlyRootFilesystem") == "true", $"{name}: readOnlyRootFilesystem");
        Assert.True(container.Text("securityContext", "allowPrivilegeEscalation") == "false", $"{name}: allowPrivilegeEscalation");
        Assert.True(container.Text("securityContext", "seccompProfile", "type") == "RuntimeDefault", $"{name}: seccomp");
        Assert.True(container.List("securityContext", "capabilities", "drop").Contains("ALL"), $"{name}: capabilities not dropped");
        Assert.True(container.At("securityContext", "capabilities", "add") is null, $"{name}: adds capabilities");
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void Every_container_has_a_writable_tmp_on_an_emptyDir(string valueSet)
    {
        foreach (var (workload, container) in Containers(valueSet))
        {
            var mount = container.List("volumeMounts").OfType<IDictionary<object, object?>>().SingleOrDefault(m => m.Text("mountPath") == "/tmp");
            Assert.True(mount is not null, $"{workload.Id} container {container.Text("name")} has no /tmp mount");
            var volume = workload.PodSpec.List("volumes").OfType<IDictionary<object, object?>>().Single(v => v.Text("name") == mount.Text("name"));
            Assert.True(volume.At("emptyDir") is not null, $"{workload.Id}: /tmp is not an emptyDir");
        }
    }

    [Theory]
    [MemberData(nameof(ValueSetNames))]
    public void Every_image_has_a_pinned_tag(string valueSet)
    {
        foreach (var (workload, container) in Containers(valueSet))
        {
            var image = container.Text("image")!;
            Assert.Matches(PinnedImage(), image);
            Assert.False(image.EndsWith(":latest", StringComparison.Ordinal), $"{workload.Id} uses {image}");
        }
    }

    [Fact]
    public void Pods_do_not_mount_service_account_tokens_or_service_links()
    {
        foreach (var (workload, _) in Containers(Chart.Defaults.Name))
        {
            Assert.Equal("false", workload.PodSpec.Text("automountServiceAccountToken"));
            Assert.Equal("false", workload.PodSpec.Text("enableServiceLinks"));
        }
    }

    [Fact]
    public void Every_service_has_a_disruption_budget_and_spreads_over_zones_and_nodes()
    {
        var render = Chart.Template(Chart.Defaults);
        foreach (var deployment in Services(render))
        {
            var budget = render.Get("PodDisruptionBudget", deployment.Name);
            Assert.Equal(deployment.Body.Map("spec", "selector", "matchLabels"), budget.Body.Map("spec", "selector", "matchLabels"));
            var spread = deployment.PodSpec.List("topologySpreadConstraints").OfType<IDictionary<object, object?>>().Select(c => c.Text("topologyKey"));
            Assert.Equal(["topology.kubernetes.io/zone", "kubernetes.io/hostname"], spread);
        }
    }

    [Fact]
    public void Autoscalers_are_autoscaling_v2_and_take_over_the_replica_count()
    {
        var render = Chart.Template(Chart.EverythingOn);
        foreach (var deployment in Services(render))
        {
            Assert.Null(deployment.Body.At("spec", "replicas"));
            if (deployment.Name == "workflow")
            {
                var scaled = render.Get("ScaledObject", "workflow");
                Assert.Equal("keda.sh/v1alpha1", scaled.Body.Text("apiVersion"));
                Assert.DoesNotContain(render.OfKind("HorizontalPodAutoscaler"), h => h.Name == "workflow");
                continue;
            }

            var autoscaler = render.Get("HorizontalPodAutoscaler", deployment.Name);
            Assert.Equal("autoscaling/v2", autoscaler.Body.Text("apiVersion"));
            Assert.Equal(deployment.Name, autoscaler.Body.Text("spec", "scaleTargetRef", "name"));
        }

        Assert.All(Services(Chart.Template(Chart.Defaults)), d => Assert.Equal("3", d.Body.Text("spec", "replicas")));
    }

    [Fact]
    public void KEDA_scales_workflow_on_the_queue_length_of_the_emulator_or_of_Service_Bus()
    {
        var local = Chart.Template(Chart.EverythingOn).Get("ScaledObject", "workflow");
        var trigger = local.Body.List("spec", "triggers").Single();
        Assert.Equal("prometheus", trigger.Text("type"));
        Assert.Contains("queue=\"deliveryrequests\"", trigger.Text("metadata", "query"));

        var azure = Chart.Template(Chart.AzureEverythingOn);
        trigger = azure.Get("ScaledObject", "workflow").Body.List("spec", "triggers").Single();
        Assert.Equal("azure-servicebus", trigger.Text("type"));
        Assert.Equal("dronedelivery", trigger.Text("metadata", "namespace"));
        Assert.Equal("deliveryrequests", trigger.Text("metadata", "queueName"));
        Assert.Equal("azure-workload", azure.Get("TriggerAuthentication", "workflow-servicebus").Body.Text("spec", "podIdentity", "provider"));
    }

    [Fact]
    public void KEDA_keeps_more_Workflow_replicas_than_a_drain_may_take_and_scales_down_after_a_stabilization_window()
    {
        var scaled = Chart.Template(Chart.EverythingOn).Get("ScaledObject", "workflow");
        var budget = Chart.Template(Chart.EverythingOn).Get("PodDisruptionBudget", "workflow");

        Assert.True(int.Parse(scaled.Body.Text("spec", "minReplicaCount")!, System.Globalization.CultureInfo.InvariantCulture)
            > int.Parse(budget.Body.Text("spec", "maxUnavailable")!, System.Globalization.CultureInfo.InvariantCulture));
        // cooldownPeriod only governs scaling to zero; above the minimum the HPA's behavior does.
        Assert.Equal("120", scaled.Body.Text("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"));
    }

    [Fact]
    public void The_chart_refuses_a_KEDA_minimum_a_drain_could_take_away()
    {
        var error = Chart.TemplateError("--set", "workflow.keda.enabled=true", "--set", "workflow.keda.minReplicas=1");

        Assert.Contains("workflow.keda.minReplicas (1) must exceed the PodDisruptionBudget's maxUnavailable (1)", error);
    }

    /// <summary>ASP.NET Core's default <c>HostOptions.ShutdownTimeout</c>: how long a stopping service waits for requests in flight.</summary>
    private const int AspNetCoreShutdownSeconds = 30;

    internal static IEnumerable<Manifest> Services(Render render) => Deployments(render, "service");

    /// <summary>The Cosmos DB and Service Bus emulators' Deployments (emulators.enabled).</summary>
    internal static IEnumerable<Manifest> Emulators(Render render) => Deployments(render, "emulator");

    private static IEnumerable<Manifest> Deployments(Render render, string component) =>
        render.OfKind("Deployment").Where(d => d.Body.Text("metadata", "labels", "app.kubernetes.io/component") == component);

    private static IEnumerable<(Manifest Workload, IDictionary<object, object?> Container)> Containers(string valueSet)
    {
        var render = Chart.Template(Chart.ValueSet(valueSet));
        var workloads = render.Manifests.Where(m => m.PodSpec is not null).ToList();
        Assert.NotEmpty(workloads);
        return workloads.SelectMany(w => w.Containers.Select(c => (w, c)));
    }

    [GeneratedRegex(@"^[a-z0-9.\-/:]+:[A-Za-z0-9._\-]+$")]
    private static partial Regex PinnedImage();
}
