using System.Buffers.Binary;
using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>A batch or bulk request: its body (a JSON array or the HybridRow binary form) and headers.</summary>
public sealed record BatchCase(bool Hierarchical, string? Atomic, string? PartitionKey, byte[] Body, bool Binary)
{
    public HostileRequest Request()
    {
        var headers = new List<KeyValuePair<string, string>> { new("x-ms-cosmos-is-batch-request", "True") };
        if (Atomic is not null)
        {
            headers.Add(new("x-ms-cosmos-batch-atomic", Atomic));
        }

        if (PartitionKey is not null)
        {
            headers.Add(new("x-ms-documentdb-partitionkey", PartitionKey));
        }

        var link = Hierarchical ? HostileEmulator.HierarchicalLink : HostileEmulator.ItemsLink;
        return new HostileRequest("POST", $"/{link}/docs", headers, Body);
    }

    public override string ToString() =>
        Binary ? $"{Request() with { Body = [] }} binary={Convert.ToHexString(Body.Length <= 2_000 ? Body : Body[..2_000])}" : Request().ToString();
}

/// <summary>
/// Transactional batches and bulk requests from a hostile client, in the JavaScript SDK's JSON form
/// and the .NET SDK's HybridRow binary form: unknown operation types and fields, operations without
/// ids or bodies, partition keys of the wrong shape, more than 100 operations, and — for the binary
/// form — valid encodings with bytes flipped, lengths and counts overwritten with extreme values,
/// truncated records, and random bytes.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class BatchBodyTests(HostileEmulator emulator, ITestOutputHelper output)
{
    [Fact]
    public void Json_batches_are_executed_or_refused_with_a_400()
    {
        Fuzz.Report(output, "batch and bulk bodies (JSON)",
            ("through the pipeline", () => Fuzz.Run("batch", JsonCases, Fuzz.Cases, c => Verdict.Check(c.Request(), emulator.Direct(c.Request())), emulator.ResetSeeds)),
            ("over HTTP", () => Fuzz.Run("batch over HTTP", JsonCases, Fuzz.HttpSample, c => Verdict.Check(c.Request(), emulator.Send(c.Request())), () =>
            {
                emulator.ResetSeeds();
                emulator.AssertHealthy();
            })));
    }

    [Fact]
    public void HybridRow_batches_are_executed_or_refused_with_a_400()
    {
        Fuzz.Report(output, "batch and bulk bodies (HybridRow)",
            ("through the pipeline", () => Fuzz.Run("hybrid row", BinaryCases, Fuzz.Cases, c => Verdict.Check(c.Request(), emulator.Direct(c.Request())), emulator.ResetSeeds)),
            ("over HTTP", () => Fuzz.Run("hybrid row over HTTP", BinaryCases, Fuzz.HttpSample, c => Verdict.Check(c.Request(), emulator.Send(c.Request())), () =>
            {
                emulator.ResetSeeds();
                emulator.AssertHealthy();
            })));
    }

    private static Gen<string> Id => HostileGen.Pick((5, Gen.Choose(0, 12).Select(n => $"\"seed-{n}\"")), (2, HostileGen.JsonString), (1, HostileGen.JsonValue(1)));

    private static Gen<string> KeyJson => HostileGen.Pick(
        (5, Gen.Elements("[\"p0\"]", "[\"p1\"]", "[\"t0\",\"u0\",\"s0\"]", "[\"t0\"]")),
        (2, PartitionKeyGen.Header));

    private static Gen<string> JsonOperation =>
        from type in HostileGen.Pick(
            (6, Gen.Elements("Create", "Upsert", "Read", "Replace", "Delete", "Patch")),
            (1, Gen.Elements("create", "0", "1", "Query", "", "ReadFeed")))
        from id in Id
        from key in KeyJson
        from keyForm in Gen.Choose(0, 3)
        from body in HostileGen.Pick(
            (4, from i in Id from k in Gen.Elements("\"p0\"", "\"p1\"", "1", "null") from v in HostileGen.JsonValue(2) select $"{{\"id\":{i},\"pk\":{k},\"tenant\":\"t0\",\"user\":\"u0\",\"session\":\"s0\",\"v\":{v}}}"),
            (2, Gen.Elements("{\"operations\":[{\"op\":\"set\",\"path\":\"/a\",\"value\":1}]}", "[{\"op\":\"incr\",\"path\":\"/n\",\"value\":\"x\"}]", "{\"operations\":[]}")),
            (1, HostileGen.JsonValue(2)))
        from ifMatch in HostileGen.Pick((4, Gen.Constant(string.Empty)), (1, Gen.Elements(",\"ifMatch\":\"*\"", ",\"ifNoneMatch\":\"*\"", ",\"ifMatch\":\"\\\"x\\\"\"", ",\"ifMatch\":1")))
        from extra in HostileGen.Pick((8, Gen.Constant(string.Empty)), (1, Gen.Elements(",\"timeToLiveInSeconds\":1", ",\"x\":1", ",\"operationType\":\"Read\"")))
        select $"{{\"operationType\":{HostileGen.JsonSafe(type)},\"id\":{id},"
            + (keyForm switch { 0 => $"\"partitionKey\":{HostileGen.JsonSafe(key)},", 1 => $"\"partitionKey\":{key},", 2 => string.Empty, _ => "\"partitionKey\":null," })
            + $"\"resourceBody\":{body}{ifMatch}{extra}}}";

    private static Gen<string> JsonBody =>
        from count in HostileGen.Pick((30, Gen.Choose(0, 5)), (1, Gen.Elements(100, 101)))
        from operations in Gen.ArrayOf(JsonOperation, count)
        select "[" + string.Join(",", operations) + "]";

    private static Gen<string?> AtomicHeader => HostileGen.Pick((4, Gen.Elements<string?>("True", "False")), (1, Gen.Elements<string?>(null, "", "yes", "1")));

    private static Gen<string?> BatchKey => HostileGen.Pick((5, KeyJson.Select(k => (string?)k)), (1, Gen.Constant<string?>(null)));

    private static Arbitrary<BatchCase> JsonCases => Arb.From(
        from hierarchical in Gen.Elements(false, false, true)
        from atomic in AtomicHeader
        from key in BatchKey
        from body in HostileGen.Body(JsonBody)
        select new BatchCase(hierarchical, atomic, key, body, Binary: false),
        c => HostileGen.ShrinkBytes(c.Body).Select(b => c with { Body = b }));

    private static Arbitrary<BatchCase> BinaryCases => Arb.From(
        from hierarchical in Gen.Elements(false, false, true)
        from atomic in AtomicHeader
        from key in BatchKey
        from body in HostileGen.Pick((6, HybridRow.Mutated), (3, HybridRow.Valid), (1, HostileGen.Bytes.Select(b => b.Length > 0 && b[0] == (byte)'[' ? b[1..] : b)))
        select new BatchCase(hierarchical, atomic, key, body, Binary: true),
        c => HostileGen.ShrinkBytes(c.Body).Select(b => c with { Body = b }));
}

