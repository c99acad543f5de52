using DroneDelivery.Emulators.CosmosDb.Metrics;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Scenario A steps 2 → 4 as the emulator records them: serial vs parallel fan-out (MaxConcurrency 0
/// vs -1) and the RU and call-count drop when the query carries the partition key.
/// </summary>
public sealed class FanOutTests : IAsyncLifetime
{
    private const double PartitionLatencyMilliseconds = 50;
    private CosmosEmulator _emulator = null!;
    private CosmosClient _client = null!;

    public async Task InitializeAsync()
    {
        _emulator = await CosmosTestHost.StartAsync(o =>
        {
            o.DefaultPhysicalPartitions = ScenarioA.Partitions;
            o.Latency = new Configuration.LatencyOptions { FixedMilliseconds = PartitionLatencyMilliseconds, PerDocumentMilliseconds = 0 };
        });
        _client = CosmosTestHost.Client(_emulator);
    }

    public async Task DisposeAsync()
    {
        _client.Dispose();
        await _emulator.DisposeAsync();
    }

    [Fact]
    public async Task Serial_fan_out_takes_the_sum_of_the_partitions_and_parallel_about_the_slowest()
    {
        var container = await ScenarioA.CreateAsync(_emulator, _client, "utilization", "/partitionKey", 100_000);

        var serial = new List<double>();
        var parallel = new List<double>();
        for (var run = 0; run < 3; run++)
        {
            serial.Add(Span(await QueryRequests(container, new QueryRequestOptions { MaxConcurrency = 0 })));
            parallel.Add(Span(await QueryRequests(container, new QueryRequestOptions { MaxConcurrency = -1 })));
        }

        var serialMedian = serial.Order().ElementAt(1);
        var parallelMedian = parallel.Order().ElementAt(1);
        Assert.True(serialMedian >= ScenarioA.Partitions * PartitionLatencyMilliseconds,
            $"Nine partitions in series should take at least 9 × {PartitionLatencyMilliseconds} ms (took {serialMedian:0} ms).");
        var ratio = serialMedian / parallelMedian;
        Assert.True(ratio >= ScenarioA.Partitions / 2.0 && ratio <= ScenarioA.Partitions * 2.0,
            $"Serial/parallel fan-out should differ by about the partition count (9); serial {serialMedian:0} ms, parallel {parallelMedian:0} ms, ratio {ratio:0.0}.");
    }

    [Fact]
    public async Task Serial_requests_never_overlap_and_parallel_ones_do()
    {
        var container = await ScenarioA.CreateAsync(_emulator, _client, "utilization", "/partitionKey", 100_000);

        var serial = await QueryRequests(container, new QueryRequestOptions { MaxConcurrency = 0 });
        var parallel = await QueryRequests(container, new QueryRequestOptions { MaxConcurrency = -1 });

        Assert.Equal(1, MaxOverlap(serial));
        Assert.True(MaxOverlap(parallel) >= 3, $"Parallel fan-out should overlap partition requests (max overlap {MaxOverlap(parallel)}).");
    }

    [Fact]
    public async Task Utilization_query_costs_about_29_RU_fanned_out_and_3_4_RU_with_the_partition_key()
    {
        var crossPartition = await ScenarioA.CreateAsync(_emulator, _client, "utilization-cp", "/partitionKey", 100_000);
        var singlePartition = await ScenarioA.CreateAsync(_emulator, _client, "utilization-sp", "/ownerId", 100_000);

        var fannedOut = await ScenarioA.RunAsync(crossPartition, "owner-7");
        var before = _emulator.LastRequestSequence;
        var scoped = await ScenarioA.RunAsync(singlePartition, "owner-7", new QueryRequestOptions { PartitionKey = new PartitionKey("owner-7") });
        var scopedCalls = _emulator.GetRequests(before).Count(r => r.Operation == CosmosEmulatorOperations.Query);

        Assert.Equal(10, fannedOut.Sum(p => p.Count));
        Assert.Equal(10, scoped.Sum(p => p.Count));
        var fannedOutCharge = fannedOut.Sum(p => p.RequestCharge);
        var scopedCharge = scoped.Sum(p => p.RequestCharge);
        Assert.InRange(fannedOutCharge, 26, 32);
        Assert.InRange(scopedCharge, 3, 3.8);
        Assert.InRange(fannedOutCharge / scopedCharge, 7.5, 9.5);
        Assert.Equal(1, scopedCalls);
    }

    private async Task<IReadOnlyList<EmulatorRequest>> QueryRequests(Container container, QueryRequestOptions options)
    {
        var before = _emulator.LastRequestSequence;
        var pages = await ScenarioA.RunAsync(container, "owner-3", options);
        Assert.Equal(10, pages.Sum(p => p.Count));
        var queries = _emulator.GetRequests(before).Where(r => r.Operation == CosmosEmulatorOperations.Query).ToList();
        Assert.Equal(ScenarioA.Partitions, queries.Count);
        Assert.Single(queries.Select(r => r.CorrelatedActivityId).Distinct());
        return queries;
    }

    // From the first partition request's arrival to the last one's response, on the emulator's clock.
    private static double Span(IReadOnlyList<EmulatorRequest> requests) =>
        requests.Max(r => r.EndMilliseconds) - requests.Min(r => r.StartMilliseconds);

    private static int MaxOverlap(IReadOnlyList<EmulatorRequest> requests) =>
        requests.Max(r => requests.Count(o => o.StartMilliseconds < r.EndMilliseconds && r.StartMilliseconds < o.EndMilliseconds));
}
