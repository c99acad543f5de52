using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Query request bodies from a hostile client: <c>{"query", "parameters", "resumeFilter"}</c> with
/// parameters that are missing their '@', named twice, valued with numbers no double holds, strings
/// with unpaired surrogates, deep arrays; resume filters of every shape; broken JSON — sent as a
/// partition-scoped query, a cross-partition query, a query-plan request and a metadata query (over
/// databases, containers and offers), with hostile page sizes and continuations now and then.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class QueryBodyTests(HostileEmulator emulator, ITestOutputHelper output)
{
    public sealed record Case(int Route, byte[] Body, string? MaxItemCount, string? Continuation)
    {
        public HostileRequest Request()
        {
            var headers = new List<KeyValuePair<string, string>> { new("x-ms-documentdb-isquery", "True"), new("Content-Type", "application/query+json") };
            var path = $"/{HostileEmulator.ItemsLink}/docs";
            switch (Route)
            {
                case 0:
                    headers.Add(new("x-ms-documentdb-partitionkey", "[\"p1\"]"));
                    break;
                case 1:
                    headers.Add(new("x-ms-documentdb-query-enablecrosspartition", "True"));
                    break;
                case 2:
                    headers.Add(new("x-ms-cosmos-is-query-plan-request", "True"));
                    break;
                case 3:
                    headers.Add(new("x-ms-documentdb-partitionkeyrangeid", "1"));
                    break;
                case 4:
                    path = "/dbs";
                    break;
                case 5:
                    path = "/dbs/fuzz/colls";
                    break;
                default:
                    path = "/offers";
                    break;
            }

            if (MaxItemCount is not null)
            {
                headers.Add(new("x-ms-max-item-count", MaxItemCount));
            }

            if (Continuation is not null)
            {
                headers.Add(new("x-ms-continuation", Continuation));
            }

            return new HostileRequest("POST", path, headers, Body);
        }

        public override string ToString() => Request().ToString();
    }

    private static Gen<string> Parameter =>
        from name in HostileGen.Pick(
            (6, Gen.Elements("\"@p0\"", "\"@n\"", "\"@s\"", "\"@i\"", "\"@arr\"")),
            (1, Gen.Elements("\"p0\"", "\"@\"", "\"\"", "1", "null", "\"@p0 \"")),
            (1, HostileGen.JsonString))
        from value in HostileGen.Pick((5, HostileGen.JsonValue(2)), (2, HostileGen.JsonNumber), (1, HostileGen.DeepJson))
        from shape in Gen.Choose(0, 4)
        select shape switch
        {
            0 => $"{{\"name\":{name}}}",
            1 => $"{{\"value\":{value}}}",
            2 => value,
            _ => $"{{\"name\":{name},\"value\":{value}}}",
        };

    private static Gen<string> Valid =>
        from query in HostileGen.Pick(
            (4, Gen.Elements(
                "SELECT * FROM c WHERE c.n = @p0", "SELECT VALUE @s FROM c", "SELECT TOP @n * FROM c", "SELECT * FROM c OFFSET @i LIMIT @n",
                "SELECT * FROM c WHERE c.pk = @p0", "SELECT * FROM c WHERE c.pk IN (@p0, @s)", "SELECT * FROM c ORDER BY c.n",
                "SELECT VALUE COUNT(1) FROM c", "SELECT c.s FROM c WHERE ARRAY_CONTAINS(@arr, c.n)", "SELECT * FROM root r")),
            (2, SqlGen.Query(supportedOnly: true)))
        from count in HostileGen.Size(4)
        from parameters in Gen.ArrayOf(Parameter, count)
        from parametersForm in Gen.Choose(0, 4)
        from resume in HostileGen.Pick(
            (4, Gen.Constant(string.Empty)),
            (2, HostileGen.JsonValue(2).Select(v => $",\"resumeFilter\":{{\"value\":[{v}],\"exclude\":true}}")),
            (1, HostileGen.JsonValue(2).Select(v => $",\"resumeFilter\":{v}")))
        select "{\"query\":" + HostileGen.JsonSafe(query)
            + parametersForm switch
            {
                0 => string.Empty,
                1 => ",\"parameters\":null",
                2 => ",\"parameters\":{}",
                _ => ",\"parameters\":[" + string.Join(",", parameters) + "]",
            }
            + resume + "}";

    private static Gen<string?> Continuation => HostileGen.Pick(
        (8, Gen.Constant<string?>(null)),
        (2, HeaderGen.ContinuationToken.Select(t => (string?)t)));

    private static Gen<string?> MaxItemCount => HostileGen.Pick(
        (6, Gen.Constant<string?>(null)),
        (2, Gen.Elements<string?>("1", "2", "-1", "100")),
        (1, Gen.Elements<string?>("0", "-2", "2147483648", "x", "")));

    private static Arbitrary<Case> Cases => Arb.From(
        from route in Gen.Choose(0, 6)
        from body in HostileGen.Body(Valid)
        from max in MaxItemCount
        from continuation in Continuation
        select new Case(route, body, max, continuation),
        c => HostileGen.ShrinkBytes(c.Body).Select(b => c with { Body = b }));

    [Fact]
    public void Query_bodies_are_answered_or_refused_with_a_400()
    {
        Fuzz.Report(output, "query bodies and parameters",
            ("through the pipeline", () => Fuzz.Run("query bodies", Cases, Fuzz.Cases, c => Verdict.Check(c.Request(), emulator.Direct(c.Request())), () => { })),
            ("over HTTP", () => Fuzz.Run("query bodies over HTTP", Cases, Fuzz.HttpSample, c => Verdict.Check(c.Request(), emulator.Send(c.Request())), emulator.AssertHealthy)));
    }
}
