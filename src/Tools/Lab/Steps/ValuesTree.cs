using System.Globalization;
using System.Text.Json.Nodes;
using YamlDotNet.Core;
using YamlDotNet.RepresentationModel;

namespace DroneDelivery.Lab.Steps;

/// <summary>
/// A Helm values document as a tree of maps (<see cref="Dictionary{TKey,TValue}"/>), lists and typed
/// scalars (string, bool, long, double or null), read and combined with Helm's rules: YAML scalars are
/// typed as Helm's YAML reader types them, user values merge key by key (<see cref="MergedWith"/>), and
/// the chart's defaults are coalesced under them, where a user's null removes a default
/// (<see cref="Coalesce"/>).
/// </summary>
internal sealed partial class ValuesTree
{
    private readonly Dictionary<string, object?> _root;

    private ValuesTree(Dictionary<string, object?> root) => _root = root;

    public static ValuesTree Empty { get; } = new([]);

    public static ValuesTree Load(string path)
    {
        try
        {
            return Parse(File.ReadAllText(path), path);
        }
        catch (YamlException e)
        {
            throw new InvalidDataException($"{path}: not valid YAML ({e.Start}): {e.Message}", e);
        }
    }

    /// <summary>A values document from YAML text; <paramref name="source"/> names it in errors.</summary>
    public static ValuesTree Parse(string yaml, string source)
    {
        var stream = new YamlStream();
        using (var reader = new StringReader(yaml))
        {
            stream.Load(reader);
        }

        if (stream.Documents.Count == 0 || stream.Documents[0].RootNode is YamlScalarNode scalar && Scalar(scalar) is null)
        {
            return new ValuesTree([]);
        }

        return stream.Documents[0].RootNode is YamlMappingNode mapping
            ? new ValuesTree(ToMap(mapping))
            : throw new InvalidDataException($"{source}: a values file must be a mapping at the top level.");
    }

    /// <summary>A tree over a copy of <paramref name="root"/>.</summary>
    public static ValuesTree From(Dictionary<string, object?> root) => new(DeepCopy(root));

    /// <summary>A deep copy of the root map, for building on (the tree itself never changes).</summary>
    public Dictionary<string, object?> ToMap() => DeepCopy(_root);

    /// <summary>
    /// This tree with <paramref name="overlay"/> merged over it, as helm merges its <c>-f</c> files:
    /// maps merge key by key, anything else (lists too) is replaced; a null stays, to remove the
    /// chart's default when coalesced. Neither input changes.
    /// </summary>
    public ValuesTree MergedWith(ValuesTree overlay) => new(Merge(_root, overlay._root));

    /// <summary>
    /// The values a chart renders with: the user's values with the chart's defaults filled in under
    /// them, as helm coalesces them. The user's value wins; where the user gives null for a key the
    /// chart defines, the key is removed.
    /// </summary>
    public static ValuesTree Coalesce(ValuesTree chartDefaults, ValuesTree user)
    {
        var result = DeepCopy(user._root);
        CoalesceInto(result, chartDefaults._root);
        return new ValuesTree(result);
    }

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

    /// <summary>A whole number at a path (helm reads YAML numbers as floats; a whole float counts).</summary>
    public int? Int(string path) => Get(path) switch
    {
        long value => (int)value,
        double value when value == Math.Floor(value) => (int)value,
        _ => null,
    };

    /// <summary>Every scalar leaf as (dotted path, value as displayed); lists count as one leaf.</summary>
    public IEnumerable<(string Path, string Value)> Leaves() =>
        LeafNodes(_root, string.Empty).Select(leaf => (leaf.Path, Display(leaf.Value)));

    /// <summary>Every leaf where this tree and <paramref name="other"/> differ, by dotted path (a missing leaf is null).</summary>
    public IReadOnlyList<ValuesChange> Differences(ValuesTree other)
    {
        var before = LeafNodes(_root, string.Empty).ToDictionary(l => l.Path, l => l.Value, StringComparer.Ordinal);
        var after = LeafNodes(other._root, string.Empty).ToDictionary(l => l.Path, l => l.Value, StringComparer.Ordinal);
        return [.. before.Keys.Union(after.Keys)
            .Order(StringComparer.Ordinal)
            .Select(path => new ValuesChange(path, before.TryGetValue(path, out var b) ? Display(b) : null, after.TryGetValue(path, out var a) ? Display(a) : null))
            .Where(change => change.Before != change.After)];
    }

    /// <summary>The tree as JSON, as helm hands values to the schema validator.</summary>
    public JsonObject ToJson() => (JsonObject)ToJsonNode(_root)!;

    /// <summary>A value as a person reads it in a report: YAML's spelling of scalars.</summary>
    public static string Display(object? value) => value switch
    {
        null => "null",
        bool b => b ? "true" : "false",
        long l => l.ToString(CultureInfo.InvariantCulture),
        double d => d.ToString("R", CultureInfo.InvariantCulture),
        List<object?> list => "[" + string.Join(", ", list.Select(Display)) + "]",
        Dictionary<string, object?> map => "{" + string.Join(", ", map.Select(p => $"{p.Key}: {Display(p.Value)}")) + "}",
        _ => value.ToString() ?? string.Empty,
    };

    /// <summary>
    /// A plain YAML scalar typed as helm's YAML reader (YAML 1.1) types it: null, a boolean
    /// (true/false, yes/no, on/off, y/n), an integer (decimal, 0x hex, 0 or 0o octal, 0b binary,
    /// underscores ignored), a float, or else the text. Quoted scalars are always text.
    /// </summary>
    internal static object? Scalar(YamlScalarNode node)
    {
        var text = node.Value ?? string.Empty;
        if (node.Style is not (ScalarStyle.Plain or ScalarStyle.Any))
        {
            return text;
        }

