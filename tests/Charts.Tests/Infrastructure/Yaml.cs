using YamlDotNet.Core;
using YamlDotNet.Core.Events;
using YamlDotNet.Serialization;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>YAML as plain maps, lists and strings, and a few ways to walk it.</summary>
public static class Yaml
{
    private static readonly IDeserializer Deserializer = new DeserializerBuilder().Build();

    /// <summary>Every document of a multi-document YAML text; empty documents are dropped.</summary>
    public static IReadOnlyList<object> Documents(string text)
    {
        var parser = new Parser(new StringReader(text));
        parser.Consume<StreamStart>();
        var documents = new List<object>();
        while (parser.Accept<DocumentStart>(out _))
        {
            var document = Deserializer.Deserialize(parser);
            if (document is not null)
            {
                documents.Add(document);
            }
        }

        return documents;
    }

    public static object? Parse(string text) => Deserializer.Deserialize(new StringReader(text));

    /// <summary>The node at a path of map keys, or null.</summary>
    public static object? At(this object? node, params string[] path)
    {
        foreach (var key in path)
        {
            if (node is not IDictionary<object, object?> map || !map.TryGetValue(key, out node))
            {
                return null;
            }
        }

        return node;
    }

    public static IDictionary<object, object?>? Map(this object? node, params string[] path) => node.At(path) as IDictionary<object, object?>;

    public static IEnumerable<object?> List(this object? node, params string[] path) => node.At(path) as IList<object?> ?? [];

    public static string? Text(this object? node, params string[] path) => node.At(path) as string;

    /// <summary>
    /// Every leaf of a tree as (dotted path, scalar text). Maps recurse; a list is one leaf (its
    /// YAML-ish text), because the chart's values never index into lists.
    /// </summary>
    public static IEnumerable<(string Path, string? Value)> Leaves(this object? node, string prefix = "")
    {
        if (node is IDictionary<object, object?> map)
        {
            foreach (var (key, value) in map)
            {
                var path = prefix.Length == 0 ? key.ToString()! : $"{prefix}.{key}";
                foreach (var leaf in Leaves(value, path))
                {
                    yield return leaf;
                }
            }
        }
        else if (node is IList<object?> list)
        {
            yield return (prefix, "[" + string.Join(", ", list.Select(item => item?.ToString())) + "]");
        }
        else
        {
            yield return (prefix, node?.ToString());
        }
    }

    /// <summary>Helm's merge of a values overlay onto values: maps merge key by key, everything else is replaced.</summary>
    public static object? Merge(object? target, object? overlay)
    {
        if (target is IDictionary<object, object?> targetMap && overlay is IDictionary<object, object?> overlayMap)
        {
            var merged = new Dictionary<object, object?>(targetMap);
            foreach (var (key, value) in overlayMap)
            {
                merged[key] = merged.TryGetValue(key, out var existing) ? Merge(existing, value) : value;
            }

            return merged;
        }

        return overlay;
    }
}
