using System.CommandLine;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using DroneDelivery.Benchmarks.CosmosDb;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

// Internal mode: this same program serves the baseline in a child process.
if (args is ["--baseline-server", "--port", var basePort, "--read-body", var readBody, "--query-body", var queryBody, "--cross-partition-pages", var crossPages])
{
    await BaselineServer.RunAsync(int.Parse(basePort, CultureInfo.InvariantCulture), readBody, queryBody, crossPages);
    return 0;
}

var (parse, exitCode) = await BenchmarkOptions.ParseAsync(BenchmarkCommand.Build(), args);
if (parse is null)
{
    return exitCode;
}

var settings = BenchmarkCommand.Settings(parse);

const string Database = "bench";
const string Container = "utilization";
// The same items, spread by their own id over 7 physical partitions: a query by owner reads them all.
const string SpreadContainer = "utilization-spread";
const int SpreadPartitions = 7;
const int CrossPartitionPageSize = 10;
const int Owners = 20;
const int Months = 5;
const int ItemsPerOwnerMonth = 10;
var work = Directory.CreateTempSubdirectory("cosmos-benchmark-").FullName;
var loadAtStart = LoadAverage();
try
{
    // No modelled latency and far more RU/s than the load can use: what is measured is the
    // emulator's own cost per request (protocol, auth, hashing, storage, query engine).
    var config = Path.Combine(work, "emulator.json");
    await File.WriteAllTextAsync(config, JsonSerializer.Serialize(new
    {
        Latency = new { FixedMilliseconds = 0, PerDocumentMilliseconds = 0, ThrottledMilliseconds = 0 },
        Databases = new[]
        {
            new { Id = Database, Containers = new[] { new { Id = Container, PartitionKeyPath = "/ownerId", Throughput = 10_000_000, PhysicalPartitions = 9 },
                new { Id = SpreadContainer, PartitionKeyPath = "/partitionKey", Throughput = 10_000_000, PhysicalPartitions = SpreadPartitions },
            } },
        },
    }));

    var emulatorPort = FreePort.Next();
    await using var emulator = await LocalProcess.StartAsync(LocalProcessSpec.ForProject("cosmos-emulator", "DroneDelivery.Emulators.CosmosDb", "--port", emulatorPort.ToString(CultureInfo.InvariantCulture), "--config", config) with
    {
        IsReadyLine = line => line.StartsWith("Cosmos DB emulator ready on ", StringComparison.Ordinal),
    });
    var endpoint = new Uri($"http://127.0.0.1:{emulatorPort}/");
    var signed = new SignedRequests(endpoint, CosmosEmulatorOptions.WellKnownAccountKey);

    Console.WriteLine($"Loading {Owners * Months * ItemsPerOwnerMonth} items into each container…");
    var crossPartitionPages = new List<RecordedPage>();
    using (var http = new HttpClient())
    {
        for (var owner = 0; owner < Owners; owner++)
        {
            for (var month = 1; month <= Months; month++)
            {
                for (var n = 0; n < ItemsPerOwnerMonth; n++)
                {
                    var id = $"d-{owner}-{month}-{n}";
                    var item = JsonSerializer.Serialize(new { id, partitionKey = id, ownerId = $"owner-{owner}", year = 2025, month, travelledMiles = 30.5 + n, assignedHours = 1 + (n % 4) });
                    using var created = await http.SendAsync(signed.Create(Database, Container, item, $"owner-{owner}"));
                    created.EnsureSuccessStatusCode();
                    using var spread = await http.SendAsync(signed.Create(Database, SpreadContainer, item, id));
                    spread.EnsureSuccessStatusCode();
                }
            }
        }

        // The baseline answers with exactly what the emulator answers.
        using var read = await http.SendAsync(signed.PointRead(Database, Container, "d-0-1-0", "owner-0"));
        await File.WriteAllBytesAsync(Path.Combine(work, "read.json"), await read.EnsureSuccessStatusCode().Content.ReadAsByteArrayAsync());
        using var query = await http.SendAsync(signed.Query(Database, Container, QueryJson(0), "owner-0"));
        await File.WriteAllBytesAsync(Path.Combine(work, "query.json"), await query.EnsureSuccessStatusCode().Content.ReadAsByteArrayAsync());

        // Every owner's cross-partition query paged to its end, for the baseline to replay page by page.
        for (var owner = 0; owner < Owners; owner++)
        {
            var queryJson = CrossPartitionQueryJson(owner);
            string? continuation = null;
            var items = 0;
            do
            {
                using var page = await http.SendAsync(signed.CrossPartitionQuery(Database, SpreadContainer, queryJson, continuation, CrossPartitionPageSize));
                var body = await page.EnsureSuccessStatusCode().Content.ReadAsByteArrayAsync();
                items += JsonDocument.Parse(body).RootElement.GetProperty("_count").GetInt32();
                var next = page.Headers.TryGetValues("x-ms-continuation", out var values) ? values.FirstOrDefault() : null;
                crossPartitionPages.Add(new RecordedPage(queryJson, continuation, Convert.ToBase64String(body), next));
                continuation = next;
            }
            while (continuation is not null);

            if (items != Months * ItemsPerOwnerMonth)
            {
                throw new InvalidOperationException($"The cross-partition query for owner-{owner} returned {items} items, not {Months * ItemsPerOwnerMonth}.");
            }
        }

        await File.WriteAllTextAsync(Path.Combine(work, "cross-partition.json"), JsonSerializer.Serialize(crossPartitionPages));
    }

    var baselinePort = FreePort.Next();
    await using var baseline = await LocalProcess.StartAsync(new LocalProcessSpec
    {
        Name = "baseline",
        FileName = "dotnet",
        Arguments = [typeof(BaselineServer).Assembly.Location, "--baseline-server", "--port", baselinePort.ToString(CultureInfo.InvariantCulture),
            "--read-body", Path.Combine(work, "read.json"), "--query-body", Path.Combine(work, "query.json"),
            "--cross-partition-pages", Path.Combine(work, "cross-partition.json")],
        IsReadyLine = line => line == BaselineServer.ReadyLine,
    });
    var baselineRequests = new SignedRequests(new Uri($"http://127.0.0.1:{baselinePort}/"), CosmosEmulatorOptions.WellKnownAccountKey);

    static LoadResult Combine(IReadOnlyList<LoadResult> slices) => new(
        slices.Average(r => r.RequestsPerSecond),
        slices.Average(r => r.ServerCpuMicrosecondsPerRequest),
        slices.Average(r => r.QueriesPerSecond));

    HttpRequestMessage PointRead(SignedRequests target, int i)
    {
        var (owner, month, n) = (i % Owners, 1 + (i / Owners % Months), i / (Owners * Months) % ItemsPerOwnerMonth);
        return target.PointRead(Database, Container, $"d-{owner}-{month}-{n}", $"owner-{owner}");
    }

    HttpRequestMessage Query(SignedRequests target, int i) =>
        target.Query(Database, Container, QueryJson(i), $"owner-{i % Owners}");

    HttpRequestMessage CrossPartitionQuery(SignedRequests target, int i, string? continuation) =>
        target.CrossPartitionQuery(Database, SpreadContainer, CrossPartitionQueryJson(i % Owners), continuation, CrossPartitionPageSize);

    // The machine may be running other work whose load drifts; measuring baseline and emulator in
    // short alternating slices gives both the same conditions, so their ratio is meaningful.
    var load = new LoadGenerator(settings.Concurrency);
    var slice = settings.Measured / settings.Slices;
    Task<Comparison> CompareAsync(string name, Func<SignedRequests, int, HttpRequestMessage> request) =>
        ComparePagedAsync(name, (target, i, _) => request(target, i), paged: false);

    async Task<Comparison> ComparePagedAsync(string name, Func<SignedRequests, int, string?, HttpRequestMessage> request, bool paged = true)
    {
        Task<LoadResult> Run(SignedRequests target, Func<TimeSpan> cpu, TimeSpan warmUp, TimeSpan measured) => paged
            ? load.RunPagedAsync((i, continuation) => request(target, i, continuation), cpu, warmUp, measured)
            : load.RunAsync(i => request(target, i, null), cpu, warmUp, measured);
        await Run(baselineRequests, () => baseline.TotalProcessorTime, settings.WarmUp, TimeSpan.FromSeconds(1));
        await Run(signed, () => emulator.TotalProcessorTime, settings.WarmUp, TimeSpan.FromSeconds(1));
        var baselineSlices = new List<LoadResult>();
        var emulatorSlices = new List<LoadResult>();
        for (var i = 0; i < settings.Slices; i++)
        {
            baselineSlices.Add(await Run(baselineRequests, () => baseline.TotalProcessorTime, TimeSpan.FromMilliseconds(300), slice));
            emulatorSlices.Add(await Run(signed, () => emulator.TotalProcessorTime, TimeSpan.FromMilliseconds(300), slice));
            Console.WriteLine($"{name} slice {i + 1}: baseline {baselineSlices[^1].RequestsPerSecond,8:N0}/s ({baselineSlices[^1].ServerCpuMicrosecondsPerRequest,5:0} µs CPU), "
                + $"emulator {emulatorSlices[^1].RequestsPerSecond,8:N0}/s ({emulatorSlices[^1].ServerCpuMicrosecondsPerRequest,5:0} µs CPU)");
        }

        return new Comparison(Combine(emulatorSlices), Combine(baselineSlices), emulatorSlices.Max(r => r.RequestsPerSecond));
    }

    var reads = await CompareAsync("point reads", PointRead);
    var queries = await CompareAsync("queries", Query);
    var crossPartition = await ComparePagedAsync("cross-partition query pages", CrossPartitionQuery);
    var report = new Report(reads, queries, crossPartition, settings, $"{loadAtStart} at start, {LoadAverage()} at end",
        (await File.ReadAllBytesAsync(Path.Combine(work, "read.json"))).Length,
        (await File.ReadAllBytesAsync(Path.Combine(work, "query.json"))).Length,
        new CrossPartitionShape(SpreadPartitions, CrossPartitionPageSize, Months * ItemsPerOwnerMonth,
            (double)crossPartitionPages.Count / Owners, crossPartitionPages.Average(p => Convert.FromBase64String(p.Body).Length)));
    Console.WriteLine();
    Console.WriteLine(report.Summary());
    if (settings.Output is not null)
    {
        var output = Path.IsPathRooted(settings.Output) ? settings.Output : RepositoryLayout.InRepository(settings.Output);
        await File.WriteAllTextAsync(output, report.Markdown());
        Console.WriteLine($"Wrote {output}");
    }

    return report.MeetsTarget ? 0 : 1;
}
finally
{
    Directory.Delete(work, recursive: true);
}

