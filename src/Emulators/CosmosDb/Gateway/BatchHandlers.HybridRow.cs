using System.Buffers;
using System.Buffers.Binary;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// The binary batch format of the .NET SDK: a RecordIO stream (a segment header row, then for each
/// operation a record header row with its length and CRC-32 followed by the operation's row), where
/// every row is a HybridRow: version byte 0x81, the schema id (int32), a presence bitmask, the fixed
/// columns, the variable columns present (LEB128 length + bytes) and then sparse columns (layout
/// code, path token, value). The answer has the same framing with one result row per operation.
/// </summary>
internal static partial class BatchHandlers
{
    private const byte HybridRowV1 = 0x81;
    private const int SegmentSchema = 2147473648;
    private const int RecordSchema = 2147473649;
    private const int OperationSchema = 2145473648;
    private const int ResultSchema = 2145473649;

    // Layout codes of sparse values.
    private const byte CodeBooleanFalse = 2;
    private const byte CodeBoolean = 3;
    private const byte CodeInt32 = 7;
    private const byte CodeUInt32 = 11;
    private const byte CodeFloat64 = 16;
    private const byte CodeUtf8 = 20;

    // Path tokens: the schema's property paths in order, after the empty path (0).
    private const int TokenIndexingDirective = 8;
    private const int TokenIfMatch = 9;
    private const int TokenIfNoneMatch = 10;
    private const int TokenTimeToLive = 11;
    private const int TokenMinimalReturnPreference = 12;
    private const int TokenRetryAfterMilliseconds = 5;
    private const int TokenRequestCharge = 6;

    private static List<BatchOperation> ReadHybridRowOperations(byte[] body)
    {
        var reader = new RowReader(body, body.Length);
        reader.Header(SegmentSchema);
        var segmentLength = BinaryPrimitives.ReadInt32LittleEndian(reader.Take(5)[1..]);
        if (segmentLength < reader.Position || segmentLength > body.Length)
        {
            throw new BadRequestException($"The batch request's segment header gives a length of {segmentLength} bytes, outside the body of {body.Length}.");
        }

        reader = new RowReader(body, body.Length) { Position = segmentLength };
        var operations = new List<BatchOperation>();
        while (reader.Position < body.Length)
        {
            reader.Header(RecordSchema);
            var length = BinaryPrimitives.ReadInt32LittleEndian(reader.Take(4));
            reader.Take(4); // CRC-32 of the record
            if (length < 0 || length > body.Length - reader.Position)
            {
                throw new BadRequestException("The batch request's RecordIO stream is truncated.");
            }

            var end = reader.Position + length;

            operations.Add(ReadOperation(new RowReader(body, end) { Position = reader.Position }));
            reader.Position = end;
        }

        return operations;
    }

