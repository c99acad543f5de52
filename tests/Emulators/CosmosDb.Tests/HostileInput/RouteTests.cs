using System.Text;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Request paths from a hostile client: resource names and ids with characters ids may not hold,
/// percent-encoded slashes, invalid UTF-8 escapes, names far over the 255-character limit, RID-based
/// addresses, unknown and unsupported resource types, too many or too few segments, odd methods.
/// Every request is signed for the resource the emulator will parse from its path, so that it gets
/// past authorisation and reaches routing. Whatever a path names, the answer is a 4xx in the
/// service's error shape or a success.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class RouteTests(HostileEmulator emulator, ITestOutputHelper output)
{
    public sealed record Case(string Method, string[] Segments, bool WithBody, bool Escape)
    {
        public HostileRequest Request()
        {
            var path = "/" + string.Join("/", Segments.Select(s => Escape ? Uri.EscapeDataString(s) : s));
            return new HostileRequest(Method, path, [new("x-ms-documentdb-partitionkey", "[\"p1\"]")],
                WithBody ? Encoding.UTF8.GetBytes("{\"id\":\"route\",\"pk\":\"p1\"}") : null);
        }

        public override string ToString() => Request().ToString();
    }

    private static readonly string[] Types = ["dbs", "colls", "docs", "pkranges", "offers", "sprocs", "udfs", "triggers", "users", "permissions", "attachments", "conflicts", "addresses", "media", "partitionkeyrangeids", "DBS", "Docs", "_emulator"];

    // Readable pieces for raw (unescaped) paths: what a URL can carry as it is.
    private static readonly string[] RawPieces = ["%FF", "%ED%A0%80", "%C0%AF", "%00", "%2F", "%2f", "%252F", "%", "%G0", "a%20b", ";x=1", "a+b", "~", "!$&'()*+,=", "@", ":"];

    // Dot segments are resolved by the client before sending, so a mutating request could land on a
    // resource the other targets rely on; they go with reads only.
    private static readonly string[] DotPieces = [".", "..", "%2e%2e", "%2E"];

    private static Gen<string> Segment(bool dots) =>
        HostileGen.Pick(
            (4, HostileGen.Word.Where(HostileGen.IsValidUtf16)),
            (2, HostileGen.LongText.Where(HostileGen.IsValidUtf16)),
            (1, Gen.Elements(256, 1_000, 4_000).Select(n => new string('a', n))),
            (1, Gen.Elements("", " ", "seed-1", "route", "p1")),
            (dots ? 1 : 0, Gen.Elements(DotPieces)));

    private static Gen<string[]> Segments(HostileEmulator emulator, bool read) =>
        HostileGen.Pick(
            (3, Segment(read).Select(s => new[] { "dbs", "fuzz", "colls", "items", "docs", s })),
            (2, Segment(read).Select(s => new[] { "dbs", emulator.DatabaseRid, "colls", emulator.ItemsRid, "docs", s })),
            (2, Segment(read).Select(s => new[] { "dbs", HostileEmulator.Scratch, "colls", s })),
            (1, Segment(read).Select(s => new[] { "dbs", s })),
            // Empty segments collapse, so ".../items//" names the container itself: with reads only.
            (1, from a in Segment(read) from b in Segment(read) where read || a.Length + b.Length > 0 select new[] { "dbs", "fuzz", "colls", "items", a, b }),
            (1, from a in Segment(read) from b in Segment(read) select new[] { "offers", a, b }),
            (1, Segment(read).Select(s => new[] { "offers", s })),
            (2, from count in Gen.Choose(0, 12)
                from parts in Gen.ArrayOf(HostileGen.Pick((2, Gen.Elements(Types)), (2, Segment(read)), (read ? 1 : 0, Gen.Elements(emulator.DatabaseRid, emulator.ItemsRid, "scratch"))), count)
                select parts),
            (1, Gen.Elements(20, 100, 400).Select(n => Enumerable.Repeat("a", n).ToArray())));

    private static Arbitrary<Case> Cases(HostileEmulator emulator) => Arb.From(
        from method in HostileGen.Pick((4, Gen.Elements("GET", "HEAD")), (4, Gen.Elements("POST", "PUT", "DELETE", "PATCH")), (1, Gen.Elements("OPTIONS", "TRACE", "PROPFIND", "get", "MERGE")))
        let read = method is "GET" or "HEAD" or "OPTIONS" or "PROPFIND"
        from raw in HostileGen.Pick((5, Gen.Constant(false)), (1, Gen.Constant(true)))
        from segments in raw
            ? Gen.Choose(1, 6).SelectMany(n => Gen.ArrayOf(HostileGen.Pick((2, Gen.Elements(Types)), (2, Gen.Elements(RawPieces)), (read ? 1 : 0, Gen.Elements(DotPieces))), n))
            : Segments(emulator, read)
        from body in Gen.Elements(true, false)
        select new Case(method, segments, body, Escape: !raw),
        c => c.Segments.Select((_, i) => c with { Segments = [.. c.Segments.Where((_, j) => j != i)] })
            .Concat(c.Segments.SelectMany((s, i) => HostileGen.ShrinkText(s).Take(8).Select(v => c with { Segments = [.. c.Segments.Select((x, j) => j == i ? v : x)] }))));

    [Fact]
    public void Request_paths_are_routed_or_refused_with_a_4xx()
    {
        Fuzz.Report(output, "routes and resource ids", ("over HTTP", () => Fuzz.Run("routes", Cases(emulator), Fuzz.Cases, c => Verdict.Check(c.Request(), emulator.Send(c.Request())), () =>
        {
            emulator.EnsureScratch();
            emulator.AssertHealthy();
        })));
    }
}
