using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>An item write: create, upsert or replace, on the hash or the hierarchical container.</summary>
public sealed record ItemCase(string Operation, bool Hierarchical, string Id, byte[] Body, string? PartitionKey, bool Mismatch)
{
    public HostileRequest Request()
    {
        var link = Hierarchical ? HostileEmulator.HierarchicalLink : HostileEmulator.ItemsLink;
        var headers = new List<KeyValuePair<string, string>>();
        if (PartitionKey is not null)
        {
            headers.Add(new("x-ms-documentdb-partitionkey", PartitionKey));
        }

        if (Operation == "upsert")
        {
            headers.Add(new("x-ms-documentdb-is-upsert", "True"));
        }

        return Operation == "replace"
            ? new HostileRequest("PUT", $"/{link}/docs/{Uri.EscapeDataString(Id)}", headers, Body)
            : new HostileRequest("POST", $"/{link}/docs", headers, Body);
    }

    public override string ToString() => $"{(Mismatch ? "partition key mismatch " : string.Empty)}{Request()}";
}

/// <summary>
/// Item bodies from a hostile client: ids that are empty, too long, of the wrong type or full of
/// characters ids may not hold; partition key values of every JSON type, numbers no double holds,
/// strings with unpaired surrogates; system properties; duplicate names; deep nesting; truncated or
/// otherwise broken JSON; random bytes. A partition key header that names another key than the item
/// is 400 with sub-status 1001, as the service answers it (and for the hierarchical container so is
/// a header with a prefix of the key).
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class ItemBodyTests(HostileEmulator emulator, ITestOutputHelper output)
{
    [Fact]
    public void Item_bodies_are_stored_or_refused_with_a_400()
    {
        Fuzz.Report(output, "item bodies",
            ("through the pipeline", () => Fuzz.Run("items", Cases, Fuzz.Cases, c => Check(c, emulator.Direct), () => { })),
            ("over HTTP", () => Fuzz.Run("items over HTTP", Cases, Fuzz.HttpSample, c => Check(c, emulator.Send), emulator.AssertHealthy)));
    }

    private static void Check(ItemCase item, Func<HostileRequest, HostileResponse> send)
    {
        var request = item.Request();
        var response = send(request);
        if (item.Mismatch)
        {
            Verdict.BadRequest(request, response, "partition", subStatus: 1001);
        }
        else
        {
            Verdict.Check(request, response);
        }
    }

    private static Arbitrary<ItemCase> Cases => Arb.From(
        HostileGen.Pick((6, Hostile), (2, Mismatched)),
        c => HostileGen.ShrinkBytes(c.Body).Select(b => c with { Body = b }));

    // The id a replace addresses: the body's id when it is a string a URL can carry.
    private static string PathId(string idJson)
    {
        try
        {
            var id = System.Text.Json.JsonSerializer.Deserialize<string>(idJson);
            return id is { Length: > 0 } && HostileGen.IsValidUtf16(id) ? id : "item-x";
        }
        catch (Exception)
        {
            // Not a string, or one .NET cannot hold: the replace addresses some other id.
            return "item-x";
        }
    }

    private static Gen<string> CleanId => Gen.Choose(0, 2_000).Select(n => "item-" + HostileGen.Number(n));

    private static Gen<string> IdJson =>
        HostileGen.Pick(
            (4, CleanId.Select(id => $"\"{id}\"")),
            (3, HostileGen.JsonString),
            (1, HostileGen.LongText.Select(HostileGen.JsonSafe)),
            (1, HostileGen.JsonValue(1)),
            (1, Gen.Constant(string.Empty)));

    private static Gen<string> ComponentJson =>
        HostileGen.Pick(
            (5, Gen.Elements("\"p0\"", "\"p1\"", "\"t0\"", "\"u1\"")),
            (3, HostileGen.JsonString),
            (2, HostileGen.JsonNumber),
            (1, Gen.Elements("true", "false", "null", "{}", "[]", "{\"a\":1}", "[\"p1\"]")));

    /// <summary>A body with an id, the partition key properties and a few more, then perhaps broken; the header usually matches.</summary>
    private static Gen<ItemCase> Hostile =>
        from operation in Gen.Elements("create", "upsert", "replace")
        from hierarchical in Gen.Elements(false, false, true)
        from id in IdJson
        from components in Gen.ArrayOf(ComponentJson, hierarchical ? 3 : 1)
        from extraCount in HostileGen.Size(4)
        from extra in Gen.ArrayOf(HostileGen.JsonValue(2), extraCount)
        from names in Gen.ArrayOf(Gen.Elements("\"a\"", "\"n\"", "\"_rid\"", "\"_ts\"", "\"_etag\"", "\"_self\"", "\"id\"", "\"pk\"", "\"ttl\"", "\"\""), extraCount)
        from omit in Gen.Choose(0, 6)
        from mutate in Gen.Choose(0, 4)
        from seeds in Gen.ArrayOf(Gen.Choose(0, int.MaxValue), 6)
        from header in HostileGen.Pick((6, Gen.Constant<string?>(null)), (2, PartitionKeyGen.Header.Select(h => (string?)h)), (1, Gen.Constant<string?>(null)))
        from bytes in HostileGen.Pick((12, Gen.Constant<byte[]?>(null)), (1, HostileGen.Bytes.Select(b => (byte[]?)b)))
        let paths = hierarchical ? new[] { "tenant", "user", "session" } : ["pk"]
        let properties = new[] { omit == 0 ? null : "\"id\":" + id }
            .Concat(paths.Select((p, i) => omit == 1 + i ? null : $"\"{p}\":{components[i]}"))
            .Concat(names.Zip(extra, (n, v) => n + ":" + v))
            .Where(p => p is not null)
        let json = "{" + string.Join(",", properties) + "}"
        let text = mutate == 0 ? HostileGen.Mutate(json, seeds) : json
        select new ItemCase(
            operation,
            hierarchical,
            PathId(id),
            bytes ?? Encoding.UTF8.GetBytes(text),
            header ?? (omit is >= 1 and <= 3 && omit <= paths.Length ? "[{}]" : "[" + string.Join(",", components) + "]"),
            false);

    /// <summary>A valid item whose partition key header names another logical partition (or, hierarchical, only a prefix).</summary>
    private static Gen<ItemCase> Mismatched =>
        from operation in Gen.Elements("create", "upsert", "replace")
        from hierarchical in Gen.Elements(false, true)
        from id in CleanId
        from prefix in Gen.Elements(1, 2)
        select hierarchical
            ? new ItemCase(operation, true, id, Encoding.UTF8.GetBytes($"{{\"id\":\"{id}\",\"tenant\":\"t0\",\"user\":\"u0\",\"session\":\"s0\"}}"),
                prefix == 1 ? "[\"t0\"]" : "[\"t0\",\"u0\"]", true)
            : new ItemCase(operation, false, id, Encoding.UTF8.GetBytes($"{{\"id\":\"{id}\",\"pk\":\"p0\"}}"), "[\"p1\"]", true);
}
