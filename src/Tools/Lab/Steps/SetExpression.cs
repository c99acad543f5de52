using System.Globalization;
using System.Text;

namespace DroneDelivery.Lab.Steps;

/// <summary>A value helm's command line sets, and how: <c>-f</c>, <c>--set</c>, <c>--set-string</c>, <c>--set-file</c>.</summary>
internal enum ValuesSourceKind
{
    /// <summary><c>-f file.yaml</c>: a values file merged over what came before.</summary>
    File,

    /// <summary><c>--set a.b=1</c>: true, false, null and whole numbers are typed; anything else is text.</summary>
    Set,

    /// <summary><c>--set-string a.b=1</c>: always text.</summary>
    SetString,

    /// <summary><c>--set-file a.b=path</c>: the file's content, as text.</summary>
    SetFile,
}

/// <summary>One <c>-f</c> or <c>--set…</c> argument of a what-if run.</summary>
internal sealed record ValuesSource(ValuesSourceKind Kind, string Text)
{
    public string Flag => Kind switch
    {
        ValuesSourceKind.File => "-f",
        ValuesSourceKind.Set => "--set",
        ValuesSourceKind.SetString => "--set-string",
        _ => "--set-file",
    };

    public override string ToString() => $"{Flag} {Text}";
}

/// <summary>
/// Values a user runs a step with beyond its overlay, merged in helm's order: the step's overlay,
/// then every <c>-f</c> file in order, then every <c>--set</c>, every <c>--set-string</c> and every
/// <c>--set-file</c>, each group in order (helm applies the groups in this order whatever their
/// order on the command line).
/// </summary>
internal sealed record WhatIf(IReadOnlyList<ValuesSource> Sources)
{
    /// <summary>The sources in the order helm applies them.</summary>
    public IEnumerable<ValuesSource> InHelmOrder => Sources.OrderBy(s => s.Kind);

    /// <summary>The command-line arguments, as helm would take them.</summary>
    public string Arguments => string.Join(' ', InHelmOrder.Select(s => s.Kind == ValuesSourceKind.File ? $"-f {s.Text}" : $"{s.Flag} '{s.Text}'"));

    /// <summary>The user-supplied values for a step: its overlay with these sources applied over it.</summary>
    /// <exception cref="InvalidDataException">A file is missing or not a values mapping, or a --set expression does not parse.</exception>
    public ValuesTree UserValues(ValuesTree stepOverlay)
    {
        var values = stepOverlay;
        foreach (var file in Sources.Where(s => s.Kind == ValuesSourceKind.File))
        {
            if (!System.IO.File.Exists(file.Text))
            {
                throw new InvalidDataException($"-f {file.Text}: no such file.");
            }

            values = values.MergedWith(ValuesTree.Load(file.Text));
        }

        var map = values.ToMap();
        foreach (var set in InHelmOrder.Where(s => s.Kind != ValuesSourceKind.File))
        {
            SetExpression.ParseInto(set, map);
        }

        return ValuesTree.From(map);
    }
}

/// <summary>
/// Helm's <c>--set</c> syntax: <c>a.b=v</c> pairs separated by commas; <c>a[0].b=v</c> for list items;
/// <c>a={x,y}</c> for a list; a backslash makes the next character plain (<c>a\.b=x\,y</c> sets the key
/// <c>a.b</c> to <c>x,y</c>). Values go into the given map the way helm puts them into its values.
/// </summary>
internal sealed class SetExpression
{
    private const int MaxIndex = 65536;
    private const int MaxDepth = 30;

    private readonly string _text;
    private readonly ValuesSource _source;
    private int _position;

    private SetExpression(ValuesSource source)
    {
        _source = source;
        _text = source.Text;
    }

    /// <summary>Applies one <c>--set…</c> argument to <paramref name="values"/>.</summary>
    /// <exception cref="InvalidDataException">The expression does not parse, or sets into a value that is not a map or list.</exception>
    public static void ParseInto(ValuesSource source, Dictionary<string, object?> values)
    {
        var parser = new SetExpression(source);
        while (!parser.AtEnd)
        {
            parser.Key(values, 0);
        }
    }

    /// <summary>A <c>--set</c> value typed as helm types it: true, false, null (any case), whole numbers not starting with 0 (and 0 itself); else text.</summary>
    public static object? Typed(string text)
    {
        if (text.Equals("true", StringComparison.OrdinalIgnoreCase))
        {
            return true;
        }

        if (text.Equals("false", StringComparison.OrdinalIgnoreCase))
        {
            return false;
        }

        if (text.Equals("null", StringComparison.OrdinalIgnoreCase))
        {
            return null;
        }

