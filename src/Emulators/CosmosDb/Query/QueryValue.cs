using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>The types of the Cosmos DB query language, in its cross-type sort order.</summary>
internal enum QueryValueKind : byte
{
    Undefined = 0,
    Null = 1,
    Boolean = 2,
    Number = 3,
    String = 4,
    Array = 5,
    Object = 6,
}

/// <summary>
/// A value during query evaluation. Values read from stored documents stay backed by their
/// <see cref="JsonElement"/> (no copy); values the query builds (object and array constructors,
/// aggregate results) hold their parts directly.
/// </summary>
internal readonly struct QueryValue
{
    private readonly string? _text;
    private readonly object? _built;
    private readonly JsonElement _element;
    private readonly bool _hasElement;

    private QueryValue(QueryValueKind kind, double number = 0, string? text = null, object? built = null)
    {
        Kind = kind;
        Number = number;
        _text = text;
        _built = built;
    }

    private QueryValue(QueryValueKind kind, JsonElement element, double number = 0)
    {
        Kind = kind;
        Number = number;
        _element = element;
        _hasElement = true;
    }

    private QueryValue(QueryValueKind kind, JsonElement element, StoredDocument document)
    {
        Kind = kind;
        _element = element;
        _hasElement = true;
        _built = document;
    }

    public static QueryValue Undefined => default;

    public static QueryValue Null { get; } = new(QueryValueKind.Null);

    public static QueryValue True { get; } = new(QueryValueKind.Boolean, 1);

    public static QueryValue False { get; } = new(QueryValueKind.Boolean, 0);

    public QueryValueKind Kind { get; }

    /// <summary>The number, or 1/0 for booleans.</summary>
    public double Number { get; }

    public bool IsUndefined => Kind == QueryValueKind.Undefined;

    public bool IsTrue => Kind == QueryValueKind.Boolean && Number != 0;

    public static QueryValue FromBoolean(bool value) => value ? True : False;

    public static QueryValue FromNumber(double value) => new(QueryValueKind.Number, value);

    public static QueryValue FromString(string value) => new(QueryValueKind.String, text: value);

    public static QueryValue FromArray(IReadOnlyList<QueryValue> items) => new(QueryValueKind.Array, built: items);

    public static QueryValue FromObject(IReadOnlyList<KeyValuePair<string, QueryValue>> properties) =>
        new(QueryValueKind.Object, built: properties);

    /// <summary>A stored document: written out byte for byte, its top-level properties read from its index.</summary>
    public static QueryValue FromDocument(StoredDocument document) => new(QueryValueKind.Object, document.Root, document);

    public static QueryValue FromElement(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Object => new(QueryValueKind.Object, element),
        JsonValueKind.Array => new(QueryValueKind.Array, element),
        JsonValueKind.String => new(QueryValueKind.String, element),
        JsonValueKind.Number => new(QueryValueKind.Number, element, element.GetDouble()),
        JsonValueKind.True => True,
        JsonValueKind.False => False,
        JsonValueKind.Null => Null,
        _ => Undefined,
    };

    public string AsString() => _text ?? (_hasElement ? _element.GetString()! : string.Empty);

    /// <summary>String equality without materialising a string read from a document.</summary>
    public bool StringEquals(in QueryValue other)
    {
        if (_hasElement && other._text is not null)
        {
            return _element.ValueEquals(other._text);
        }

        if (other._hasElement && _text is not null)
        {
            return other._element.ValueEquals(_text);
        }

        return string.Equals(AsString(), other.AsString(), StringComparison.Ordinal);
    }

    /// <summary>The value of a property of an object, undefined for anything else or a missing property.</summary>
    public QueryValue GetProperty(string name)
    {
        if (Kind != QueryValueKind.Object)
        {
            return Undefined;
        }

        if (_built is StoredDocument document)
        {
            return document.TopLevelProperty(name);
        }

        if (_hasElement)
        {
            return _element.TryGetProperty(name, out var child) ? FromElement(child) : Undefined;
        }

        foreach (var property in (IReadOnlyList<KeyValuePair<string, QueryValue>>)_built!)
        {
            if (string.Equals(property.Key, name, StringComparison.Ordinal))
            {
                return property.Value;
            }
        }

        return Undefined;
    }

    public QueryValue GetIndex(int index)
    {
        if (Kind != QueryValueKind.Array || index < 0)
        {
            return Undefined;
        }

        if (_hasElement)
        {
            return index < _element.GetArrayLength() ? FromElement(_element[index]) : Undefined;
        }

        var items = (IReadOnlyList<QueryValue>)_built!;
        return index < items.Count ? items[index] : Undefined;
    }

    public int ArrayLength => Kind != QueryValueKind.Array ? 0
        : _hasElement ? _element.GetArrayLength() : ((IReadOnlyList<QueryValue>)_built!).Count;

    public IEnumerable<QueryValue> EnumerateArray()
    {
        if (Kind != QueryValueKind.Array)
        {
            yield break;
        }

        if (_hasElement)
        {
            foreach (var item in _element.EnumerateArray())
            {
                yield return FromElement(item);
            }

            yield break;
        }

        foreach (var item in (IReadOnlyList<QueryValue>)_built!)
        {
            yield return item;
        }
    }

    public IEnumerable<KeyValuePair<string, QueryValue>> EnumerateObject()
    {
        if (Kind != QueryValueKind.Object)
        {
            yield break;
        }

        if (_hasElement)
        {
            foreach (var property in _element.EnumerateObject())
            {
                yield return new(property.Name, FromElement(property.Value));
            }

            yield break;
        }

        foreach (var property in (IReadOnlyList<KeyValuePair<string, QueryValue>>)_built!)
        {
            yield return property;
        }
    }

    /// <summary>Writes the value as JSON; undefined must be filtered out by the caller.</summary>
    public void WriteTo(Utf8JsonWriter writer)
    {
        if (_hasElement)
        {
            // Whole stored documents are copied byte for byte; re-serialising them is the costliest part of a page.
            if (_built is StoredDocument document)
            {
                writer.WriteRawValue(document.Json, skipInputValidation: true);
            }
            else
            {
                _element.WriteTo(writer);
            }

            return;
        }

        switch (Kind)
        {
            case QueryValueKind.Null:
                writer.WriteNullValue();
                break;
            case QueryValueKind.Boolean:
                writer.WriteBooleanValue(IsTrue);
                break;
            case QueryValueKind.Number:
                writer.WriteNumberValue(Number);
                break;
            case QueryValueKind.String:
                writer.WriteStringValue(_text);
                break;
            case QueryValueKind.Array:
                writer.WriteStartArray();
                foreach (var item in (IReadOnlyList<QueryValue>)_built!)
                {
                    if (item.IsUndefined)
                    {
                        // Cosmos DB drops undefined array items rather than writing nulls.
                        continue;
                    }

                    item.WriteTo(writer);
                }

                writer.WriteEndArray();
                break;
            case QueryValueKind.Object:
                writer.WriteStartObject();
                foreach (var property in (IReadOnlyList<KeyValuePair<string, QueryValue>>)_built!)
                {
                    if (property.Value.IsUndefined)
                    {
                        continue;
                    }

                    writer.WritePropertyName(property.Key);
                    property.Value.WriteTo(writer);
                }

                writer.WriteEndObject();
                break;
            default:
                throw new InvalidOperationException("Undefined values have no JSON form.");
        }
    }

    public override string ToString()
    {
        if (IsUndefined)
        {
            return "undefined";
        }

        using var buffer = new MemoryStream();
        using (var writer = new Utf8JsonWriter(buffer))
        {
            WriteTo(writer);
        }

        return System.Text.Encoding.UTF8.GetString(buffer.ToArray());
    }
}
