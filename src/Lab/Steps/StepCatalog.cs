using System.Globalization;
using DroneDelivery.LocalSystem;

namespace DroneDelivery.Lab.Steps;

/// <summary>One of the six services: its key in the chart's values, its telemetry name and its project.</summary>
internal sealed record ServiceKind(string ValuesKey, string Name, string ProjectName)
{
    public static readonly ServiceKind Gateway = new("gateway", "gateway", "DroneDelivery.Gateway");
    public static readonly ServiceKind Ingestion = new("ingestion", "ingestion", "DroneDelivery.Ingestion");
    public static readonly ServiceKind Workflow = new("workflow", "workflow", "DroneDelivery.Workflow");
    public static readonly ServiceKind Delivery = new("delivery", "delivery", "DroneDelivery.Delivery");
    public static readonly ServiceKind Package = new("package", "package", "DroneDelivery.Package");
    public static readonly ServiceKind DroneScheduler = new("droneScheduler", "dronescheduler", "DroneDelivery.DroneScheduler");

    public static IReadOnlyList<ServiceKind> All { get; } = [Gateway, Ingestion, Workflow, Delivery, Package, DroneScheduler];
}

/// <summary>
/// A case-study step as the chart defines it: the chart's default values with the step's overlay
/// merged over them. The same files drive <c>helm -f</c> on a cluster and the local lab.
/// </summary>
internal sealed class Step(string id, string header, ValuesTree overlay, ValuesTree values)
{
    public string Id { get; } = id;

    /// <summary>The overlay's comment header: what the step changes and what to look at.</summary>
    public string Header { get; } = header;

    /// <summary>The first line of the header.</summary>
    public string Title => Header.Split('\n', 2)[0];

    /// <summary>The values the step sets, relative to the chart defaults.</summary>
    public ValuesTree Overlay { get; } = overlay;

    /// <summary>The effective values: chart defaults with the overlay merged over them.</summary>
    public ValuesTree Values { get; } = values;

    public int Replicas(ServiceKind service) => Values.Int($"{service.ValuesKey}.replicas") ?? 1;

    /// <summary>
    /// The service's settings as environment variables, named as the chart renders them: nested keys
    /// joined with <c>__</c>, <c>commonSettings</c> under the service's own (the service's value wins).
    /// </summary>
    public IReadOnlyDictionary<string, string> Settings(ServiceKind service)
    {
        var variables = new SortedDictionary<string, string>(StringComparer.Ordinal);
        Flatten(Values.Map("commonSettings"), string.Empty, variables);
        Flatten(Values.Map($"{service.ValuesKey}.settings"), string.Empty, variables);
        return variables;
    }

    public IReadOnlyDictionary<string, object?> CosmosContainer(string name) => Values.Map($"cosmosDb.containers.{name}");

    public IReadOnlyDictionary<string, object?> ServiceBusQueue(string name) => Values.Map($"serviceBus.queues.{name}");

    public string? Setting(string dottedPath) => Values.String(dottedPath);

    private static void Flatten(IReadOnlyDictionary<string, object?> map, string prefix, IDictionary<string, string> into)
    {
        foreach (var (key, value) in map)
        {
            var name = prefix.Length == 0 ? key : $"{prefix}__{key}";
            switch (value)
            {
                case IReadOnlyDictionary<string, object?> child:
                    Flatten(child, name, into);
                    break;
                case List<object?> list:
                    for (var i = 0; i < list.Count; i++)
                    {
                        into[$"{name}__{i.ToString(CultureInfo.InvariantCulture)}"] = list[i]?.ToString() ?? string.Empty;
                    }

                    break;
                case null:
                    break;
                default:
                    into[name] = value.ToString() ?? string.Empty;
                    break;
            }
        }
    }
}

/// <summary>The chart's default values and its step overlays (<c>charts/dronedelivery/steps/*.yaml</c>).</summary>
internal sealed class StepCatalog
{
    private readonly Dictionary<string, Step> _steps;

    private StepCatalog(ValuesTree defaults, Dictionary<string, Step> steps)
    {
        Defaults = defaults;
        _steps = steps;
    }

    public static string DefaultChartDirectory => RepositoryLayout.InRepository("charts", "dronedelivery");

    public ValuesTree Defaults { get; }

    public IReadOnlyCollection<Step> Steps => _steps.Values;

    public Step this[string id] => _steps.TryGetValue(id, out var step)
        ? step
        : throw new KeyNotFoundException($"No step '{id}' in the chart (known: {string.Join(", ", _steps.Keys.Order())}).");

    public static StepCatalog Load(string? chartDirectory = null)
    {
        var chart = chartDirectory ?? DefaultChartDirectory;
        var defaults = ValuesTree.Load(Path.Combine(chart, "values.yaml"));
        var steps = new Dictionary<string, Step>(StringComparer.OrdinalIgnoreCase);
        foreach (var file in Directory.EnumerateFiles(Path.Combine(chart, "steps"), "*.yaml").Order(StringComparer.Ordinal))
        {
            var id = Path.GetFileNameWithoutExtension(file);
            var overlay = ValuesTree.Load(file);
            steps[id] = new Step(id, Header(file), overlay, defaults.MergedWith(overlay));
        }

        return new StepCatalog(defaults, steps);
    }

    /// <summary>The leading comment block of a YAML file, without the '#' markers.</summary>
    private static string Header(string file) =>
        string.Join('\n', File.ReadLines(file)
            .TakeWhile(line => line.StartsWith('#'))
            .Select(line => line.TrimStart('#').Trim())
            .SkipWhile(line => line.Length == 0));
}
