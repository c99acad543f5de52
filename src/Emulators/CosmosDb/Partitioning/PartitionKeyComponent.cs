using System.Globalization;
using System.Text.Json;

namespace DroneDelivery.Emulators.CosmosDb.Partitioning;

/// <summary>The JSON types a partition key value can have (type markers as Cosmos DB hashes them).</summary>
internal enum PartitionKeyKind : byte
{
    Undefined = 0x00,
    Null = 0x01,
    False = 0x02,
    True = 0x03,
    Number = 0x05,
    String = 0x08,
}

/// <summary>One partition key value: the value of the partition key path in a document.</summary>
internal readonly record struct PartitionKeyComponent(PartitionKeyKind Kind, double Number = 0, string? Text = null)
{
    public static PartitionKeyComponent Undefined { get; } = new(PartitionKeyKind.Undefined);

    public static PartitionKeyComponent FromJson(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.String => new(PartitionKeyKind.String, Text: element.GetString()),
        JsonValueKind.Number => new(PartitionKeyKind.Number, element.GetDouble()),
        JsonValueKind.True => new(PartitionKeyKind.True),
        JsonValueKind.False => new(PartitionKeyKind.False),
        JsonValueKind.Null => new(PartitionKeyKind.Null),
        // Objects and arrays are not valid partition key values; the service treats them as undefined.
        _ => Undefined,
    };

    /// <summary>The header form the SDK sends (<c>["abc"]</c>, <c>[5.0]</c>, <c>[{}]</c>), used in messages.</summary>
    public override string ToString() => Kind switch
    {
        PartitionKeyKind.String => "[" + JsonSerializer.Serialize(Text) + "]",
        PartitionKeyKind.Number => "[" + Number.ToString("R", CultureInfo.InvariantCulture) + "]",
        PartitionKeyKind.True => "[true]",
        PartitionKeyKind.False => "[false]",
        PartitionKeyKind.Null => "[null]",
        _ => "[{}]",
    };

    /// <summary>
    /// Parses the <c>x-ms-documentdb-partitionkey</c> header: a JSON array with one component, where
    /// <c>{}</c> stands for an undefined value (<c>PartitionKey.None</c>).
    /// </summary>
    public static bool TryParseHeader(string header, out PartitionKeyComponent component, out string? error)
    {
        component = Undefined;
        error = null;

        // Fast path for the common ["plain string"]: no JSON parse.
        if (header.Length >= 4 && header.StartsWith("[\"", StringComparison.Ordinal) && header.EndsWith("\"]", StringComparison.Ordinal)
            && header.AsSpan(2, header.Length - 4).IndexOfAny('"', '\\') < 0)
        {
            component = new PartitionKeyComponent(PartitionKeyKind.String, Text: header[2..^2]);
            return true;
        }

        try
        {
            using var document = JsonDocument.Parse(header);
            var root = document.RootElement;
            if (root.ValueKind != JsonValueKind.Array)
            {
                error = "The partition key header must be a JSON array.";
                return false;
            }

            if (root.GetArrayLength() != 1)
            {
                error = root.GetArrayLength() == 0
                    ? "The partition key header is empty; this container requires a partition key value."
                    : "Hierarchical partition keys are not supported by this emulator; send exactly one component.";
                return false;
            }

            var value = root[0];
            if (value.ValueKind == JsonValueKind.Object && !value.EnumerateObject().Any())
            {
                component = Undefined;
                return true;
            }

            if (value.ValueKind is JsonValueKind.Object or JsonValueKind.Array)
            {
                error = "A partition key value must be a string, number, boolean, null or {} (undefined).";
                return false;
            }

            component = FromJson(value);
            return true;
        }
        catch (JsonException e)
        {
            error = "The partition key header is not valid JSON: " + e.Message;
            return false;
        }
    }
}
