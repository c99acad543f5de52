using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.LocalProcesses;
using Microsoft.Azure.Cosmos;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.GeneratedQueries;

/// <summary>
/// Random items and random queries of the served grammar, each run through the official SDK against
/// the emulator process, across partitions or in one logical partition, and checked against
/// <see cref="ReferenceEvaluator"/>. The seed is printed; <c>COSMOS_QUERY_SEED</c> runs another one,
/// and the same seed reproduces the same items and queries.
/// </summary>
public sealed class GeneratedQueryTests(ITestOutputHelper output)
{
    private const int DefaultSeed = 29_0001;
    private const int QueryCount = 10_000;
    private const int ItemCount = 120;
    private const int ShownFailures = 15;
    private static readonly IReadOnlySet<string> SystemProperties = new HashSet<string>(StringComparer.Ordinal) { "_rid", "_self", "_etag", "_attachments", "_ts" };

    [Fact]
    public async Task Generated_queries_answer_as_the_reference_evaluator_does()
    {
        var seed = int.TryParse(Environment.GetEnvironmentVariable("COSMOS_QUERY_SEED"), CultureInfo.InvariantCulture, out var chosen) ? chosen : DefaultSeed;
        var generator = new QueryGenerator(new Random(seed));
        var items = generator.Items(ItemCount);
        var random = new Random(seed + 1);
        var runs = Enumerable.Range(0, QueryCount).Select(i => QueryRun.Next(i, generator.Next(), random)).ToList();

        await using var emulator = await StartEmulatorAsync();
        using var client = new CosmosClient($"AccountEndpoint={emulator.Endpoint};AccountKey={CosmosEmulatorOptions.WellKnownAccountKey};", new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
        });
        var database = (await client.CreateDatabaseIfNotExistsAsync("generated")).Database;
        var container = (await database.CreateContainerIfNotExistsAsync(new ContainerProperties("items", "/pk"), 100_000)).Container;
        foreach (var item in items)
        {
            using var body = new MemoryStream(Encoding.UTF8.GetBytes(item.Canonical()));
            using var created = await container.CreateItemStreamAsync(body, new PartitionKey(item.Property("pk").Text));
            Assert.Equal(HttpStatusCode.Created, created.StatusCode);
        }

        var failures = new System.Collections.Concurrent.ConcurrentBag<string>();
        var answered = new System.Collections.Concurrent.ConcurrentBag<QueryRun>();
        var clock = Stopwatch.StartNew();
        await Parallel.ForEachAsync(runs, new ParallelOptions { MaxDegreeOfParallelism = 4 }, async (run, cancellationToken) =>
        {
            var (problem, rows) = await CompareAsync(container, run, items, cancellationToken);
            if (problem is not null)
            {
                failures.Add($"#{run.Index} {run.Describe()}\n    {problem}");
            }
            else if (rows > 0)
            {
                answered.Add(run);
            }
        });
        clock.Stop();