/// <summary>
/// The .NET SDK's batch wire format (RecordIO of HybridRows), written the way the SDK writes it,
/// so that mutations start from bodies the emulator reads.
/// </summary>
internal static class HybridRow
{
    private const int SegmentSchema = 2147473648;
    private const int RecordSchema = 2147473649;
    private const int OperationSchema = 2145473648;
    private static readonly int[] OperationTypes = [0, 1, 2, 4, 5, 20];

    public static Gen<byte[]> Valid =>
        from count in HostileGen.Pick((30, Gen.Choose(0, 4)), (1, Gen.Elements(100, 101)))
        from operations in Gen.ArrayOf(Operation, count)
        select Stream(operations);

    public static Gen<byte[]> Mutated =>
        from body in Valid
        from mutations in Gen.Choose(1, 4)
        from seeds in Gen.ArrayOf(Gen.Choose(0, int.MaxValue), mutations * 3)
        select Mutate(body, seeds);

    private static Gen<byte[]> Operation =>
        from type in HostileGen.Pick((8, Gen.Elements(OperationTypes)), (1, Gen.Elements(3, 6, -1, int.MaxValue)))
        from key in HostileGen.Pick((5, Gen.Elements("[\"p0\"]", "[\"p1\"]", "[\"t0\",\"u0\",\"s0\"]")), (1, PartitionKeyGen.Header))
        from id in HostileGen.Pick((5, Gen.Choose(0, 12).Select(n => $"seed-{n}")), (1, HostileGen.Text))
        from body in HostileGen.Pick(
            (4, Gen.Constant<string?>(null)),
            (4, from i in Gen.Choose(0, 12) from v in HostileGen.JsonValue(2) select (string?)$"{{\"id\":\"seed-{i}\",\"pk\":\"p0\",\"tenant\":\"t0\",\"user\":\"u0\",\"session\":\"s0\",\"v\":{v}}}"),
            (1, HostileGen.JsonText(HostileGen.JsonValue(2)).Select(t => (string?)t)))
        from presence in Gen.Choose(0, 31)
        from sparse in Gen.ArrayOf(Sparse, 3)
        from sparseCount in Gen.Choose(0, 3)
        select Row(type, (presence & 1) == 0 ? key : null, (presence & 2) != 0, (presence & 4) == 0 ? id : null, (presence & 8) != 0, body,
            sparse.Take(sparseCount).SelectMany(s => s).ToArray());

