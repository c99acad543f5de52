using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Steps;

/// <summary>What a service depends on besides the other services (the chart's <c>dd.topology</c> <c>uses</c>).</summary>
internal enum Dependency
{
    CosmosDb,
    ServiceBus,
    Redis,
}

/// <summary>
/// One of the six services: its key in the chart's values, its telemetry name, its project, and its
/// place in the topology as the chart's <c>dd.topology</c> declares it (the backends it calls, what it uses,
/// whether clients outside the system call it).
/// </summary>
internal sealed record ServiceKind(string ValuesKey, string Name, string ProjectName)
{
    public static readonly ServiceKind Delivery = new("delivery", "delivery", "DroneDelivery.Delivery") { Dependencies = [Dependency.Redis] };
    public static readonly ServiceKind Package = new("package", "package", "DroneDelivery.Package") { Dependencies = [Dependency.CosmosDb] };
    public static readonly ServiceKind DroneScheduler = new("droneScheduler", "dronescheduler", "DroneDelivery.DroneScheduler") { Dependencies = [Dependency.CosmosDb] };
    public static readonly ServiceKind Gateway = new("gateway", "gateway", "DroneDelivery.Gateway") { Calls = [Delivery, Package, DroneScheduler], Public = true };

    // Ingestion asks Delivery who owns a delivery before it queues a cancellation or a change.
    public static readonly ServiceKind Ingestion = new("ingestion", "ingestion", "DroneDelivery.Ingestion") { Calls = [Delivery], Dependencies = [Dependency.ServiceBus], Public = true };
    public static readonly ServiceKind Workflow = new("workflow", "workflow", "DroneDelivery.Workflow") { Calls = [Delivery, Package, DroneScheduler], Dependencies = [Dependency.ServiceBus] };

    public static IReadOnlyList<ServiceKind> All { get; } = [Gateway, Ingestion, Workflow, Delivery, Package, DroneScheduler];

    /// <summary>The backends it calls over HTTP.</summary>
    public IReadOnlyList<ServiceKind> Calls { get; init; } = [];

    public IReadOnlyList<Dependency> Dependencies { get; init; } = [];

    /// <summary>Whether clients outside the system call it: it then validates their bearer tokens (the chart's <c>auth</c> values).</summary>
    public bool Public { get; init; }

    /// <summary>Its section under <c>Backends:</c> in a caller's configuration (<c>Backends:DroneScheduler</c>).</summary>
    public string ConfigurationSection => char.ToUpperInvariant(ValuesKey[0]) + ValuesKey[1..];

    public bool Uses(Dependency dependency) => Dependencies.Contains(dependency);

    public bool Equals(ServiceKind? other) => other is not null && ValuesKey == other.ValuesKey;

    public override int GetHashCode() => ValuesKey.GetHashCode(StringComparison.Ordinal);
}

/// <summary>
/// A case-study step as the chart defines it: the chart's default values with the step's overlay
/// merged over them. The same files drive <c>helm -f</c> on a cluster and the local lab. A what-if
/// step is a step run with more values of the user's (<c>-f</c>, <c>--set</c>) over its overlay.
/// </summary>
internal sealed class Step(string id, string header, ValuesTree overlay, ValuesTree values)
{
    /// <summary>The suffix of a what-if step's id: <c>B4+what-if</c>.</summary>
    public const string WhatIfSuffix = "+what-if";

    public string Id { get; } = id;

    /// <summary>The overlay's comment header: what the step changes and what to look at.</summary>
    public string Header { get; } = header;

    /// <summary>The first line of the header; a what-if says so.</summary>
    public string Title => WhatIf is null ? Header.Split('\n', 2)[0] : $"{Label}: {Header.Split('\n', 2)[0]} — with {WhatIf.Arguments}";

    /// <summary>How reports name the step: its id, or "B4 + what-if".</summary>
    public string Label => WhatIf is null ? Id : $"{BaseId} + what-if";

    /// <summary>The values the step sets, relative to the chart defaults (for a what-if, its own values included).</summary>
    public ValuesTree Overlay { get; } = overlay;