        var crossPartition = runs.Count(r => r.PartitionKey is null);
        output.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"seed {seed}: compared {runs.Count} generated queries with the reference evaluator ({crossPartition} across partitions, {runs.Count - crossPartition} in one logical partition; {answered.Count} with rows) over {ItemCount} items in {clock.Elapsed.TotalSeconds:0.0} s; {failures.Count} disagreed"));
        foreach (var shape in runs.GroupBy(r => r.Query.Shape).OrderBy(g => g.Key, StringComparer.Ordinal))
        {
            output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"  {shape.Key}: {shape.Count()} ({answered.Count(r => r.Query.Shape == shape.Key)} with rows)"));
        }

        Assert.True(failures.IsEmpty, string.Create(CultureInfo.InvariantCulture,
            $"seed {seed} (COSMOS_QUERY_SEED={seed} reproduces it): {failures.Count} of {runs.Count} queries disagreed with the reference evaluator:\n")
            + string.Join("\n", failures.OrderBy(f => int.Parse(f[1..f.IndexOf(' ', StringComparison.Ordinal)], CultureInfo.InvariantCulture)).Take(ShownFailures)));
    }

    /// <summary>Why the emulator's answer is not one the query allows (null when it is), and how many rows it had.</summary>
    private static async Task<(string? Problem, int Rows)> CompareAsync(Container container, QueryRun run, IReadOnlyList<Datum> items, CancellationToken cancellationToken)
    {
        var (rows, error) = await ReadAllAsync(container, run, cancellationToken);
        if (run.Query.Refused is { } refused)
        {
            return (error is { Status: HttpStatusCode.BadRequest } && error.Message.Contains(refused, StringComparison.Ordinal)
                ? null
                : $"expected a 400 naming '{refused}', got {(error is null ? $"{rows.Count} rows" : $"{(int)error.Status}: {error.Message}")}", 0);
        }

        if (error is not null)
        {
            return ($"{(int)error.Status}: {error.Message}", 0);
        }

        var scope = run.PartitionKey is null ? items : [.. items.Where(i => i.Property("pk").Text == run.PartitionKey)];
        var expected = ReferenceEvaluator.Evaluate(run.Query, scope);
        return (ResultCheck.Problem(expected, rows) is { } problem
            ? $"{problem}\n    expected {Show(expected.Rows)}{(expected.Take is null && expected.Skip == 0 ? string.Empty : $" (skip {expected.Skip}, take {expected.Take})")}\n    actual   {Show(rows)}"
            : null, rows.Count);
    }

    private static async Task<(List<Datum> Rows, QueryError? Error)> ReadAllAsync(Container container, QueryRun run, CancellationToken cancellationToken)
    {
        var rows = new List<Datum>();
        try
        {
            using var iterator = container.GetItemQueryStreamIterator(new QueryDefinition(run.Query.Sql), requestOptions: run.Options());
            while (iterator.HasMoreResults)
            {
                using var page = await iterator.ReadNextAsync(cancellationToken);
                if (!page.IsSuccessStatusCode)
                {
                    return (rows, new QueryError(page.StatusCode, page.ErrorMessage ?? string.Empty));
                }

                using var json = await JsonDocument.ParseAsync(page.Content, cancellationToken: cancellationToken);
                // Whole items come back with the system properties the service adds; the reference has none.
                rows.AddRange(json.RootElement.GetProperty("Documents").EnumerateArray().Select(d => Datum.FromJson(d).Without(SystemProperties)));
            }
        }
        catch (CosmosException e)
        {
            return (rows, new QueryError(e.StatusCode, e.Message));
        }

        return (rows, null);
    }

    private static string Show(IReadOnlyList<Datum> rows) =>
        rows.Count <= 12 ? $"[{string.Join(", ", rows.Select(r => r.Canonical()))}]" : $"[{string.Join(", ", rows.Take(12).Select(r => r.Canonical()))}, … {rows.Count} rows]";

    private static async Task<LocalProcess> StartEmulatorAsyncCore(string config)
    {
        var spec = LocalProcessSpec.ForProject("cosmos-emulator-generated-queries", "DroneDelivery.Emulators.CosmosDb", "--port", "0", "--config", config) with
        {
            IsReadyLine = line => line.StartsWith("Cosmos DB emulator ready on ", StringComparison.Ordinal),
        };
        return await LocalProcess.StartAsync(spec);
    }

    private static async Task<EmulatorProcess> StartEmulatorAsync()
    {
        var directory = Directory.CreateTempSubdirectory("cosmos-generated-queries-");
        var config = Path.Combine(directory.FullName, "emulator.json");
        // Four physical partitions, no modelled latency and enough RU/s that nothing is throttled.
        await File.WriteAllTextAsync(config, """
            { "DefaultThroughput": 100000, "DefaultPhysicalPartitions": 4,
              "Latency": { "FixedMilliseconds": 0, "PerDocumentMilliseconds": 0, "ThrottledMilliseconds": 0 } }
            """);
        var process = await StartEmulatorAsyncCore(config);
        var ready = process.RecentOutput.Last(line => line.StartsWith("Cosmos DB emulator ready on ", StringComparison.Ordinal));
        return new EmulatorProcess(process, new Uri(ready["Cosmos DB emulator ready on ".Length..].Trim()), directory);
    }

    /// <summary>How a query failed: its status and the message naming why.</summary>
    private sealed record QueryError(HttpStatusCode Status, string Message);

    /// <summary>The emulator as its own process on 127.0.0.1, and the folder of its configuration.</summary>
    private sealed record EmulatorProcess(LocalProcess Process, Uri Endpoint, DirectoryInfo Directory) : IAsyncDisposable
    {
        public async ValueTask DisposeAsync()
        {
            await Process.DisposeAsync();
            Directory.Delete(recursive: true);
        }
    }

    /// <summary>One query as it runs: across partitions or in one logical partition, with a page size.</summary>
    private sealed record QueryRun(int Index, GeneratedQuery Query, string? PartitionKey, int? MaxItemCount)
    {
        public static QueryRun Next(int index, GeneratedQuery query, Random random) => new(
            index,
            query,
            random.Next(100) < 60 ? null : QueryGenerator.PartitionKey(random.Next(QueryGenerator.PartitionKeys)),
            random.Next(10) switch
            {
                0 => 1,
                1 or 2 => 3,
                3 or 4 => 10,
                _ => null,
            });

        public QueryRequestOptions Options() => new()
        {
            PartitionKey = PartitionKey is null ? null : new PartitionKey(PartitionKey),
            MaxItemCount = MaxItemCount,
        };

        public string Describe() =>
            $"{Query.Sql}  [{(PartitionKey is null ? "across partitions" : $"partition key {PartitionKey}")}{(MaxItemCount is { } size ? $", MaxItemCount {size}" : string.Empty)}]";
    }
}
