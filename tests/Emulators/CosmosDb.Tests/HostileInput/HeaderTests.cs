using System.Globalization;
using System.Text;
using System.Text.Json;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>Values for the protocol's headers: near-valid forms of each, and garbage.</summary>
internal static class HeaderGen
{
    private static Gen<string> Base64Garbage =>
        from bytes in Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b))
        from url in Gen.Elements(true, false)
        select url ? System.Buffers.Text.Base64Url.EncodeToString(bytes) : Convert.ToBase64String(bytes);

    private static string Base64Url(string json) => System.Buffers.Text.Base64Url.EncodeToString(Encoding.UTF8.GetBytes(json));

    /// <summary>Continuations shaped like the emulator's own (per partition, and "xp." across partitions) with hostile contents.</summary>
    public static Gen<string> ContinuationToken =>
        HostileGen.Pick(
            (3, from s in HostileGen.JsonValue(1) from n in HostileGen.JsonValue(1) from k in HostileGen.JsonValue(1)
                select Base64Url($"{{\"s\":{s},\"n\":{n},\"k\":{k}}}")),
            (2, from s in Gen.Elements("0", "-1", "9223372036854775807", "1e400", "1.5") from k in HostileGen.Pick((2, Gen.Constant("null")), (3, HostileGen.JsonValue(2).Select(HostileGen.JsonSafe)), (1, Gen.Constant("\"undefined\"")))
                select Base64Url($"{{\"s\":{s},\"n\":{s},\"k\":{k}}}")),
            (2, from range in Gen.Elements("\"0\"", "\"3\"", "\"4\"", "\"-1\"", "1", "null") from min in Gen.Elements("\"\"", "\"00\"", "null", "\"FF\"") from token in HostileGen.JsonValue(1)
                select "xp." + Base64Url($"{{\"range\":{range},\"min\":{min},\"token\":{token}}}")),
            (1, Base64Garbage.Select(g => "xp." + g)),
            (2, Base64Garbage),
            (1, HostileGen.JsonValue(2)),
            (1, HostileGen.Text));

    /// <summary>A near-valid or hostile value for the named header.</summary>
    public static Gen<string> ValueFor(string name) => name switch
    {
        "x-ms-documentdb-partitionkey" => PartitionKeyGen.Header,
        "x-ms-documentdb-partitionkeyrangeid" => HostileGen.Pick((3, Gen.Elements("0", "1", "3", "4", "-1", "99999999999", "0,1", " 0", "", "abc", "1e1", "١")), (1, HostileGen.Text)),
        "x-ms-continuation" => ContinuationToken,
        "x-ms-max-item-count" => Gen.Elements("-1", "0", "1", "-2", "2147483647", "2147483648", "1e3", " 5", "5 ", "+5", "abc", "", "0x10", "١"),
        "If-Match" or "If-None-Match" => HostileGen.Pick((3, Gen.Elements("*", "\"0\"", "\"1\"", "\"x\"", "", "W/\"x\"", "\"", "*,*", "99999999999999999999")), (1, HostileGen.Text)),
        "A-IM" => Gen.Elements("Incremental feed", "Full-Fidelity Feed", "incremental FEED", "", "Incremental", " Incremental feed ", "*"),
        "If-Modified-Since" => Gen.Elements(
            DateTime.UtcNow.ToString("r", CultureInfo.InvariantCulture), "Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
            "0", "yesterday", "", "2026-13-45T99:99:99Z", "Sun, 06 Nov 1994 08:49:37 +9999"),
        "x-ms-start-epk" or "x-ms-end-epk" => HostileGen.Pick((3, Gen.Elements("", "00", "FF", "ZZ", "05C1", new string('F', 100), "0F", "\\u0000")), (1, HostileGen.Text)),
        "x-ms-documentdb-query-enablecrosspartition" or "x-ms-documentdb-isquery" or "x-ms-documentdb-is-upsert" or "x-ms-cosmos-is-batch-request"
            or "x-ms-cosmos-batch-atomic" or "x-ms-cosmos-is-query-plan-request" => Gen.Elements("True", "true", "False", "1", "yes", "", "TRUE "),
        "x-ms-offer-throughput" => Gen.Elements("400", "0", "-1", "2147483647", "2147483648", "1e5", "abc", "", "400.5"),
        "x-ms-cosmos-offer-autopilot-settings" => HostileGen.Pick((2, Gen.Elements("{\"maxThroughput\":4000}", "{\"maxThroughput\":0}", "{\"maxThroughput\":1e400}", "{}", "null")), (1, HostileGen.JsonText(HostileGen.JsonValue(2)))),
        "x-ms-indexing-directive" => Gen.Elements("Default", "Include", "Exclude", "exclude", "", "None"),
        "Prefer" => Gen.Elements("return=minimal", "return=representation", "", "return=minimal; return=minimal"),
        "x-ms-date" => Gen.Elements(
            DateTime.UtcNow.AddMinutes(-20).ToString("r", CultureInfo.InvariantCulture), DateTime.UtcNow.AddDays(1).ToString("r", CultureInfo.InvariantCulture),
            "", "garbage", "Mon, 01 Jan 0001 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"),
        "authorization" => HostileGen.Pick(
            (2, Gen.Elements("", "type=master", "type=master&ver=1.0", "type=master&ver=1.0&sig=", "type=resource&ver=1.0&sig=abc", "%ZZ", "&&&&", "type%3Dmaster%26sig%3D")),
            (2, Base64Garbage.Select(s => Uri.EscapeDataString("type=master&ver=1.0&sig=" + s))),
            (1, HostileGen.Text)),
        "x-ms-consistency-level" => Gen.Elements("Strong", "Eventual", "Session", "garbage", ""),
        "x-ms-session-token" => HostileGen.Pick((1, Gen.Elements("0:1#2", "", "-1", "0:-1#99999999999999999999")), (1, HostileGen.Text)),
        _ => HostileGen.Pick((2, HostileGen.LongText), (1, HostileGen.JsonValue(2))),
    };

    public static readonly string[] Names =
    [
        "x-ms-documentdb-partitionkey", "x-ms-documentdb-partitionkeyrangeid", "x-ms-continuation", "x-ms-max-item-count", "If-Match",
        "If-None-Match", "A-IM", "If-Modified-Since", "x-ms-start-epk", "x-ms-end-epk", "x-ms-documentdb-query-enablecrosspartition",
        "x-ms-documentdb-isquery", "x-ms-documentdb-is-upsert", "x-ms-cosmos-is-batch-request", "x-ms-cosmos-batch-atomic",
        "x-ms-cosmos-is-query-plan-request", "x-ms-offer-throughput", "x-ms-cosmos-offer-autopilot-settings", "x-ms-indexing-directive",
        "Prefer", "x-ms-date", "authorization", "x-ms-consistency-level", "x-ms-session-token", "x-ms-activity-id",
        "x-ms-cosmos-correlated-activityid", "x-ms-version", "Content-Type", "x-ms-random-header",
    ];
}

