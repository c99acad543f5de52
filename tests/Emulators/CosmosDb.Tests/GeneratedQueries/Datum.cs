using System.Globalization;
using System.Text;
using System.Text.Json;

namespace DroneDelivery.Emulators.CosmosDb.Tests.GeneratedQueries;

/// <summary>The types of the query language, in the order ORDER BY, MIN and MAX rank them across types.</summary>
internal enum DatumKind
{
    Undefined,
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

/// <summary>
/// A value as the reference evaluator sees it: JSON plus <c>undefined</c> (a missing property). Written
/// for these tests from the query language's documented rules, independently of the emulator's own
/// value type, so that the two can disagree.
/// </summary>
internal sealed class Datum
{
    private Datum(DatumKind kind, double number = 0, bool boolean = false, string? text = null,
        IReadOnlyList<Datum>? items = null, IReadOnlyList<KeyValuePair<string, Datum>>? properties = null)
    {
        Kind = kind;
        Number = number;
        Boolean = boolean;
        Text = text ?? string.Empty;
        Items = items ?? [];
        Properties = properties ?? [];
    }

    public static Datum Undefined { get; } = new(DatumKind.Undefined);

    public static Datum Null { get; } = new(DatumKind.Null);

    public static Datum True { get; } = new(DatumKind.Boolean, boolean: true);

    public static Datum False { get; } = new(DatumKind.Boolean, boolean: false);

    public DatumKind Kind { get; }

    public double Number { get; }

    public bool Boolean { get; }

    public string Text { get; }

    public IReadOnlyList<Datum> Items { get; }

    public IReadOnlyList<KeyValuePair<string, Datum>> Properties { get; }

    public bool IsUndefined => Kind == DatumKind.Undefined;

    /// <summary>Only the boolean true keeps an item in a WHERE clause.</summary>
    public bool IsTrue => Kind == DatumKind.Boolean && Boolean;

    public bool IsPrimitive => Kind is DatumKind.Null or DatumKind.Boolean or DatumKind.Number or DatumKind.String;

    public static Datum Of(bool value) => value ? True : False;

    public static Datum Of(double value) => new(DatumKind.Number, number: value);

    public static Datum Of(string value) => new(DatumKind.String, text: value);

    public static Datum Array(IEnumerable<Datum> items) => new(DatumKind.Array, items: [.. items]);

    /// <summary>An object; undefined properties are left out, as when a query builds one.</summary>
    public static Datum Object(IEnumerable<KeyValuePair<string, Datum>> properties) =>
        new(DatumKind.Object, properties: [.. properties.Where(p => !p.Value.IsUndefined)]);

    public static Datum FromJson(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Null => Null,
        JsonValueKind.True => True,
        JsonValueKind.False => False,
        JsonValueKind.Number => Of(element.GetDouble()),
        JsonValueKind.String => Of(element.GetString()!),
        JsonValueKind.Array => Array(element.EnumerateArray().Select(FromJson)),
        JsonValueKind.Object => Object(element.EnumerateObject().Select(p => new KeyValuePair<string, Datum>(p.Name, FromJson(p.Value)))),
        _ => Undefined,
    };

    public Datum Property(string name)
    {
        foreach (var (key, value) in Properties)
        {
            if (string.Equals(key, name, StringComparison.Ordinal))
            {
                return value;
            }
        }

        return Undefined;
    }

    public Datum Index(int index) => Kind == DatumKind.Array && index >= 0 && index < Items.Count ? Items[index] : Undefined;

    /// <summary>The same object without the named properties (the system properties the service adds to an item).</summary>
    public Datum Without(IReadOnlySet<string> names) =>
        Kind == DatumKind.Object ? Object(Properties.Where(p => !names.Contains(p.Key))) : this;

    /// <summary>Equal text for equal values: object properties in name order, every number as a double.</summary>
    public string Canonical()
    {
        var text = new StringBuilder();
        Write(text);
        return text.ToString();
    }

    /// <summary>The value as query text (a literal), or JSON for a result.</summary>
    public override string ToString() => IsUndefined ? "undefined" : Canonical();

    /// <summary>Deep equality, as <c>=</c> has it when both sides are defined and of one type.</summary>
    public bool SameAs(Datum other) => string.Equals(Canonical(), other.Canonical(), StringComparison.Ordinal);

    /// <summary>The order across and within types (undefined, null, false, true, numbers, strings).</summary>
    public static int Order(Datum left, Datum right)
    {
        if (left.Kind != right.Kind)
        {
            return left.Kind.CompareTo(right.Kind);
        }

        return left.Kind switch
        {
            DatumKind.Boolean => left.Boolean.CompareTo(right.Boolean),
            DatumKind.Number => left.Number.CompareTo(right.Number),
            DatumKind.String => string.CompareOrdinal(left.Text, right.Text),
            DatumKind.Undefined or DatumKind.Null => 0,
            _ => string.CompareOrdinal(left.Canonical(), right.Canonical()),
        };
    }

    private void Write(StringBuilder text)
    {
        switch (Kind)
        {
            case DatumKind.Undefined:
                text.Append("undefined");
                break;
            case DatumKind.Null:
                text.Append("null");
                break;
            case DatumKind.Boolean:
                text.Append(Boolean ? "true" : "false");
                break;
            case DatumKind.Number:
                // -0 and 0 are one number to the query language (and to DISTINCT).
                text.Append(Number == 0 ? "0" : Number.ToString("R", CultureInfo.InvariantCulture));
                break;
            case DatumKind.String:
                text.Append(JsonSerializer.Serialize(Text));
                break;
            case DatumKind.Array:
                text.Append('[');
                for (var i = 0; i < Items.Count; i++)
                {
                    text.Append(i == 0 ? string.Empty : ",");
                    Items[i].Write(text);
                }

                text.Append(']');
                break;
            default:
                text.Append('{');
                var first = true;
                foreach (var (name, value) in Properties.OrderBy(p => p.Key, StringComparer.Ordinal))
                {
                    text.Append(first ? string.Empty : ",").Append(JsonSerializer.Serialize(name)).Append(':');
                    value.Write(text);
                    first = false;
                }

                text.Append('}');
                break;
        }
    }
}
