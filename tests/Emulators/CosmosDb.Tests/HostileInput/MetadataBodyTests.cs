using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Control-plane bodies from a hostile client: database and container definitions (ids, partition
/// key kinds, paths and versions of every shape, time to live, unique keys, indexing policies,
/// duplicate names), container replaces that try to change the partition key, and offer replaces
/// with throughputs that are zero, negative, fractional, over int.MaxValue or not numbers; with
/// throughput headers now and then. What a case creates it deletes again.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class MetadataBodyTests(HostileEmulator emulator, ITestOutputHelper output)
{
    public sealed record Case(int Kind, byte[] Body, string? Throughput, string? Autopilot, string? IfMatch)
    {
        public HostileRequest Request(HostileEmulator emulator)
        {
            var headers = new List<KeyValuePair<string, string>>();
            if (Throughput is not null)
            {
                headers.Add(new("x-ms-offer-throughput", Throughput));
            }

            if (Autopilot is not null)
            {
                headers.Add(new("x-ms-cosmos-offer-autopilot-settings", Autopilot));
            }

            if (IfMatch is not null)
            {
                headers.Add(new("If-Match", IfMatch));
            }

            return Kind switch
            {
                0 => new HostileRequest("POST", "/dbs", headers, Body),
                1 => new HostileRequest("POST", "/dbs/scratch/colls", headers, Body),
                2 => new HostileRequest("PUT", $"/dbs/fuzz/colls/{HostileEmulator.Offered}", headers, Body),
                _ => new HostileRequest("PUT", $"/offers/{emulator.OfferRid}", headers, Body),
            };
        }

        public override string ToString() => $"kind {Kind}: {HostileRequest.Show(Encoding.UTF8.GetString(Body))} throughput={Throughput} autopilot={Autopilot} if-match={IfMatch}";
    }

    private static Gen<string> Id => HostileGen.Pick((4, Gen.Choose(0, 50).Select(n => $"\"md-{n}\"")), (3, HostileGen.JsonString), (1, HostileGen.JsonValue(1)));

    private static Gen<string> PartitionKey =>
        from paths in HostileGen.Pick(
            (4, Gen.Elements("[\"/pk\"]", "[\"/a\",\"/b\"]", "[\"/a\",\"/b\",\"/c\"]", "[\"/a\",\"/b\",\"/c\",\"/d\"]", "[\"/a\",\"/a\"]", "[]", "[\"pk\"]", "[\"/\"]", "[\"//\"]", "[\"/a/\"]", "[1]", "\"/pk\"", "null")),
            (1, Gen.Choose(1, 3).SelectMany(n => Gen.ArrayOf(HostileGen.Text.Select(t => HostileGen.JsonSafe("/" + t)), n)).Select(p => "[" + string.Join(",", p) + "]")))
        from kind in Gen.Elements("\"Hash\"", "\"MultiHash\"", "\"Range\"", "\"hash\"", "1", "null", "\"\"")
        from version in Gen.Elements("1", "2", "3", "0", "-1", "1.5", "1e400", "\"2\"", "null", "2147483648")
        from shape in Gen.Choose(0, 4)
        select shape switch
        {
            0 => $"{{\"paths\":{paths}}}",
            1 => $"{{\"paths\":{paths},\"kind\":{kind}}}",
            2 => "[]",
            _ => $"{{\"paths\":{paths},\"kind\":{kind},\"version\":{version}}}",
        };

    private static Gen<string> Extra =>
        HostileGen.Pick(
            (4, Gen.Constant(string.Empty)),
            (1, Gen.Elements(",\"defaultTtl\":100", ",\"defaultTtl\":null", ",\"defaultTtl\":-1", ",\"uniqueKeyPolicy\":{\"uniqueKeys\":[{\"paths\":[\"/a\"]}]}",
                ",\"uniqueKeyPolicy\":{\"uniqueKeys\":[]}", ",\"uniqueKeyPolicy\":1", ",\"changeFeedPolicy\":{}", ",\"_rid\":\"x\"", ",\"id\":\"dup\"")),
            (1, HostileGen.JsonValue(3).Select(v => $",\"indexingPolicy\":{v}")),
            (1, from name in HostileGen.JsonString from v in HostileGen.JsonValue(2) select $",{name}:{v}"));

    private static Gen<string> Throughput => HostileGen.Pick(
        (3, Gen.Elements("400", "1000000", "0", "-1", "1.5", "2147483647", "2147483648", "1e400", "\"400\"", "null", "[]")),
        (1, HostileGen.JsonNumber));

    private static Gen<string> Valid(int kind) => kind switch
    {
        0 => from id in Id from extra in Extra select $"{{\"id\":{id}{extra}}}",
        1 or 2 => from id in kind == 2 ? HostileGen.Pick((4, Gen.Constant($"\"{HostileEmulator.Offered}\"")), (1, Id)) : Id
                  from key in PartitionKey
                  from extra in Extra
                  select $"{{\"id\":{id},\"partitionKey\":{key}{extra}}}",
        _ => from throughput in Throughput
             from shape in Gen.Choose(0, 4)
             select shape switch
             {
                 0 => $"{{\"content\":{{\"offerThroughput\":{throughput}}}}}",
                 1 => $"{{\"content\":{{\"offerAutopilotSettings\":{{\"maxThroughput\":{throughput}}}}}}}",
                 2 => $"{{\"content\":{throughput}}}",
                 3 => $"{{\"id\":\"x\",\"offerVersion\":\"V2\",\"content\":{{\"offerThroughput\":{throughput},\"offerAutopilotSettings\":null}}}}",
                 _ => $"{{\"content\":{{\"offerAutopilotSettings\":{throughput},\"offerThroughput\":1000000}}}}",
             },
    };

    private static Arbitrary<Case> Cases => Arb.From(
        from kind in Gen.Choose(0, 3)
        from body in HostileGen.Body(Valid(kind))
        from throughput in HostileGen.Pick((6, Gen.Constant<string?>(null)), (1, HeaderGen.ValueFor("x-ms-offer-throughput").Select(v => (string?)v)))
        from autopilot in HostileGen.Pick((8, Gen.Constant<string?>(null)), (1, HeaderGen.ValueFor("x-ms-cosmos-offer-autopilot-settings").Select(v => (string?)v)))
        from ifMatch in HostileGen.Pick((8, Gen.Constant<string?>(null)), (1, HeaderGen.ValueFor("If-Match").Select(v => (string?)v)))
        select new Case(kind, body, throughput, autopilot, ifMatch),
        c => HostileGen.ShrinkBytes(c.Body).Select(b => c with { Body = b }));

    [Fact]
    public void Database_container_and_offer_bodies_are_applied_or_refused_with_a_400()
    {
        Fuzz.Report(output, "databases, containers and offers",
            ("through the pipeline", () => Fuzz.Run("metadata", Cases, Fuzz.Cases, c => Check(c, emulator.Direct), emulator.EnsureScratch)),
            ("over HTTP", () => Fuzz.Run("metadata over HTTP", Cases, Fuzz.HttpSample, c => Check(c, emulator.Send), () =>
            {
                emulator.EnsureScratch();
                emulator.AssertHealthy();
            })));
    }

    [Fact]
    public void Autopilot_settings_with_an_escaped_lone_surrogate_in_a_name_are_refused_with_a_400()
    {
        var input = new Case(0, System.Text.Encoding.UTF8.GetBytes("{\"id\":\"d\"}"), null, "{\"\\uD800x\":1}", null);

        var response = Verdict.Check(input.Request(emulator), emulator.Direct(input.Request(emulator)));

        Assert.Equal(400, response.Status);
        Assert.Contains("x-ms-cosmos-offer-autopilot-settings", response.ErrorMessage(), StringComparison.Ordinal);
    }

    private void Check(Case input, Func<HostileRequest, HostileResponse> send)
    {
        var request = input.Request(emulator);
        var response = Verdict.Check(request, send(request));
        if (response.Status == 201)
        {
            // Created: delete it again, by its RID-based link (any id can be addressed that way), so the account does not fill up.
            var root = System.Text.Json.JsonDocument.Parse(response.Body).RootElement;
            var self = root.GetProperty("_self").GetString()!;
            if (input.Kind == 0)
            {
                emulator.KnowDatabaseRid(root.GetProperty("_rid").GetString()!);
            }

            var deleted = send(new HostileRequest("DELETE", "/" + self.TrimEnd('/'), []));
            HostileEmulator.Expect(204, deleted);
        }
    }
}
