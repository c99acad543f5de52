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

    /// <summary>The component as JSON, as it appears in the partition key header (<c>"abc"</c>, <c>5</c>, <c>{}</c> for undefined).</summary>
    public override string ToString() => Kind switch
    {
        PartitionKeyKind.String => JsonSerializer.Serialize(Text),
        PartitionKeyKind.Number => Number.ToString("R", CultureInfo.InvariantCulture),
        PartitionKeyKind.True => "true",
        PartitionKeyKind.False => "false",
        PartitionKeyKind.Null => "null",
        _ => "{}",
    };
}
