using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Patch bodies from a hostile client, against the seed items: both forms (<c>{"operations": […],
/// "condition": …}</c> and the bare array), unknown operations, paths into nothing, into arrays past
/// their end, onto system properties, <c>incr</c> with strings and with values that overflow, moves
/// from and to odd places, conditions that are not SQL, values no double holds, broken JSON.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class PatchBodyTests(HostileEmulator emulator, ITestOutputHelper output)
{
    public sealed record Case(bool Hierarchical, int Seed, bool WrongKey, byte[] Body)
    {
        public HostileRequest Request()
        {
            var link = Hierarchical ? HostileEmulator.HierarchicalLink : HostileEmulator.ItemsLink;
            var key = WrongKey ? "[\"nope\"]"
                : Hierarchical ? $"[\"t{Seed % 2}\",\"u{Seed % 3}\",\"s{Seed}\"]"
                : $"[\"p{Seed % 3}\"]";
            return new HostileRequest("PATCH", $"/{link}/docs/seed-{Seed}", [new("x-ms-documentdb-partitionkey", key)], Body);
        }

        public override string ToString() => Request().ToString();
    }

    private static readonly string[] Paths =
    [
        "/a", "/n", "/s", "/arr", "/arr/0", "/arr/1", "/arr/-", "/arr/3", "/arr/99", "/arr/2147483648", "/arr/-1", "/arr/01", "/obj/x",
        "/obj/y", "/obj/x/deeper", "/missing/child", "/", "", "a", "//", "/~0", "/~1", "/a~", "/pk", "/tenant", "/id", "/_rid", "/_etag",
        "/_ts", "/_self", "/_attachments", "/_lsn", "/arr/0/x", "/n/0", "/s/0",
    ];

    private static Gen<string> Path =>
        HostileGen.Pick(
            (6, Gen.Elements(Paths)),
            (1, HostileGen.Text.Select(t => "/" + t)),
            (1, Gen.Elements(5, 64, 1_000).Select(n => HostileGen.Repeat("/a", n))));

    private static Gen<string> Operation =>
        from op in HostileGen.Pick(
            (6, Gen.Elements("\"add\"", "\"set\"", "\"replace\"", "\"remove\"", "\"incr\"", "\"move\"")),
            (1, Gen.Elements("\"ADD\"", "\"Incr\"", "\"test\"", "\"copy\"", "\"\"", "1", "null")))
        from path in Path
        from value in HostileGen.Pick((4, HostileGen.JsonValue(2)), (2, HostileGen.JsonNumber), (1, Gen.Constant("1.7976931348623157e308")))
        from source in Path
        from shape in Gen.Choose(0, 5)
        select shape switch
        {
            0 => $"{{\"op\":{op},\"path\":{HostileGen.JsonSafe(path)}}}",
            1 => $"{{\"op\":{op},\"path\":{HostileGen.JsonSafe(path)},\"value\":{value},\"from\":{HostileGen.JsonSafe(source)}}}",
            2 => $"{{\"op\":{op},\"value\":{value}}}",
            _ => $"{{\"op\":{op},\"path\":{HostileGen.JsonSafe(path)},\"value\":{value}}}",
        };

    private static Gen<string> Valid =>
        from count in HostileGen.Pick((8, Gen.Choose(1, 4)), (1, Gen.Elements(0, 10, 11, 100)))
        from operations in Gen.ArrayOf(Operation, count)
        from form in Gen.Choose(0, 3)
        from condition in HostileGen.Pick(
            (3, Gen.Elements("FROM c WHERE c.n >= 0", "from c where true", "FROM c WHERE c.s = 'x'", "WHERE", "FROM c WHERE @p = 1", "")),
            (2, SqlGen.Query(supportedOnly: false).Select(q => q.Length > 7 ? q[7..] : q)))
        let list = "[" + string.Join(",", operations) + "]"
        select form switch
        {
            0 => list,
            1 => $"{{\"operations\":{list}}}",
            2 => $"{{\"operations\":{list},\"condition\":{HostileGen.JsonSafe(condition)}}}",
            _ => $"{{\"operations\":{list},\"condition\":{HostileGen.JsonSafe(condition)},\"extra\":1}}",
        };

    private static Arbitrary<Case> Cases => Arb.From(
        from hierarchical in Gen.Elements(false, false, true)
        from seed in Gen.Choose(0, 9)
        from wrongKey in HostileGen.Pick((9, Gen.Constant(false)), (1, Gen.Constant(true)))
        from body in HostileGen.Body(Valid)
        select new Case(hierarchical, seed, wrongKey, body),
        c => HostileGen.ShrinkBytes(c.Body).Select(b => c with { Body = b }));

    [Fact]
    public void Patch_bodies_are_applied_or_refused_with_a_400()
    {
        // The seeds are put back after every batch so that patches do not pile up on them.
        Fuzz.Report(output, "patch bodies",
            ("through the pipeline", () => Fuzz.Run("patch", Cases, Fuzz.Cases, c => Verdict.Check(c.Request(), emulator.Direct(c.Request())), emulator.ResetSeeds)),
            ("over HTTP", () => Fuzz.Run("patch over HTTP", Cases, Fuzz.HttpSample, c => Verdict.Check(c.Request(), emulator.Send(c.Request())), () =>
            {
                emulator.ResetSeeds();
                emulator.AssertHealthy();
            })));
    }
}