    /// <summary>The effective values: chart defaults with the overlay merged over them.</summary>
    public ValuesTree Values { get; } = values;

    /// <summary>The case-study step this one starts from: its own id, or the base of a what-if.</summary>
    public string BaseId { get; init; } = id;

    /// <summary>The user's values a what-if adds; null for a step of the chart.</summary>
    public WhatIf? WhatIf { get; init; }

    /// <summary>For a what-if: every value that differs from the step it starts from.</summary>
    public IReadOnlyList<ValuesChange> WhatIfChanges { get; init; } = [];

    public int Replicas(ServiceKind service) => Values.Int($"{service.ValuesKey}.replicas") ?? 1;

    /// <summary>The service's settings as environment variables, named and written as the chart renders them.</summary>
    public IReadOnlyDictionary<string, string> Settings(ServiceKind service) => ServiceEnvironment.Settings(Values, service);

    public IReadOnlyDictionary<string, object?> CosmosContainer(string name) => Values.Map($"cosmosDb.containers.{name}");

    public IReadOnlyDictionary<string, object?> ServiceBusQueue(string name) => Values.Map($"serviceBus.queues.{name}");

    /// <summary>A scalar value as the chart's templates print it (null when absent).</summary>
    public string? Setting(string dottedPath) => Values.Get(dottedPath) is { } value and not Dictionary<string, object?> ? ServiceEnvironment.Scalar(value) : null;
}

/// <summary>The chart's default values and its step overlays (<c>charts/dronedelivery/steps/*.yaml</c>).</summary>
internal sealed class StepCatalog
{
    private readonly Dictionary<string, Step> _steps;

    private StepCatalog(ValuesTree defaults, Dictionary<string, Step> steps, ValuesSchema schema)
    {
        Defaults = defaults;
        _steps = steps;
        Schema = schema;
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
            steps[id] = new Step(id, Header(file), overlay, ValuesTree.Coalesce(defaults, overlay));
        }

        return new StepCatalog(defaults, steps, ValuesSchema.Load(chart));
    }

    /// <summary>
    /// A what-if: step <paramref name="baseId"/> with the user's values applied over its overlay in
    /// helm's order, the chart's defaults coalesced under them.
    /// </summary>
    /// <exception cref="InvalidDataException">A values file or --set expression is bad, or the result breaks values.schema.json.</exception>
    public Step WhatIf(string baseId, WhatIf whatIf)
    {
        var step = this[baseId];
        var user = whatIf.UserValues(step.Overlay);
        var values = ValuesTree.Coalesce(Defaults, user);
        var violations = Schema.Validate(values);
        if (violations.Count > 0)
        {
            throw new InvalidDataException(
                $"{step.Id} with {whatIf.Arguments}: the values don't meet the chart's values.schema.json:{Environment.NewLine}" +
                string.Join(Environment.NewLine, violations.Select(v => "  - " + v + Hint(v, whatIf))));
        }

        return new Step(step.Id + Step.WhatIfSuffix, step.Header, user, values)
        {
            BaseId = step.Id,
            WhatIf = whatIf,
            WhatIfChanges = step.Values.Differences(values),
        };
    }

    /// <summary>The chart's values schema.</summary>
    public ValuesSchema Schema { get; }

    /// <summary>--set reads 0.5 as text (as helm does); a number with a fraction needs a values file.</summary>
    private static string Hint(SchemaViolation violation, WhatIf whatIf) =>
        violation.Keyword == "type" && whatIf.Sources.Any(s => s.Kind is ValuesSourceKind.Set or ValuesSourceKind.SetString)
            ? " (--set types only true, false, null and whole numbers; put a number like 0.5 in a -f file)"
            : string.Empty;

    /// <summary>The leading comment block of a YAML file, without the '#' markers.</summary>
    private static string Header(string file) =>
        string.Join('\n', File.ReadLines(file)
            .TakeWhile(line => line.StartsWith('#'))
            .Select(line => line.TrimStart('#').Trim())
            .SkipWhile(line => line.Length == 0));
}
