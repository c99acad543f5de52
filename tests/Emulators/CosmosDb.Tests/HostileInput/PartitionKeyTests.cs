using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Gateway;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>Partition key header values (<c>x-ms-documentdb-partitionkey</c>), the form the SDKs send and worse.</summary>
internal static class PartitionKeyGen
{
    private static Gen<string> Component =>
        HostileGen.Pick(
            (4, Gen.Elements("\"p1\"", "\"t0\"", "\"u1\"", "\"s1\"", "\"\"")),
            (3, HostileGen.JsonString),
            (3, HostileGen.JsonNumber),
            (1, Gen.Elements(HostileGen.InvalidJsonNumbers)),
            (2, Gen.Elements("true", "false", "null", "{}", "[]", "{\"a\":1}", "[\"p1\"]", "[[]]", "{}{}")));

    /// <summary>A JSON array of zero to five components, now and then broken, or not an array at all.</summary>
    public static Gen<string> Header =>
        HostileGen.Pick(
            (8, HostileGen.Size(5).SelectMany(n => Gen.ArrayOf(Component, n)).Select(c => "[" + string.Join(",", c) + "]")),
            (3, HostileGen.Mutated(Gen.ArrayOf(Component, 3).Select(c => "[" + string.Join(",", c) + "]"))),
            (1, Component),
            (1, HostileGen.DeepJson),
            (1, HostileGen.LongText.Select(t => "[" + HostileGen.JsonSafe(t) + "]")),
            (1, HostileGen.Text));
}

/// <summary>
/// Partition key values from a hostile client, for a hash container (hash versions 1 and 2) and a
/// hierarchical one: strings with unpaired surrogates or over 100 characters, numbers no double holds,
/// objects and arrays, too few or too many components, broken JSON. The bulk goes through the header
/// parser and the hashing directly; a sample reads an item over HTTP with the header. A key with
/// fewer or more components than the container's paths is 400 with sub-status 1001, as the service
/// answers it.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class PartitionKeyTests(HostileEmulator emulator, ITestOutputHelper output)
{
    private static readonly PartitionKeyDefinition[] Definitions =
    [
        PartitionKeyDefinition.Hash("/pk", 1),
        PartitionKeyDefinition.Hash("/pk", 2),
        new(["/tenant", "/user", "/session"], hierarchical: true, version: 2),
    ];

    private static readonly PartitionLayout[] Layouts = [PartitionLayout.Create(4, 1), PartitionLayout.Create(4, 2), PartitionLayout.Create(4, 2)];

    public sealed record Case(string Header, bool Hierarchical)
    {
        public override string ToString() => $"{(Hierarchical ? "hierarchical" : "hash")} {HostileRequest.Show(Header)}";
    }

    private static Arbitrary<Case> Cases => Arb.From(
        from header in PartitionKeyGen.Header
        from hierarchical in Gen.Elements(false, true)
        select new Case(header, hierarchical),
        c => HostileGen.ShrinkText(c.Header).Select(h => c with { Header = h }));

    [Fact]
    public void Partition_key_values_are_hashed_or_refused_with_a_400()
    {
        Fuzz.Report(output, "partition key values",
            ("through the header parser and hashing", () => Fuzz.Run("partition keys", Cases, Fuzz.Cases, Direct, () => { })),
            ("over HTTP", () => Fuzz.Run("partition keys over HTTP", Cases, Fuzz.HttpSample, OverHttp, emulator.AssertHealthy)));
    }

    private static void Direct(Case input)
    {
        var (problem, escaped) = Fuzz.Bounded(input, () =>
        {
            if (!PartitionKeyValue.TryParseHeader(input.Header, out var value, out var error))
            {
                return error is { Length: > 0 } ? null : "a refused header without a reason";
            }

            for (var i = 0; i < Definitions.Length; i++)
            {
                try
                {
                    var epk = Definitions[i].EffectivePartitionKey(value);
                    Layouts[i].Locate(epk);
                    if (value.Count != Definitions[i].Paths.Count)
                    {
                        return $"a key of {value.Count} components was hashed for {Definitions[i].Paths.Count} paths";
                    }
                }
                catch (BadRequestException e) when (e.SubStatusCode == 1001)
                {
                    if (value.Count == Definitions[i].Paths.Count)
                    {
                        return $"a complete key was refused: {e.Message}";
                    }
                }

                try
                {
                    var (epk, _) = Definitions[i].Locate(value);
                    Layouts[i].Locate(epk);
                }
                catch (BadRequestException)
                {
                }
            }

            _ = value.ToString();
            return (string?)null;
        });
        if (escaped is not null and not BadRequestException)
        {
            throw new HostileInputException($"{input}: {escaped.GetType().Name} escaped instead of a 400: {escaped}");
        }

        if (problem is not null)
        {
            throw new HostileInputException($"{input}: {problem}.");
        }
    }

    private void OverHttp(Case input)
    {
        var link = input.Hierarchical ? HostileEmulator.HierarchicalLink : HostileEmulator.ItemsLink;
        var request = new HostileRequest("GET", $"/{link}/docs/seed-1", [new("x-ms-documentdb-partitionkey", input.Header)]);
        var response = emulator.Send(request);
        if (ScalarComponents(input.Header) is { } count && count > 0 && count != (input.Hierarchical ? 3 : 1))
        {
            Verdict.BadRequest(request, response, "components", subStatus: 1001);
        }
        else
        {
            Verdict.Check(request, response);
        }
    }

    // The number of components of a well-formed header whose every component is a plain value, else null.
    private static int? ScalarComponents(string header)
    {
        try
        {
            using var document = JsonDocument.Parse(HostileGen.HeaderSafe(header));
            var root = document.RootElement;
            if (root.ValueKind != JsonValueKind.Array)
            {
                return null;
            }

            foreach (var component in root.EnumerateArray())
            {
                var plain = component.ValueKind switch
                {
                    JsonValueKind.String => HostileGen.IsValidUtf16(component.GetString()!),
                    JsonValueKind.Number => component.TryGetDouble(out var number) && double.IsFinite(number),
                    JsonValueKind.True or JsonValueKind.False or JsonValueKind.Null => true,
                    _ => false,
                };
                if (!plain)
                {
                    return null;
                }
            }

            return root.GetArrayLength();
        }
        catch (Exception e) when (e is JsonException or InvalidOperationException)
        {
            return null;
        }
    }
}
