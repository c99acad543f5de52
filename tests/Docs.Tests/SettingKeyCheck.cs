using System.Collections;
using System.Reflection;
using System.Text.Json.Nodes;
using System.Text.RegularExpressions;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Docs.Tests;

/// <summary>
/// The settings a document names exist. In inline code: a service setting as its configuration key
/// (<c>Processor:PrefetchCount</c>) or environment variable (<c>Processor__PrefetchCount</c>) must be a property of
/// the settings class bound to that section (<c>ProcessorSettings</c>) or a key of a service's <c>settings</c> in the
/// chart's schema; a chart value (<c>workflow.settings.Processor.PrefetchCount</c>, also after <c>--set</c> in
/// commands) must be a path of the chart's schema.
/// </summary>
public static partial class SettingKeyCheck
{
    public static IReadOnlyList<string> Problems(MarkdownDocument document, SettingsCatalog catalog)
    {
        var problems = new List<string>();
        foreach (var span in document.CodeSpans)
        {
            var text = span.Text.Trim();
            if (ServiceKey().Match(text) is { Success: true } key)
            {
                var segments = key.Groups["key"].Value.Split([":", "__"], StringSplitOptions.None);
                if (!catalog.HasServiceSetting(segments))
                {
                    problems.Add($"{document.Path}:{span.Line}: '{text}' is no setting: no settings class or service setting of the chart's schema has the key {string.Join(':', segments)}");
                }
            }
            else if (ChartValue().Match(text) is { Success: true } value)
            {
                Check(value.Groups["path"].Value, span.Line);
            }

            foreach (Match set in SetOption().Matches(text))
            {
                Check(set.Groups["path"].Value, span.Line);
            }
        }

        foreach (var block in document.FencedBlocks)
        {
            foreach (Match set in SetOption().Matches(block.Text))
            {
                Check(set.Groups["path"].Value, block.Line + block.Text[..set.Index].Count(c => c == '\n'));
            }
        }

        return problems;

        void Check(string path, int line)
        {
            var segments = path.Split('.');
            if (catalog.IsChartTopLevel(segments[0]) && !catalog.HasChartValue(segments))
            {
                problems.Add($"{document.Path}:{line}: '{path}' is no value of the chart: charts/dronedelivery/values.schema.json has no such path");
            }
        }
    }

    [GeneratedRegex(@"^(?<key>[A-Z][A-Za-z0-9]*(?:(?::|__)[A-Z][A-Za-z0-9]*)+)(?:=\S*)?$")]
    private static partial Regex ServiceKey();

    [GeneratedRegex(@"^(?<path>[a-z][A-Za-z0-9]*(?:\.(?:[A-Za-z0-9_-]+|<[^>]+>))+)(?:=\S*)?$")]
    private static partial Regex ChartValue();

    [GeneratedRegex(@"--set(?:-string|-file)?[ =](?<path>[a-z][A-Za-z0-9]*(?:\.(?:[A-Za-z0-9_-]+|<[^>]+>))+)=")]
    private static partial Regex SetOption();
}

/// <summary>What the settings are: the services' settings classes and the chart's schema.</summary>
public sealed class SettingsCatalog
{
    private static readonly string[] ServiceAssemblies =
    [
        "DroneDelivery.Gateway", "DroneDelivery.Ingestion", "DroneDelivery.Workflow", "DroneDelivery.Delivery", "DroneDelivery.Package",
        "DroneDelivery.DroneScheduler", "DroneDelivery.ServiceDefaults", "DroneDelivery.ServiceClients", "DroneDelivery.Security.PublicApis",
    ];

    private static readonly string[] ChartServices = ["gateway", "ingestion", "workflow", "delivery", "package", "droneScheduler"];

    private readonly IReadOnlyDictionary<string, Type> _sections;
    private readonly JsonObject _schema;

    public SettingsCatalog(IReadOnlyDictionary<string, Type> sections, JsonObject schema)
    {
        _sections = sections;
        _schema = schema;
    }