// What else the machine was doing: the 1-minute load average (Linux), for reading the figures.
static string LoadAverage() =>
    File.Exists("/proc/loadavg") ? File.ReadAllText("/proc/loadavg").Split(' ')[0] : "n/a";

static string QueryJson(int i) => JsonSerializer.Serialize(new
{
    query = "SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month",
    parameters = new object[]
    {
        new { name = "@ownerId", value = $"owner-{i % 20}" },
        new { name = "@year", value = 2025 },
        new { name = "@month", value = 1 + (i / 20 % 5) },
    },
});

static string CrossPartitionQueryJson(int owner) => JsonSerializer.Serialize(new
{
    query = "SELECT * FROM c WHERE c.ownerId = @ownerId",
    parameters = new object[] { new { name = "@ownerId", value = $"owner-{owner}" } },
});

internal sealed record BenchmarkSettings(int Concurrency, TimeSpan WarmUp, TimeSpan Measured, int Slices, string? Output);

namespace DroneDelivery.Benchmarks.CosmosDb
{
    /// <summary>The benchmark's command line: <c>[--concurrency 32] [--seconds 20] [--warmup 3] [--slices 8] [--output docs/benchmarks/cosmos-db.md | --no-output]</c>.</summary>
    internal static class BenchmarkCommand
    {
        private static readonly Option<int> Concurrency = BenchmarkOptions.Positive("--concurrency", 32, "Requests in flight on each server.");
        private static readonly Option<int> Seconds = BenchmarkOptions.Positive("--seconds", 20, "Measured seconds per operation and server.");
        private static readonly Option<int> WarmUp = BenchmarkOptions.Positive("--warmup", 3, "Unmeasured seconds first.");
        private static readonly Option<int> Slices = BenchmarkOptions.Positive("--slices", 8, "Alternating slices the measured time is cut into.");
        private static readonly Option<string> Output = new("--output") { Description = "The report, relative to the repository.", DefaultValueFactory = _ => "docs/benchmarks/cosmos-db.md" };
        private static readonly Option<bool> NoOutput = new("--no-output") { Description = "Print the report only." };

