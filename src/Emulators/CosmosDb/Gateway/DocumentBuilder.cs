using System.Buffers;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>Turns a client's item JSON into the stored form: its properties plus the system properties.</summary>
internal static class DocumentBuilder
{
    private static readonly HashSet<string> SystemProperties = new(StringComparer.Ordinal) { "_rid", "_self", "_etag", "_attachments", "_ts" };

    public static StoredDocument Build(ContainerResource container, JsonElement body, string id, string epk, StoredDocument? existing)
    {
        var sequence = existing?.Sequence ?? container.NextSequence();
        var rid = existing?.Rid ?? ResourceIds.Document(container.RidBytes, (ulong)sequence);
        var etag = ETags.New();
        var timestamp = container.Time.GetUtcNow().ToUnixTimeSeconds();
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var writer = new Utf8JsonWriter(buffer))
        {
            writer.WriteStartObject();
            foreach (var property in body.EnumerateObject())
            {
                if (!SystemProperties.Contains(property.Name))
                {
                    property.WriteTo(writer);
                }
            }

            writer.WriteString("_rid", rid);
            writer.WriteString("_self", $"{container.SelfLink}docs/{rid}/");
            writer.WriteString("_etag", etag);
            writer.WriteString("_attachments", "attachments/");
            writer.WriteNumber("_ts", timestamp);
            writer.WriteEndObject();
        }

        var json = buffer.WrittenSpan.ToArray();
        return new StoredDocument
        {
            Id = id,
            Epk = epk,
            Sequence = sequence,
            Rid = rid,
            ETag = etag,
            Timestamp = timestamp,
            Json = json,
            // Parse over the stored array itself: no copy of the bytes, only the small index.
            Root = JsonDocument.Parse(json).RootElement,
        };
    }
}