    // Sparse fields: the ones the emulator reads (if-match, if-none-match, minimal return, indexing
    // directive) and ones it refuses (time to live, unknown tokens).
    private static Gen<byte[]> Sparse =>
        from kind in Gen.Choose(0, 6)
        from text in HostileGen.Pick((3, Gen.Elements("*", "\"x\"", "Exclude", "Default")), (1, HostileGen.Text))
        select kind switch
        {
            0 => (byte[])[20, 9, .. Variable(Encoding.UTF8.GetBytes(text))],
            1 => (byte[])[20, 10, .. Variable(Encoding.UTF8.GetBytes(text))],
            2 => (byte[])[3, 12],
            3 => (byte[])[20, 8, .. Variable(Encoding.UTF8.GetBytes(text))],
            4 => (byte[])[7, 11, 1, 0, 0, 0],
            5 => (byte[])[16, 99, 0, 0, 0, 0, 0, 0, 0, 0],
            _ => (byte[])[20, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
        };

    /// <summary>A batch of one operation (0 create, 20 upsert, …) with a resource body, as the SDK writes it.</summary>
    public static byte[] Single(int type, string key, string id, string body) => Stream([Row(type, key, false, id, false, body, [])]);

    private static byte[] Row(int type, string? key, bool effectiveKey, string? id, bool binaryId, string? body, byte[] sparse)
    {
        var row = new List<byte> { 0x81 };
        row.AddRange(Int32(OperationSchema));
        var presence = (byte)(0b11 | (key is null ? 0 : 1 << 2) | (effectiveKey ? 1 << 3 : 0) | (id is null ? 0 : 1 << 4) | (binaryId ? 1 << 5 : 0) | (body is null ? 0 : 1 << 6));
        row.Add(presence);
        row.AddRange(Int32(type));
        row.AddRange(Int32(3));
        if (key is not null)
        {
            row.AddRange(Variable(Encoding.UTF8.GetBytes(key)));
        }

        if (effectiveKey)
        {
            row.AddRange(Variable([0x05, 0x01]));
        }

        if (id is not null)
        {
            row.AddRange(Variable(Encoding.UTF8.GetBytes(id)));
        }

        if (binaryId)
        {
            row.AddRange(Variable([1, 2, 3]));
        }

        if (body is not null)
        {
            row.AddRange(Variable(Encoding.UTF8.GetBytes(body)));
        }

        row.AddRange(sparse);
        return [.. row];
    }

    private static byte[] Stream(byte[][] rows)
    {
        var stream = new List<byte> { 0x81 };
        stream.AddRange(Int32(SegmentSchema));
        stream.Add(1);
        stream.AddRange(Int32(10));
        foreach (var row in rows)
        {
            stream.Add(0x81);
            stream.AddRange(Int32(RecordSchema));
            stream.AddRange(Int32(row.Length));
            stream.AddRange(Int32(0));
            stream.AddRange(row);
        }

        return [.. stream];
    }

    private static byte[] Mutate(byte[] body, int[] seeds)
    {
        var bytes = new List<byte>(body);
        for (var i = 0; i + 2 < seeds.Length; i += 3)
        {
            if (bytes.Count == 0)
            {
                break;
            }

            var at = seeds[i + 1] % bytes.Count;
            switch (seeds[i] % 5)
            {
                case 0:
                    bytes[at] ^= (byte)(1 << (seeds[i + 2] % 8));
                    break;
                case 1:
                    bytes.RemoveRange(at, bytes.Count - at);
                    break;
                case 2:
                    bytes.Insert(at, (byte)seeds[i + 2]);
                    break;
                case 3:
                    // An int32 (a length, a count, a schema id) overwritten with an extreme value.
                    var extreme = Int32(new[] { int.MaxValue, int.MinValue, -1, 0, 0x7FFFFFF0, 10 }[seeds[i + 2] % 6]);
                    for (var k = 0; k < 4 && at + k < bytes.Count; k++)
                    {
                        bytes[at + k] = extreme[k];
                    }

                    break;
                default:
                    // A variable-length integer that never ends, or claims gigabytes.
                    bytes.InsertRange(at, seeds[i + 2] % 2 == 0 ? Enumerable.Repeat((byte)0xFF, 12) : [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]);
                    break;
            }
        }

        return [.. bytes];
    }

    public static byte[] Int32(int value)
    {
        var bytes = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(bytes, value);
        return bytes;
    }

    private static byte[] Variable(byte[] value)
    {
        var bytes = new List<byte>();
        var length = (uint)value.Length;
        while (length >= 0x80)
        {
            bytes.Add((byte)(length | 0x80));
            length >>= 7;
        }

        bytes.Add((byte)length);
        bytes.AddRange(value);
        return [.. bytes];
    }
}
