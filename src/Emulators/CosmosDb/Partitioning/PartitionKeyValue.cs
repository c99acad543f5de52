using System.Diagnostics.CodeAnalysis;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;

namespace DroneDelivery.Emulators.CosmosDb.Partitioning;

/// <summary>
/// A partition key as a request names it or a document holds it: one component per partition key
/// path, or, for a hierarchical (MultiHash) key, the first one or two of them (a prefix). The header
/// form the SDKs send (<c>x-ms-documentdb-partitionkey</c>) is a JSON array of the components:
/// <c>["abc"]</c>, <c>["tenant", "user", 5.0]</c>, <c>[{}]</c> for an undefined value.
/// </summary>
internal sealed class PartitionKeyValue : IEquatable<PartitionKeyValue>
{
    private readonly PartitionKeyComponent[] _components;

    private PartitionKeyValue(PartitionKeyComponent[] components) => _components = components;

    public IReadOnlyList<PartitionKeyComponent> Components => _components;

    public int Count => _components.Length;

    public static PartitionKeyValue Of(params PartitionKeyComponent[] components) => new(components);

    /// <summary>
    /// Parses the partition key header: a JSON array of components, where <c>{}</c> stands for an
    /// undefined value (<c>PartitionKey.None</c>). How many components the container takes is checked
    /// against its definition, not here.
    /// </summary>
    public static bool TryParseHeader(string header, [NotNullWhen(true)] out PartitionKeyValue? value, out string? error)
    {
        value = null;
        error = null;

        // Fast path for the common ["plain string"]: no JSON parse.
        if (header.Length >= 4 && header.StartsWith("[\"", StringComparison.Ordinal) && header.EndsWith("\"]", StringComparison.Ordinal)
            && header.AsSpan(2, header.Length - 4).IndexOfAny('"', '\\') < 0 && JsonInput.IsValidUtf16(header)
            && !header.AsSpan(2, header.Length - 4).ContainsAnyInRange('\0', '\u001f'))
        {
            value = new PartitionKeyValue([new PartitionKeyComponent(PartitionKeyKind.String, Text: header[2..^2])]);
            return true;
        }

        if (!JsonInput.IsValidUtf16(header))
        {
            // Text with an unpaired surrogate cannot even be transcoded for the JSON reader.
            error = "The partition key header is not valid UTF-16 (an unpaired surrogate).";
            return false;
        }

        try
        {
            using var document = JsonInput.Parse(header);
            var root = document.RootElement;
            if (root.ValueKind != JsonValueKind.Array)
            {
                error = "The partition key header must be a JSON array.";
                return false;
            }

            if (root.GetArrayLength() == 0)
            {
                error = "The partition key header is empty; this container requires a partition key value.";
                return false;
            }

            var components = new PartitionKeyComponent[root.GetArrayLength()];
            var i = 0;
            foreach (var element in root.EnumerateArray())
            {
                if (element.ValueKind == JsonValueKind.Object && !element.EnumerateObject().Any())
                {
                    components[i++] = PartitionKeyComponent.Undefined;
                    continue;
                }

                if (element.ValueKind is JsonValueKind.Object or JsonValueKind.Array)
                {
                    error = "A partition key value must be a string, number, boolean, null or {} (undefined).";
                    return false;
                }

                if (JsonInput.Problem(element) is { } problem)
                {
                    error = $"The partition key header cannot be accepted: {problem}.";
                    return false;
                }

                components[i++] = PartitionKeyComponent.FromJson(element);
            }

            value = new PartitionKeyValue(components);
            return true;
        }
        catch (JsonException e)
        {
            error = "The partition key header is not valid JSON: " + e.Message;
            return false;
        }
    }

    public bool Equals(PartitionKeyValue? other) =>
        other is not null && _components.AsSpan().SequenceEqual(other._components);

    public override bool Equals(object? obj) => Equals(obj as PartitionKeyValue);

    public override int GetHashCode()
    {
        var hash = new HashCode();
        foreach (var component in _components)
        {
            hash.Add(component);
        }

        return hash.ToHashCode();
    }

    /// <summary>The header form (<c>["abc"]</c>, <c>["a",5,{}]</c>), used in messages.</summary>
    public override string ToString() => "[" + string.Join(",", _components.Select(c => c.ToString())) + "]";
}