        switch (text)
        {
            case "" or "~" or "null" or "Null" or "NULL":
                return null;
            case "true" or "True" or "TRUE" or "yes" or "Yes" or "YES" or "on" or "On" or "ON" or "y" or "Y":
                return true;
            case "false" or "False" or "FALSE" or "no" or "No" or "NO" or "off" or "Off" or "OFF" or "n" or "N":
                return false;
        }

        if (text[0] is not (>= '0' and <= '9') and not ('-' or '+' or '.'))
        {
            return text;
        }

        var plain = text.Replace("_", string.Empty, StringComparison.Ordinal);
        if (Integer(plain) is { } integer)
        {
            return integer;
        }

        return FloatSyntax().IsMatch(plain) && double.TryParse(plain, NumberStyles.Float, CultureInfo.InvariantCulture, out var number)
            ? number
            : text;
    }

    /// <summary>An integer literal with an optional sign and a base prefix (0x, 0o, 0b, or a leading 0 for octal).</summary>
    private static long? Integer(string text)
    {
        var negative = text.StartsWith('-');
        var digits = text.TrimStart('-', '+');
        if (text.Length - digits.Length > 1 || digits.Length == 0)
        {
            return null;
        }

        var (radix, body) = digits switch
        {
            _ when digits.StartsWith("0x", StringComparison.OrdinalIgnoreCase) => (16, digits[2..]),
            _ when digits.StartsWith("0o", StringComparison.OrdinalIgnoreCase) => (8, digits[2..]),
            _ when digits.StartsWith("0b", StringComparison.OrdinalIgnoreCase) => (2, digits[2..]),
            _ when digits.Length > 1 && digits[0] == '0' => (8, digits[1..]),
            _ => (10, digits),
        };
        if (body.Length == 0)
        {
            return null;
        }

        try
        {
            var value = radix == 10
                ? long.Parse(body, NumberStyles.None, CultureInfo.InvariantCulture)
                : Convert.ToInt64(body, radix);
            return negative ? -value : value;
        }
        catch (Exception e) when (e is FormatException or OverflowException or ArgumentException)
        {
            return null;
        }
    }

    [System.Text.RegularExpressions.GeneratedRegex(@"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")]
    private static partial System.Text.RegularExpressions.Regex FloatSyntax();

    private static IEnumerable<(string Path, object? Value)> LeafNodes(Dictionary<string, object?> map, string prefix)
    {
        foreach (var (key, value) in map)
        {
            var path = prefix.Length == 0 ? key : $"{prefix}.{key}";
            if (value is Dictionary<string, object?> child && child.Count > 0)
            {
                foreach (var leaf in LeafNodes(child, path))
                {
                    yield return leaf;
                }
            }
            else
            {
                yield return (path, value);
            }
        }
    }

    private static Dictionary<string, object?> Merge(Dictionary<string, object?> under, Dictionary<string, object?> over)
    {
        var merged = DeepCopy(under);
        foreach (var (key, value) in over)
        {
            merged[key] = value is Dictionary<string, object?> overMap && merged.TryGetValue(key, out var existing) && existing is Dictionary<string, object?> underMap
                ? Merge(underMap, overMap)
                : DeepCopyValue(value);
        }

        return merged;
    }

    /// <summary>Fills <paramref name="user"/> with the defaults it lacks; a user null for a defined key removes it.</summary>
    private static void CoalesceInto(Dictionary<string, object?> user, Dictionary<string, object?> defaults)
    {
        foreach (var (key, fallback) in defaults)
        {
            if (!user.TryGetValue(key, out var value))
            {
                user[key] = DeepCopyValue(fallback);
            }
            else if (value is null)
            {
                user.Remove(key);
            }
            else if (value is Dictionary<string, object?> userMap && fallback is Dictionary<string, object?> defaultMap)
            {
                CoalesceInto(userMap, defaultMap);
            }
        }
    }

    private static Dictionary<string, object?> DeepCopy(Dictionary<string, object?> map) =>
        map.ToDictionary(p => p.Key, p => DeepCopyValue(p.Value), StringComparer.Ordinal);

    private static object? DeepCopyValue(object? value) => value switch
    {
        Dictionary<string, object?> map => DeepCopy(map),
        List<object?> list => list.Select(DeepCopyValue).ToList(),
        _ => value,
    };

    private static JsonNode? ToJsonNode(object? value) => value switch
    {
        null => null,
        Dictionary<string, object?> map => new JsonObject(map.Select(p => KeyValuePair.Create(p.Key, ToJsonNode(p.Value)))),
        List<object?> list => new JsonArray([.. list.Select(ToJsonNode)]),
        bool b => JsonValue.Create(b),
        long l => JsonValue.Create(l),
        // Helm converts values to JSON before validating: a whole float is written as an integer.
        double d when d == Math.Floor(d) && Math.Abs(d) < 1e15 => JsonValue.Create((long)d),
        double d => JsonValue.Create(d),
        _ => JsonValue.Create(value.ToString()),
    };

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
        YamlScalarNode scalar => Scalar(scalar),
        _ => null,
    };
}

/// <summary>One leaf that differs between two values trees (null: absent or null).</summary>
internal sealed record ValuesChange(string Path, string? Before, string? After);
