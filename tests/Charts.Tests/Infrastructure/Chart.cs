using System.Collections.Concurrent;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>A set of values passed to helm: a name for test output and the helm arguments.</summary>
public sealed record ValuesSet(string Name, params string[] Arguments)
{
    public override string ToString() => Name;

    public ValuesSet With(string name, params string[] more) => new(name, [.. Arguments, .. more]);
}

/// <summary>One rendered Kubernetes object.</summary>
public sealed record Manifest(string Kind, string Name, object Body)
{
    public string Id => $"{Kind}/{Name}";

    public IDictionary<object, object?>? PodSpec => Kind switch
    {
        "Deployment" or "Job" => Body.Map("spec", "template", "spec"),
        _ => null,
    };

    public IEnumerable<IDictionary<object, object?>> Containers =>
        PodSpec.List("containers").Concat(PodSpec.List("initContainers")).OfType<IDictionary<object, object?>>();
}

/// <summary>The output of one <c>helm template</c>.</summary>
public sealed class Render(string text, IReadOnlyList<Manifest> manifests)
{
    public string Text { get; } = text;

    public IReadOnlyList<Manifest> Manifests { get; } = manifests;

    public IEnumerable<Manifest> OfKind(string kind) => Manifests.Where(m => m.Kind == kind);

    public Manifest Get(string kind, string name) =>
        Manifests.SingleOrDefault(m => m.Kind == kind && m.Name == name)
        ?? throw new InvalidOperationException($"The render has no {kind}/{name}; it has {string.Join(", ", Manifests.Select(m => m.Id))}.");

    /// <summary>
    /// A container's environment variables with literal values (secret references as "secret:&lt;name&gt;/&lt;key&gt;",
    /// optional ones — set only when the Secret has the key — as "secret?:&lt;name&gt;/&lt;key&gt;").
    /// </summary>
    public static IReadOnlyDictionary<string, string> Environment(IDictionary<object, object?> container) =>
        container.List("env").OfType<IDictionary<object, object?>>().ToDictionary(
            e => e.Text("name")!,
            e => e.Text("value")
                 ?? (e.Map("valueFrom", "secretKeyRef") is { } secret ? $"secret{(secret.At("optional") is true or "true" ? "?" : string.Empty)}:{secret.Text("name")}/{secret.Text("key")}"
                 : e.Map("valueFrom", "fieldRef") is { } field ? $"field:{field.Text("fieldPath")}"
                 : throw new InvalidOperationException($"Environment variable {e.Text("name")} has no value.")));
}

/// <summary>The chart under test, rendered with the real helm (renders are cached per values set).</summary>
public static class Chart
{
    public const string ReleaseName = "dd";
    public const string Namespace = "dronedelivery";
    public const string KubernetesVersion = "1.33.0";

    private static readonly ConcurrentDictionary<string, Lazy<Render>> Renders = new();

    public static string Directory { get; } = RepositoryLayout.InRepository("charts", "dronedelivery");

    public static string StepsDirectory { get; } = Path.Combine(Directory, "steps");

    public static string ValuesFile { get; } = Path.Combine(Directory, "values.yaml");

    public static IReadOnlyList<string> StepNames { get; } =
        System.IO.Directory.GetFiles(StepsDirectory, "*.yaml").Select(Path.GetFileNameWithoutExtension).Order(StringComparer.Ordinal).ToArray()!;

    public static string StepFile(string step) => Path.Combine(StepsDirectory, step + ".yaml");

    public static ValuesSet Defaults { get; } = new("defaults");

    public static ValuesSet Step(string step) => new($"step {step}", "-f", StepFile(step));

    /// <summary>AKS-shaped values: no emulators or Redis; Azure endpoints, workload identity, Key Vault and Entra ID tokens.</summary>
    public static ValuesSet Azure { get; } = new("azure",
        "--set", "auth.mode=entraId",
        "--set", "auth.audience=00000000-0000-0000-0000-0000000000c1",
        "--set", "auth.entraId.clientId=00000000-0000-0000-0000-0000000000c1",
        "--set", "emulators.enabled=false",
        "--set", "redis.enabled=false",
        "--set", "azure.tenantId=00000000-0000-0000-0000-000000000001",
        "--set", "azure.workloadIdentity.enabled=true",
        "--set", "azure.workloadIdentity.clientIds.gateway=00000000-0000-0000-0000-0000000000a1",
        "--set", "azure.workloadIdentity.clientIds.ingestion=00000000-0000-0000-0000-0000000000a2",
        "--set", "azure.workloadIdentity.clientIds.workflow=00000000-0000-0000-0000-0000000000a3",
        "--set", "azure.workloadIdentity.clientIds.delivery=00000000-0000-0000-0000-0000000000a4",
        "--set", "azure.workloadIdentity.clientIds.package=00000000-0000-0000-0000-0000000000a5",
        "--set", "azure.workloadIdentity.clientIds.droneScheduler=00000000-0000-0000-0000-0000000000a6",
        "--set", "azure.cosmosDb.accountEndpoint=https://dronedelivery.documents.azure.com:443/",
        "--set", "azure.serviceBus.fullyQualifiedNamespace=dronedelivery.servicebus.windows.net",
        "--set", "azure.keyVault.enabled=true",
        "--set", "azure.keyVault.name=dronedelivery-kv",
        "--set", "telemetry.applicationInsights.enabled=true",
        "--set", "image.registry=dronedelivery.azurecr.io");

