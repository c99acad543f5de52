using System.Buffers;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Query;
using DroneDelivery.Emulators.CosmosDb.Storage;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Cosmos DB SQL text from a hostile client. The bulk goes straight through the parser, the query
/// planner (whose rewritten query the emulator must accept back, as the SDK sends it) and the executor
/// over items with awkward values; a sample goes over HTTP as a query with a partition key, a
/// cross-partition query and a query-plan request. Only a 400 may come back for bad text, and a
/// syntax error is a 400 whose message says "Syntax error", as the service answers it.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class SqlTextTests(HostileEmulator emulator, ITestOutputHelper output)
{
    private static readonly PartitionKeyDefinition Definition = PartitionKeyDefinition.Hash("/pk", 2);

    private static readonly JsonDocument ParameterValues = JsonDocument.Parse(
        """{"@p0": 1, "@p1": "x", "@n": 2, "@s": "😀", "@i": 0, "@arr": [1, [2, "3"]], "@obj": {"a": 1, "b": [null]}, "@big": 1.7976931348623157e308}""");

    private static readonly Dictionary<string, QueryValue> Parameters =
        ParameterValues.RootElement.EnumerateObject().ToDictionary(p => p.Name, p => QueryValue.FromElement(p.Value), StringComparer.Ordinal);

    // Items a query may meet: numbers at the edge of a double (their sum overflows), deep arrays,
    // duplicate names, mixed types under one name, missing properties.
    private static readonly PartitionSnapshot Items = new([.. new[]
    {
        """{"id":"1","pk":"a","n":1,"s":"abc","arr":[1,"two",{"x":1}],"obj":{"x":1,"y":null},"big":1.7976931348623157e308,"deep":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}""",
        """{"id":"2","pk":"b","n":-0.5,"s":"😀 \u0000 \\","arr":[],"obj":{},"big":1.7976931348623157e308,"value":"v"}""",
        """{"id":"3","pk":1,"n":"1","s":null,"arr":[[1,2],[3]],"obj":{"x":"1"},"big":-1.7976931348623157e308}""",
        """{"id":"4","pk":true,"n":1,"n":"dup","s":"ABC","arr":[{"x":[{"x":1}]}],"a b":1}""",
        """{"id":"5","pk":null,"n":4.9e-324,"s":"","arr":null,"obj":[1],"big":0}""",
        """{"id":"6"}""",
    }.Select((json, i) =>
    {
        var bytes = Encoding.UTF8.GetBytes(json);
        return new StoredDocument
        {
            Id = (i + 1).ToString(System.Globalization.CultureInfo.InvariantCulture),
            Epk = string.Empty,
            Sequence = i + 1,
            Rid = string.Empty,
            ETag = "\"0\"",
            Timestamp = 0,
            Json = bytes,
            Root = JsonDocument.Parse(bytes).RootElement,
        };
    })]);

    [Fact]
    public void Query_text_is_parsed_planned_and_run_or_refused_with_a_400()
    {
        var overHttp = FsCheck.Fluent.Arb.From(
            from c in SqlGen.Any
            from route in Gen.Choose(0, 2)
            select (Case: c, Route: route),
            c => SqlGen.Shrink(c.Case).Select(shrunk => (shrunk, c.Route)));
        Fuzz.Report(output, "Cosmos SQL text",
            ("through the parser, planner and executor", () => Fuzz.Run("sql", SqlGen.Arbitrary, Fuzz.Cases, Direct, () => { })),
            ("over HTTP", () => Fuzz.Run("sql over HTTP", overHttp, Fuzz.HttpSample, c => OverHttp(c.Case, c.Route), emulator.AssertHealthy)));
    }

    private static void Direct(SqlCase query)
    {
        var (_, error) = Fuzz.Bounded(query, () =>
        {
            Run(query.Text);
            return true;
        });

        if (error is not null and not QueryException)
        {
            throw new HostileInputException($"{query}: {error.GetType().Name} escaped instead of a 400: {error}");
        }

        if (query.SyntaxError && error?.Message.Contains("Syntax error", StringComparison.Ordinal) != true)
        {
            throw new HostileInputException($"{query}: a syntax error was answered {error?.Message ?? "with results"}, not \"Syntax error\".");
        }
    }

    private static void Run(string text)
    {
        var prepared = PreparedQuery.Get(text);
        var plan = QueryPlanner.Plan(prepared, Parameters, Definition);
        Write(plan.WriteTo);
        if (plan.RewrittenQuery.Length > 0)
        {
            // The SDK sends the rewritten query to every range: the emulator must accept its own rewrite.
            try
            {
                PreparedQuery.Get(plan.RewrittenQuery.Replace(QueryPlanner.OrderByFilterPlaceholder, "true", StringComparison.Ordinal));
            }
            catch (QueryException e)
            {
                throw new InvalidOperationException($"The plan's rewritten query '{plan.RewrittenQuery}' is refused: {e.Message}", e);
            }
        }

        string? continuation = null;
        for (var page = 0; page < 3; page++)
        {
            var result = QueryExecutor.ExecutePage(prepared, Parameters, Items, default, 2, continuation, null);
            Write(w =>
            {
                w.WriteStartArray();
                foreach (var row in result.Rows)
                {
                    row.WriteTo(w);
                }

                w.WriteEndArray();
            });
            continuation = result.Continuation;
            if (continuation is null)
            {
                break;
            }
        }
    }

    private static void Write(Action<Utf8JsonWriter> write)
    {
        var buffer = new ArrayBufferWriter<byte>();
        using var writer = new Utf8JsonWriter(buffer);
        write(writer);
    }

    private void OverHttp(SqlCase query, int route)
    {
        (string, string)[] headers = route switch
        {
            0 => [("x-ms-documentdb-partitionkey", "[\"p1\"]")],
            1 => [("x-ms-documentdb-query-enablecrosspartition", "True")],
            _ => [("x-ms-cosmos-is-query-plan-request", "True"), ("x-ms-cosmos-supported-query-features", "Aggregate, Distinct, MultipleOrderBy, OffsetAndLimit, OrderBy, Top, GroupBy")],
        };
        var request = HostileEmulator.Query(HostileEmulator.ItemsLink, query.Text, [("@p0", 1), ("@n", 2), ("@s", "x")], headers);
        var response = emulator.Send(request);
        if (query.SyntaxError)
        {
            Verdict.BadRequest(request, response, "Syntax error");
        }
        else
        {
            Verdict.Check(request, response);
        }
    }
}