    private static BatchOperation ReadOperation(RowReader row)
    {
        row.Header(OperationSchema);
        var presence = row.Take(1)[0];
        var operationType = BinaryPrimitives.ReadInt32LittleEndian(row.Take(4));
        row.Take(4); // resource type (document)
        string? partitionKey = null;
        string? id = null;
        byte[]? resourceBody = null;
        // Variable columns, in schema order: partitionKey, effectivePartitionKey, id, binaryId, resourceBody.
        // The SDK sends an effective partition key or a binary id only when an application sets them as
        // request properties; routing by them is not modelled, so they are refused, never ignored.
        for (var bit = 2; bit <= 6; bit++)
        {
            if ((presence & (1 << bit)) == 0)
            {
                continue;
            }

            var value = row.Variable();
            switch (bit)
            {
                case 2:
                    partitionKey = Encoding.UTF8.GetString(value);
                    break;
                case 3:
                    throw Unsupported("effectivePartitionKey", "operations are routed by their partition key only");
                case 4:
                    id = Encoding.UTF8.GetString(value);
                    break;
                case 5:
                    throw Unsupported("binaryId", "items are identified by their string id only");
                case 6:
                    resourceBody = value.ToArray();
                    break;
            }
        }

        string? ifMatch = null;
        string? ifNoneMatch = null;
        var minimal = false;
        while (!row.AtEnd)
        {
            var code = row.Take(1)[0];
            var token = row.VarUInt();
            switch (code, token)
            {
                case (CodeBoolean or CodeBooleanFalse, TokenMinimalReturnPreference):
                    minimal = code == CodeBoolean;
                    break;
                case (CodeUtf8, TokenIfMatch):
                    ifMatch = Encoding.UTF8.GetString(row.Variable());
                    break;
                case (CodeUtf8, TokenIfNoneMatch):
                    ifNoneMatch = Encoding.UTF8.GetString(row.Variable());
                    break;
                case (CodeUtf8, TokenIndexingDirective):
                    if (ItemHandlers.UnsupportedIndexingDirective(Encoding.UTF8.GetString(row.Variable())) is { } directive)
                    {
                        throw new BadRequestException($"The batch operation field 'indexingDirective' is not supported as sent: {directive}");
                    }

                    break;
                case (CodeInt32, TokenTimeToLive):
                    throw Unsupported("timeToLiveInSeconds", "items never expire (time to live is not modelled)");
                default:
                    throw new BadRequestException(
                        $"The batch operation has a field this emulator does not read (path token {token}, layout code {code}).");
            }
        }

        var type = operationType switch
        {
            0 => BatchOperationType.Create,
            1 => BatchOperationType.Patch,
            2 => BatchOperationType.Read,
            4 => BatchOperationType.Delete,
            5 => BatchOperationType.Replace,
            20 => BatchOperationType.Upsert,
            _ => throw new BadRequestException($"The batch operation type {operationType} is not supported (Create, Upsert, Read, Replace, Delete, Patch)."),
        };
        JsonElement? json = null;
        if (resourceBody is not null)
        {
            try
            {
                using var document = JsonInput.Parse(resourceBody);
                json = document.RootElement.Clone();
            }
            catch (JsonException e)
            {
                throw new BadRequestException($"A batch operation's resource body is not valid JSON: {e.Message}");
            }

            if (JsonInput.Problem(json.Value) is { } problem)
            {
                throw new BadRequestException($"A batch operation's resource body cannot be accepted: {problem}.");
            }
        }

        return BatchOperation.Create(type, id, partitionKey, ifMatch, ifNoneMatch, json, minimal);
    }

    private static BadRequestException Unsupported(string field, string why) =>
        new($"The batch operation field '{field}' is not supported by this emulator: {why}.");

    private static GatewayResponse WriteHybridRowResults(IReadOnlyList<Outcome> outcomes, List<BatchOperation> operations, int statusCode)
    {
        var buffer = new ArrayBufferWriter<byte>(256 * outcomes.Count);
        // Segment header: version, schema, presence of its length column, the length of the header itself.
        Write(buffer, [HybridRowV1]);
        WriteInt32(buffer, SegmentSchema);
        Write(buffer, [1]);
        WriteInt32(buffer, 10);
        for (var i = 0; i < outcomes.Count; i++)
        {
            var row = ResultRow(outcomes[i], operations[i]);
            Write(buffer, [HybridRowV1]);
            WriteInt32(buffer, RecordSchema);
            WriteInt32(buffer, row.Length);
            var crc = new byte[4];
            BinaryPrimitives.WriteUInt32LittleEndian(crc, Crc32(row));
            Write(buffer, crc);
            Write(buffer, row);
        }

        return GatewayResponse.Raw(statusCode, buffer.WrittenMemory);
    }

