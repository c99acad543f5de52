using System.Globalization;
using YamlDotNet.RepresentationModel;

namespace DroneDelivery.Lab.Steps;

/// <summary>
/// A Helm values document as a tree of maps, lists and scalars, with Helm's merge rule: maps merge
/// key by key, anything else is replaced by the overlay's value.
/// </summary>
internal sealed class ValuesTree
{
    private readonly Dictionary<string, object?> _root;

    private ValuesTree(Dictionary<string, object?> root) => _root = root;

    public static ValuesTree Empty { get; } = new([]);

    public static ValuesTree Load(string path)
    {
        var yaml = new YamlStream();
        using (var reader = File.OpenText(path))
        {
            yaml.Load(reader);
        }

        if (yaml.Documents.Count == 0 || yaml.Documents[0].RootNode is YamlScalarNode { Value: null or "" })
        {
            return new ValuesTree([]);
        }

        return yaml.Documents[0].RootNode is YamlMappingNode mapping
            ? new ValuesTree(ToMap(mapping))
            : throw new InvalidDataException($"{path}: a values file must be a mapping at the top level.");
    }

    /// <summary>This tree with <paramref name="overlay"/> merged over it (neither input changes).</summary>
    public ValuesTree MergedWith(ValuesTree overlay) => new(Merge(_root, overlay._root));

    /// <summary>The node at a dotted path (<c>droneScheduler.settings</c>), or null.</summary>
    public object? Get(string path)
    {
        object? node = _root;
        foreach (var part in path.Split('.'))
        {
            if (node is not Dictionary<string, object?> map || !map.TryGetValue(part, out node))
            {
                return null;
            }
        }

        return node;
    }

    public IReadOnlyDictionary<string, object?> Map(string path) =>
        Get(path) as Dictionary<string, object?> ?? new Dictionary<string, object?>();

    public string? String(string path) => Get(path) is string text ? text : null;

    public int? Int(string path) =>
        String(path) is { } text && int.TryParse(text, NumberStyles.Integer, CultureInfo.InvariantCulture, out var value) ? value : null;

    /// <summary>Every scalar leaf as (dotted path, value); lists count as one leaf.</summary>
    public IEnumerable<(string Path, string Value)> Leaves() => Leaves(_root, string.Empty);

    private static IEnumerable<(string Path, string Value)> Leaves(Dictionary<string, object?> map, string prefix)
    {
        foreach (var (key, value) in map)
        {
            var path = prefix.Length == 0 ? key : $"{prefix}.{key}";
            switch (value)
            {
                case Dictionary<string, object?> child:
                    foreach (var leaf in Leaves(child, path))
                    {
                        yield return leaf;
                    }

                    break;
                case List<object?> list:
                    yield return (path, "[" + string.Join(", ", list) + "]");
                    break;
                default:
                    yield return (path, value?.ToString() ?? "null");
                    break;
            }
        }
    }

    private static Dictionary<string, object?> Merge(Dictionary<string, object?> under, Dictionary<string, object?> over)
    {
        var merged = new Dictionary<string, object?>(under);
        foreach (var (key, value) in over)
        {
            merged[key] = value is Dictionary<string, object?> overMap && under.TryGetValue(key, out var existing) && existing is Dictionary<string, object?> underMap
                ? Merge(underMap, overMap)
                : value;
        }

        return merged;
    }

    private static Dictionary<string, object?> ToMap(YamlMappingNode mapping)
    {
        var map = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var (key, value) in mapping.Children)
        {
            map[((YamlScalarNode)key).Value ?? string.Empty] = ToValue(value);
        }

        return map;
    }

    private static object? ToValue(YamlNode node) => node switch
    {
        YamlMappingNode mapping => ToMap(mapping),
        YamlSequenceNode sequence => sequence.Children.Select(ToValue).ToList(),
        YamlScalarNode { Value: "~" or "null" or "" } scalar when scalar.Style == YamlDotNet.Core.ScalarStyle.Plain => null,
        YamlScalarNode scalar => scalar.Value,
        _ => null,
    };
}