    /// <summary>The services' settings classes (<c>XSettings</c> binds section <c>X</c>) and the chart's schema.</summary>
    public static SettingsCatalog Repository { get; } = new(
        ServiceAssemblies.Select(Assembly.Load)
            .SelectMany(a => a.GetTypes())
            .Where(t => t.IsClass && !t.IsAbstract && t.Name.EndsWith("Settings", StringComparison.Ordinal) && t.Name.Length > "Settings".Length)
            .GroupBy(t => t.Name[..^"Settings".Length], StringComparer.Ordinal)
            .ToDictionary(g => g.Key, g => g.First(), StringComparer.Ordinal),
        JsonNode.Parse(File.ReadAllText(RepositoryLayout.InRepository("charts", "dronedelivery", "values.schema.json")))!.AsObject());

    public bool HasServiceSetting(IReadOnlyList<string> segments) =>
        InSettingsClass(segments) ||
        ChartServices.Any(service => Resolve(Property(Property(_schema, service), "settings"), segments) is not null) ||
        Resolve(Property(_schema, "commonSettings"), segments) is not null;

    public bool IsChartTopLevel(string name) => Property(_schema, name) is not null;

    public bool HasChartValue(IReadOnlyList<string> segments) => Resolve(_schema, segments) is not null;

    private bool InSettingsClass(IReadOnlyList<string> segments)
    {
        if (!_sections.TryGetValue(segments[0], out var type))
        {
            return false;
        }

        foreach (var segment in segments.Skip(1))
        {
            if (Element(type, typeof(IDictionary<,>), 1) is { } value)
            {
                type = value;
            }
            else if (type != typeof(string) && Element(type, typeof(IEnumerable<>), 0) is { } item && int.TryParse(segment, out _))
            {
                type = item;
            }
            else if (type.GetProperty(segment, BindingFlags.Public | BindingFlags.Instance) is { } property)
            {
                type = Nullable.GetUnderlyingType(property.PropertyType) ?? property.PropertyType;
            }
            else
            {
                return false;
            }
        }

        return true;
    }

    private static Type? Element(Type type, Type generic, int argument) =>
        (type.IsGenericType && type.GetGenericTypeDefinition() == generic ? type : type.GetInterfaces().FirstOrDefault(i => i.IsGenericType && i.GetGenericTypeDefinition() == generic))
            ?.GetGenericArguments()[argument] is { } found && typeof(IEnumerable).IsAssignableFrom(type) ? found : null;

    private JsonObject? Resolve(JsonObject? node, IReadOnlyList<string> segments)
    {
        foreach (var segment in segments)
        {
            if (node is null)
            {
                return null;
            }

            node = segment.StartsWith('<') ? Any(Follow(node)) : Property(node, segment);
        }

        return node;
    }

    /// <summary>The schema of a member: a declared property, else the schema every other member has.</summary>
    private JsonObject? Property(JsonObject? node, string name)
    {
        node = Follow(node);
        if (node?["properties"]?[name] is JsonObject declared)
        {
            return Follow(declared);
        }

        if (node?["additionalProperties"] is JsonObject additional)
        {
            return Follow(additional);
        }

        return node?["items"] is JsonObject items && int.TryParse(name, out _) ? Follow(items) : null;
    }

    private JsonObject? Any(JsonObject? node) =>
        Follow(node?["additionalProperties"] as JsonObject) ?? Follow((node?["properties"] as JsonObject)?.Select(p => p.Value).OfType<JsonObject>().FirstOrDefault());

    private JsonObject? Follow(JsonObject? node)
    {
        while (node?["$ref"]?.GetValue<string>() is { } reference && reference.StartsWith("#/$defs/", StringComparison.Ordinal))
        {
            node = _schema["$defs"]?[reference["#/$defs/".Length..]] as JsonObject;
        }

        return node;
    }
}