    private static byte[] ResultRow(Outcome outcome, BatchOperation operation)
    {
        var row = new ArrayBufferWriter<byte>(64);
        Write(row, [HybridRowV1]);
        WriteInt32(row, ResultSchema);
        var etag = outcome.ETag;
        var body = outcome.Document is { } document && (!operation.Minimal || operation.Type == BatchOperationType.Read) ? document.Json : null;
        // Presence: statusCode, subStatusCode, eTag, resourceBody.
        Write(row, [(byte)(0b11 | (etag is null ? 0 : 0b100) | (body is null ? 0 : 0b1000))]);
        WriteInt32(row, outcome.Status);
        WriteInt32(row, outcome.SubStatus);
        if (etag is not null)
        {
            WriteVariable(row, Encoding.UTF8.GetBytes(etag));
        }

        if (body is not null)
        {
            WriteVariable(row, body);
        }

        if (outcome.RetryAfter > 0)
        {
            Write(row, [CodeUInt32, TokenRetryAfterMilliseconds]);
            var value = new byte[4];
            BinaryPrimitives.WriteUInt32LittleEndian(value, (uint)outcome.RetryAfter);
            Write(row, value);
        }

        Write(row, [CodeFloat64, TokenRequestCharge]);
        var charge = new byte[8];
        BinaryPrimitives.WriteDoubleLittleEndian(charge, Math.Round(outcome.Charge, 2));
        Write(row, charge);
        return row.WrittenSpan.ToArray();
    }

    private static void Write(ArrayBufferWriter<byte> buffer, ReadOnlySpan<byte> bytes) => buffer.Write(bytes);

    private static readonly uint[] Crc32Table = [.. Enumerable.Range(0, 256).Select(n =>
    {
        var c = (uint)n;
        for (var k = 0; k < 8; k++)
        {
            c = (c & 1) != 0 ? 0xEDB88320 ^ (c >> 1) : c >> 1;
        }

        return c;
    })];

    /// <summary>CRC-32 (IEEE 802.3), as RecordIO stores it for each record.</summary>
    private static uint Crc32(ReadOnlySpan<byte> bytes)
    {
        var crc = 0xFFFFFFFFu;
        foreach (var b in bytes)
        {
            crc = Crc32Table[(crc ^ b) & 0xFF] ^ (crc >> 8);
        }

        return ~crc;
    }

    private static void WriteInt32(ArrayBufferWriter<byte> buffer, int value)
    {
        BinaryPrimitives.WriteInt32LittleEndian(buffer.GetSpan(4), value);
        buffer.Advance(4);
    }

    private static void WriteVariable(ArrayBufferWriter<byte> buffer, ReadOnlySpan<byte> bytes)
    {
        var length = (uint)bytes.Length;
        while (length >= 0x80)
        {
            Write(buffer, [(byte)(length | 0x80)]);
            length >>= 7;
        }

        Write(buffer, [(byte)length]);
        Write(buffer, bytes);
    }

    /// <summary>Reads one HybridRow (or a RecordIO header row) from a buffer that ends where the row ends.</summary>
    private sealed class RowReader(byte[] buffer, int end)
    {
        public int Position { get; set; }

        public bool AtEnd => Position >= end;

        public void Header(int schema)
        {
            var header = Take(5);
            if (header[0] != HybridRowV1 || BinaryPrimitives.ReadInt32LittleEndian(header[1..]) != schema)
            {
                throw new BadRequestException(
                    $"The batch request is neither a JSON array of operations nor the HybridRow batch format (expected schema {schema} at byte {Position - 5}).");
            }
        }

        public ReadOnlySpan<byte> Take(int count)
        {
            if (count < 0 || count > end - Position)
            {
                throw new BadRequestException("The batch request's HybridRow body is truncated.");
            }

            var span = buffer.AsSpan(Position, count);
            Position += count;
            return span;
        }

        public ulong VarUInt()
        {
            ulong value = 0;
            for (var shift = 0; shift < 64; shift += 7)
            {
                var b = Take(1)[0];
                value |= (ulong)(b & 0x7F) << shift;
                if ((b & 0x80) == 0)
                {
                    return value;
                }
            }

            throw new BadRequestException("The batch request has a malformed variable-length integer.");
        }

        public ReadOnlySpan<byte> Variable()
        {
            var length = VarUInt();
            return length <= (ulong)(end - Position)
                ? Take((int)length)
                : throw new BadRequestException($"The batch request's HybridRow body claims a field of {length} bytes, past its end.");
        }
    }
}