        public static RootCommand Build() =>
            new("Requests per second the Cosmos DB emulator sustains, against a bare Kestrel endpoint answering the same JSON.")
            {
                Concurrency, Seconds, WarmUp, Slices, Output, NoOutput,
            };

        public static BenchmarkSettings Settings(ParseResult parse) => new(
            parse.GetValue(Concurrency),
            TimeSpan.FromSeconds(parse.GetValue(WarmUp)),
            TimeSpan.FromSeconds(parse.GetValue(Seconds)),
            parse.GetValue(Slices),
            parse.GetValue(NoOutput) ? null : parse.GetValue(Output));

    }
}

/// <summary>One operation on both servers: averages over the alternating slices, and the emulator's best slice.</summary>
internal sealed record Comparison(LoadResult Emulator, LoadResult Baseline, double EmulatorBestRequestsPerSecond)
{
    public double Ratio => Emulator.RequestsPerSecond / Baseline.RequestsPerSecond;
}

/// <summary>The cross-partition query's shape: partitions, page size, items and pages per query, average page size.</summary>
internal sealed record CrossPartitionShape(int Partitions, int PageSize, int ItemsPerQuery, double PagesPerQuery, double AveragePageBytes);

internal sealed record Report(
    Comparison Reads, Comparison Queries, Comparison CrossPartition, BenchmarkSettings Settings, string MachineLoad, int ItemBytes, int QueryPageBytes,
    CrossPartitionShape CrossPartitionShape)
{
    public const double TargetReadsPerSecond = 10_000;
    public const double TargetRatio = 0.5;

    /// <summary>The product target for point reads, above the 0.5 floor.</summary>
    public const double TargetReadRatio = 0.75;

    public bool MeetsReadRatioTarget => Reads.Ratio >= TargetReadRatio;

    // The cross-partition query is reported, without a target of its own.
    public bool MeetsTarget => Reads.Emulator.RequestsPerSecond >= TargetReadsPerSecond && Reads.Ratio >= TargetRatio && MeetsReadRatioTarget
        && Queries.Ratio >= TargetRatio;

    public string Summary() => string.Create(CultureInfo.InvariantCulture,
        $"""
        point reads: emulator {Reads.Emulator.RequestsPerSecond:N0}/s (best slice {Reads.EmulatorBestRequestsPerSecond:N0}/s), baseline {Reads.Baseline.RequestsPerSecond:N0}/s, ratio {Reads.Ratio:0.00}
        queries:     emulator {Queries.Emulator.RequestsPerSecond:N0}/s (best slice {Queries.EmulatorBestRequestsPerSecond:N0}/s), baseline {Queries.Baseline.RequestsPerSecond:N0}/s, ratio {Queries.Ratio:0.00}
        cross-partition query (pages): emulator {CrossPartition.Emulator.RequestsPerSecond:N0}/s (best slice {CrossPartition.EmulatorBestRequestsPerSecond:N0}/s), baseline {CrossPartition.Baseline.RequestsPerSecond:N0}/s, ratio {CrossPartition.Ratio:0.00}; whole queries: emulator {CrossPartition.Emulator.QueriesPerSecond:N0}/s, baseline {CrossPartition.Baseline.QueriesPerSecond:N0}/s ({CrossPartitionShape.PagesPerQuery:0.#} pages each; no target)
        target (≥ {TargetReadsPerSecond:N0} reads/s, ratios ≥ {TargetRatio:0.0}): {(Reads.Emulator.RequestsPerSecond >= TargetReadsPerSecond && Reads.Ratio >= TargetRatio && Queries.Ratio >= TargetRatio ? "met" : "NOT met")}
        product target (point-read ratio ≥ {TargetReadRatio:0.00}): {(MeetsReadRatioTarget ? "met" : "NOT met")} ({Reads.Ratio:0.00})
        """);

    public string Markdown()
    {
        var text = new StringBuilder();
        text.AppendLine("# Cosmos DB emulator benchmark");
        text.AppendLine();
        text.AppendLine("Requests per second the emulator sustains, next to a bare Kestrel endpoint that answers the");
        text.AppendLine("same JSON without doing any work, measured in the same run on the same machine. The ratio");
        text.AppendLine("(emulator ÷ baseline) is the figure to compare between machines; absolute numbers depend on");
        text.AppendLine("the machine and on what else it is running.");
        text.AppendLine();
        text.AppendLine("Command (from the repository root; rewrites this file):");
        text.AppendLine();
        text.AppendLine("```");
        text.AppendLine("dotnet run -c Release --project tests/Benchmarks/CosmosDb");
        text.AppendLine("```");
        text.AppendLine();
        text.AppendLine("Options: `--concurrency N` connections (default 32), `--seconds N` measured per server and operation (20),");
        text.AppendLine("`--slices N` alternating baseline/emulator slices those seconds are cut into (8), `--warmup N` seconds (3),");
        text.AppendLine("`--output PATH` or `--no-output`. It exits 1 when the target is not met.");
        text.AppendLine();
        text.AppendLine("## Latest run");
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"- When: {DateTimeOffset.UtcNow:yyyy-MM-dd HH:mm} UTC");
        text.AppendLine(CultureInfo.InvariantCulture, $"- Machine: {Environment.ProcessorCount} logical cores, {RuntimeInformation.OSDescription}, {RuntimeInformation.FrameworkDescription}");
        text.AppendLine(CultureInfo.InvariantCulture, $"- Other work on the machine (1-minute load average): {MachineLoad}");
        text.AppendLine(CultureInfo.InvariantCulture, $"- Load: {Settings.Concurrency} concurrent connections, closed loop, {Settings.Measured.TotalSeconds:0} s per server and operation in {Settings.Slices} alternating slices");
        text.AppendLine();
        text.AppendLine("| operation | emulator (req/s) | emulator, best slice (req/s) | baseline (req/s) | ratio | emulator CPU (µs/req) | baseline CPU (µs/req) |");
        text.AppendLine("|---|---:|---:|---:|---:|---:|---:|");
        Row(text, $"point read ({ItemBytes:N0} B item)", Reads);
        Row(text, $"single-partition utilization query (10 items, {QueryPageBytes:N0} B page)", Queries);
        var shape = CrossPartitionShape;
        Row(text, $"cross-partition query over {shape.Partitions} physical partitions, req/s = pages ({shape.ItemsPerQuery} items in {shape.PagesPerQuery:0.#} pages of up to {shape.PageSize}, {shape.AveragePageBytes:N0} B per page on average)", CrossPartition);
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture,
            $"Cross-partition query, whole queries (every page, to the last continuation): emulator {CrossPartition.Emulator.QueriesPerSecond:N0}/s, baseline {CrossPartition.Baseline.QueriesPerSecond:N0}/s. Reported without a target.");
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"Target: at least {TargetReadsPerSecond:N0} point reads/s (average over the slices), a point-read ratio of {TargetReadRatio:0.00} or better (the product target; the floor was {TargetRatio:0.0}) and a single-partition query ratio of {TargetRatio:0.0} or better — **{(MeetsTarget ? "met" : "not met")}**.");
        text.AppendLine();
        text.AppendLine(CultureInfo.InvariantCulture, $"- point reads: {Reads.Emulator.RequestsPerSecond:N0}/s (≥ {TargetReadsPerSecond:N0}: {(Reads.Emulator.RequestsPerSecond >= TargetReadsPerSecond ? "met" : "not met")}), ratio {Reads.Ratio:0.00} (≥ {TargetReadRatio:0.00}: {(MeetsReadRatioTarget ? "met" : "not met")})");
        text.AppendLine(CultureInfo.InvariantCulture, $"- single-partition query: ratio {Queries.Ratio:0.00} (≥ {TargetRatio:0.0}: {(Queries.Ratio >= TargetRatio ? "met" : "not met")})");
        text.AppendLine();
        text.AppendLine("## What is measured");
        text.AppendLine();
        text.AppendLine("- Both servers run as separate processes on 127.0.0.1 (HTTP/1.1, keep-alive); the load generator is");
        text.AppendLine("  this program, sending master-key-signed requests exactly as the SDK builds them (`authorization`,");
        text.AppendLine("  `x-ms-date`, `x-ms-documentdb-partitionkey`), to both servers alike. The SDK itself is not in the loop,");
        text.AppendLine("  so its client-side cost does not hide the server's. Client and servers share the machine's cores.");
        text.AppendLine("- Baseline and emulator are measured in short alternating slices, so that load from other programs on");
        text.AppendLine("  the machine affects both alike; the req/s columns average the slices, the ratio divides those averages.");
        text.AppendLine("- The emulator verifies every signature, hashes the partition key, looks the item up or runs the query");
        text.AppendLine("  on one physical partition, charges RU and records metrics and request timings. Its latency model is");
        text.AppendLine("  set to zero and its throughput to 10,000,000 RU/s for the run, so neither delay nor throttling is");
        text.AppendLine("  counted: the figure is the emulator's own processing capacity.");
        text.AppendLine("- Server CPU per request is the server process's CPU time during the measured slices divided by the");
        text.AppendLine("  requests completed.");
        text.AppendLine("- Data: 1,000 utilization items (20 owners × 5 months × 10) in a container partitioned by `/ownerId`");
        text.AppendLine("  with 9 physical partitions. The query is the case study's");
        text.AppendLine("  `SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month`, scoped by its");
        text.AppendLine("  partition key, returning 10 items.");
        text.AppendLine(CultureInfo.InvariantCulture, $"- The cross-partition query is `SELECT * FROM c WHERE c.ownerId = @ownerId` over the same items in a second");
        text.AppendLine(CultureInfo.InvariantCulture, $"  container partitioned by `/partitionKey` (each item's own id) with {shape.Partitions} physical partitions, so an owner's");
        text.AppendLine(CultureInfo.InvariantCulture, $"  {shape.ItemsPerQuery} items lie in all of them. It is sent as the JavaScript SDK sends it: no partition key or range,");
        text.AppendLine(CultureInfo.InvariantCulture, $"  `x-ms-documentdb-query-enablecrosspartition: true`, `x-ms-max-item-count: {shape.PageSize}` (`maxItemCount: {shape.PageSize}`), and each page's");
        text.AppendLine("  `x-ms-continuation` sent back for the next page until there is none. The gateway serves it, reading the");
        text.AppendLine("  partitions in range order and charging each one visited. Each connection pages one query to its end,");
        text.AppendLine("  then starts the next; the req/s and CPU columns count pages, the line below the table whole queries.");
        text.AppendLine("- The baseline answers GET with the stored item and POST with the query page the emulator returned,");
        text.AppendLine("  byte for byte; for the cross-partition query, the page and continuation the emulator returned for that");
        text.AppendLine("  query and continuation (recorded before the run), so both servers answer every page alike.");
        return text.ToString();
    }

    private static void Row(StringBuilder text, string operation, Comparison c) =>
        text.AppendLine(CultureInfo.InvariantCulture,
            $"| {operation} | {c.Emulator.RequestsPerSecond:N0} | {c.EmulatorBestRequestsPerSecond:N0} | {c.Baseline.RequestsPerSecond:N0} | {c.Ratio:0.00} | {c.Emulator.ServerCpuMicrosecondsPerRequest:0} | {c.Baseline.ServerCpuMicrosecondsPerRequest:0} |");
}