    /// <summary>Every optional feature on: autoscalers, KEDA, ServiceMonitor, dashboards, ingress with TLS, OTLP.</summary>
    public static ValuesSet EverythingOn { get; } = new("everything on",
        "--set", "serviceDefaults.autoscaling.enabled=true",
        "--set", "workflow.keda.enabled=true",
        "--set", "telemetry.serviceMonitor.enabled=true",
        "--set", "telemetry.dashboards.enabled=true",
        "--set", "telemetry.otlpEndpoint=http://otel-collector.monitoring:4317",
        "--set", "ingress.enabled=true",
        "--set", "ingress.className=nginx",
        "--set", "ingress.host=dronedelivery.localtest.me",
        "--set", "ingress.tls[0].secretName=dronedelivery-tls");

    /// <summary>Everything on, on AKS: the ServiceMonitor in the group Azure Monitor managed Prometheus reads.</summary>
    public static ValuesSet AzureEverythingOn { get; } = Azure.With("azure, everything on",
        [.. EverythingOn.Arguments,
            "--set", "workflow.keda.azureIdentityClientId=00000000-0000-0000-0000-0000000000b1",
            "--set", "telemetry.serviceMonitor.apiVersion=azmonitoring.coreos.com/v1"]);

    /// <summary>Emulators off but Redis and a Secret of connection strings (a cluster without Azure identities).</summary>
    public static ValuesSet ExistingSecret { get; } = new("existing secret",
        "--set", "emulators.enabled=false",
        "--set", "secrets.existingSecret=dronedelivery-connections");

    /// <summary>The values docs/deploy-kind.md installs with (k8s/kind/values-kind.yaml).</summary>
    public static ValuesSet Kind { get; } = new("kind", "-f", RepositoryLayout.InRepository("k8s", "kind", "values-kind.yaml"));

    /// <summary>The kind values, which turn on the load driver's test Jobs (development-issuer tokens), said explicitly.</summary>
    public static ValuesSet KindLoadTests { get; } = Kind.With("kind, load tests", "--set", "loadTest.enabled=true");

    /// <summary>Azure with everything on and the load driver's test Jobs (a client app's credentials).</summary>
    public static ValuesSet AzureLoadTests { get; } = AzureEverythingOn.With("azure, load tests",
        "--set", "loadTest.enabled=true",
        "--set", "loadTest.entraId.clientId=00000000-0000-0000-0000-0000000000d1",
        "--set", "loadTest.entraId.clientSecret.name=dronedelivery-load-client");

    public static IEnumerable<ValuesSet> AllValueSets =>
        new[] { Defaults, Kind, Azure, EverythingOn, AzureEverythingOn, ExistingSecret, KindLoadTests, AzureLoadTests }.Concat(StepNames.Select(Step));

    public static ValuesSet ValueSet(string name) =>
        AllValueSets.SingleOrDefault(v => v.Name == name) ?? throw new ArgumentException($"No values set named '{name}'.");

    public static TheoryData<string> ValueSetNames => new(AllValueSets.Select(v => v.Name));

    public static TheoryData<string> Steps => new(StepNames);

    /// <summary>Runs helm template; the result may be a failure (for schema tests).</summary>
    public static ToolResult TemplateRaw(IEnumerable<string> arguments) =>
        ExternalTool.Run(ExternalTool.Helm,
            ["template", ReleaseName, Directory, "--namespace", Namespace, "--kube-version", KubernetesVersion, .. arguments]);

    public static Render Template(ValuesSet values) =>
        Renders.GetOrAdd(string.Join('\u0001', values.Arguments), _ => new Lazy<Render>(() =>
        {
            var result = TemplateRaw(values.Arguments);
            Assert.True(result.ExitCode == 0, $"helm template with {values} failed: {result.Describe()}");
            var manifests = Yaml.Documents(result.StandardOutput)
                .Select(doc => new Manifest(doc.Text("kind") ?? "?", doc.Text("metadata", "name") ?? "?", doc))
                .ToList();
            return new Render(result.StandardOutput, manifests);
        })).Value;

    /// <summary>Runs helm template expecting failure and returns its error output.</summary>
    public static string TemplateError(params string[] arguments)
    {
        var result = TemplateRaw(arguments);
        Assert.True(result.ExitCode != 0, $"helm template with {string.Join(' ', arguments)} was expected to fail but rendered.");
        return result.StandardError;
    }
}