        if (text == "0")
        {
            return 0L;
        }

        return text.Length > 0 && text[0] != '0' && long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var number)
            ? number
            : text;
    }

    private bool AtEnd => _position >= _text.Length;

    private void Key(Dictionary<string, object?> map, int depth)
    {
        var (key, stop) = Until('=', '[', ',', '.');
        switch (stop)
        {
            case null:
                if (key.Length > 0)
                {
                    throw Error($"key \"{key}\" has no value");
                }

                return;
            case ',':
                throw Error($"key \"{key}\" has no value (cannot end with ,)");
            case '=':
                Set(map, key, Value());
                return;
            case '[':
            {
                var index = Index();
                var list = map.TryGetValue(key, out var existing)
                    ? existing as List<object?> ?? throw Error($"\"{key}\" is {ValuesTree.Display(existing)}, not a list")
                    : [];
                Set(map, key, ListItem(list, index, depth));
                return;
            }

            default:
            {
                if (++depth > MaxDepth)
                {
                    throw Error($"keys nest deeper than {MaxDepth} levels");
                }

                var inner = map.TryGetValue(key, out var existing)
                    ? existing as Dictionary<string, object?> ?? throw Error($"\"{key}\" is {ValuesTree.Display(existing)}, not a map")
                    : new Dictionary<string, object?>(StringComparer.Ordinal);
                Key(inner, depth);
                if (inner.Count == 0)
                {
                    throw Error($"key map \"{key}\" has no value");
                }

                Set(map, key, inner);
                return;
            }
        }
    }

    private List<object?> ListItem(List<object?> list, int index, int depth)
    {
        var (rest, stop) = Until('[', '.', '=');
        if (rest.Length > 0)
        {
            throw Error($"unexpected data at end of array index: \"{rest}\"");
        }

        switch (stop)
        {
            case null:
                throw Error($"list item [{index}] has no value");
            case '=':
                return SetIndex(list, index, Value());
            case '[':
            {
                var inner = index < list.Count && list[index] is List<object?> nested ? nested : [];
                return SetIndex(list, index, ListItem(inner, Index(), depth));
            }

            default:
            {
                var inner = index < list.Count && list[index] is Dictionary<string, object?> map ? map : new Dictionary<string, object?>(StringComparer.Ordinal);
                Key(inner, depth);
                return SetIndex(list, index, inner);
            }
        }
    }

    /// <summary>The value after '=': a list <c>{a,b}</c>, or text up to the next unescaped comma.</summary>
    private object? Value()
    {
        if (AtEnd)
        {
            return string.Empty;
        }

        if (_text[_position] != '{')
        {
            return Convert(Until(',').Text);
        }

        _position++;
        var list = new List<object?>();
        while (true)
        {
            var (item, stop) = Until(',', '}');
            if (stop is null)
            {
                throw Error("list must terminate with '}'");
            }

            list.Add(Convert(item));
            if (stop == '}')
            {
                if (!AtEnd && _text[_position] == ',')
                {
                    _position++;
                }

                return list;
            }
        }
    }

    private int Index()
    {
        var (text, stop) = Until(']');
        if (stop is null || !int.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var index))
        {
            throw Error($"error parsing index: \"{text}\" is not a number in [ ]");
        }

        return index < 0 ? throw Error($"negative {index} index not allowed") : index;
    }

    private List<object?> SetIndex(List<object?> list, int index, object? value)
    {
        if (index > MaxIndex)
        {
            throw Error($"index of {index} is greater than maximum supported index of {MaxIndex}");
        }

        while (list.Count <= index)
        {
            list.Add(null);
        }

        list[index] = value;
        return list;
    }

    private object? Convert(string text) => _source.Kind switch
    {
        ValuesSourceKind.Set => Typed(text),
        ValuesSourceKind.SetFile => File.Exists(text) ? File.ReadAllText(text) : throw Error($"no such file: {text}"),
        _ => text,
    };

    /// <summary>Reads up to one of <paramref name="stops"/> (consumed) or the end; a backslash makes the next character plain.</summary>
    private (string Text, char? Stop) Until(params char[] stops)
    {
        var text = new StringBuilder();
        while (!AtEnd)
        {
            var c = _text[_position++];
            if (stops.Contains(c))
            {
                return (text.ToString(), c);
            }

            if (c == '\\' && !AtEnd)
            {
                c = _text[_position++];
            }

            text.Append(c);
        }

        return (text.ToString(), null);
    }

    private static void Set(Dictionary<string, object?> map, string key, object? value)
    {
        if (key.Length > 0)
        {
            map[key] = value;
        }
    }

    private InvalidDataException Error(string problem) => new($"{_source}: {problem}.");
}