/// <summary>
/// Protocol headers from a hostile client, on every kind of request the emulator serves (point
/// operations, queries, feeds, the change feed, partition key ranges, batches, containers, offers):
/// partition keys, range ids, continuations, page sizes, preconditions, change feed positions,
/// consistency, throughput, flags, and the signature and its date. A bad signature or date is 401,
/// a bad page size or continuation 400 naming it, as in the service.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class HeaderTests(HostileEmulator emulator, ITestOutputHelper output)
{
    private const string Link = HostileEmulator.ItemsLink;

    public sealed record Case(int Scenario, (string Name, string Value)[] Headers)
    {
        public HostileRequest Request(HostileEmulator emulator)
        {
            var key = new KeyValuePair<string, string>("x-ms-documentdb-partitionkey", "[\"p1\"]");
            var item = Encoding.UTF8.GetBytes($"{{\"id\":\"hdr-{Scenario % 7}\",\"pk\":\"p1\"}}");
            var query = HostileEmulator.Json(new { query = "SELECT * FROM c WHERE c.n >= @n", parameters = new[] { new { name = "@n", value = 0 } } });
            var isQuery = new KeyValuePair<string, string>("x-ms-documentdb-isquery", "True");
            var basic = (Scenario % 13) switch
            {
                0 => new HostileRequest("GET", $"/{Link}/docs/seed-1", [key]),
                1 => new HostileRequest("POST", $"/{Link}/docs", [key, new("x-ms-documentdb-is-upsert", "True")], item),
                2 => new HostileRequest("POST", $"/{Link}/docs", [key, isQuery], query),
                3 => new HostileRequest("POST", $"/{Link}/docs", [isQuery, new("x-ms-documentdb-query-enablecrosspartition", "True")], query),
                4 => new HostileRequest("GET", $"/{Link}/docs", [new("x-ms-documentdb-partitionkeyrangeid", "1")]),
                5 => new HostileRequest("GET", $"/{Link}/docs", [new("A-IM", "Incremental feed"), new("x-ms-documentdb-partitionkeyrangeid", "0")]),
                6 => new HostileRequest("GET", $"/{Link}/pkranges", []),
                7 => new HostileRequest("POST", $"/{Link}/docs", [key, new("x-ms-cosmos-is-batch-request", "True"), new("x-ms-cosmos-batch-atomic", "True")],
                    Encoding.UTF8.GetBytes("[{\"operationType\":\"Read\",\"id\":\"seed-1\"}]")),
                8 => new HostileRequest("PUT", $"/{Link}/docs/seed-4", [key], Encoding.UTF8.GetBytes("{\"id\":\"seed-4\",\"pk\":\"p1\",\"n\":4}")),
                9 => new HostileRequest("POST", "/dbs/scratch/colls", [],
                    Encoding.UTF8.GetBytes($"{{\"id\":\"hdr-{Scenario % 5}\",\"partitionKey\":{{\"paths\":[\"/pk\"],\"kind\":\"Hash\"}}}}")),
                10 => new HostileRequest("GET", $"/offers/{emulator.OfferRid}", []),
                11 => new HostileRequest("DELETE", $"/{Link}/docs/hdr-{Scenario % 7}", [key]),
                _ => new HostileRequest("PATCH", $"/{Link}/docs/seed-7", [key], Encoding.UTF8.GetBytes("{\"operations\":[{\"op\":\"incr\",\"path\":\"/n\",\"value\":1}]}")),
            };
            var headers = basic.Headers.ToList();
            var sign = true;
            foreach (var (name, value) in Headers)
            {
                headers.RemoveAll(h => string.Equals(h.Key, name, StringComparison.OrdinalIgnoreCase));
                if (name == "-authorization")
                {
                    sign = false;
                }
                else
                {
                    headers.Add(new(name, value));
                }
            }

            return basic with { Headers = headers, Sign = sign };
        }

        public override string ToString() => $"scenario {Scenario % 13}: {string.Join("; ", Headers.Select(h => $"{h.Name}: {HostileRequest.Show(h.Value)}"))}";
    }

    private static Gen<(string, string)> Header =>
        from name in HostileGen.Pick((12, Gen.Elements(HeaderGen.Names)), (1, HostileGen.Word.Select(w => "x-ms-" + new string([.. w.Where(char.IsAsciiLetterOrDigit)]))))
        from value in HeaderGen.ValueFor(name)
        select (name, value);

    private static Arbitrary<Case> Cases => Arb.From(
        from scenario in Gen.Choose(0, 1_000)
        from count in Gen.Choose(1, 4)
        from headers in Gen.ArrayOf(Header, count)
        from unsigned in HostileGen.Pick((15, Gen.Constant(false)), (1, Gen.Constant(true)))
        select new Case(scenario, unsigned ? [.. headers, ("-authorization", string.Empty)] : headers),
        c => c.Headers.Select((_, i) => c with { Headers = [.. c.Headers.Where((_, j) => j != i)] })
            .Concat(c.Headers.SelectMany((h, i) => HostileGen.ShrinkText(h.Value).Take(8).Select(v => c with { Headers = [.. c.Headers.Select((x, j) => j == i ? (x.Name, v) : x)] }))));

    [Fact]
    public void Protocol_headers_are_honoured_or_refused_with_a_4xx()
    {
        Fuzz.Report(output, "protocol headers", ("over HTTP", () => Fuzz.Run("headers", Cases, Fuzz.Cases, Check, () =>
        {
            emulator.ResetSeeds();
            emulator.AssertHealthy();
        })));
    }

    private void Check(Case input)
    {
        var request = input.Request(emulator);
        var response = Verdict.Check(request, emulator.Send(request));
        if (input.Headers is not [var (name, value)])
        {
            return;
        }

        // One header changed: where the service answers that header's problem with a specific status, so must the emulator.
        var scenario = input.Scenario % 13;
        if (name is "authorization" or "x-ms-date" && response.Status != 401)
        {
            throw new HostileInputException($"{request}: a request with a forged signature or a bad date was answered {response}, not 401.");
        }

        if (name == "x-ms-max-item-count" && scenario is 2 or 3 or 4
            // HTTP drops the whitespace around a header value on the way.
            && !(int.TryParse(value.Trim(), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var size) && (size > 0 || size == -1)))
        {
            Verdict.BadRequest(request, response, "x-ms-max-item-count");
        }

        if (name == "x-ms-continuation" && scenario == 2 && IsGarbage(value))
        {
            Verdict.BadRequest(request, response, "continuation");
        }
    }

    // Not a token the emulator could have issued for a partition-scoped query.
    private static bool IsGarbage(string token)
    {
        try
        {
            using var document = JsonDocument.Parse(System.Buffers.Text.Base64Url.DecodeFromChars(token));
            return !(document.RootElement.ValueKind == JsonValueKind.Object
                && document.RootElement.TryGetProperty("s", out var s) && s.ValueKind == JsonValueKind.Number && s.TryGetInt64(out _)
                && document.RootElement.TryGetProperty("n", out var n) && n.ValueKind == JsonValueKind.Number && n.TryGetInt64(out var passed) && passed >= 0);
        }
        catch (Exception e) when (e is FormatException or JsonException or ArgumentException)
        {
            return true;
        }
    }
}
