using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.TestSupport;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Scenario A steps 2 → 4 as the emulator records them: serial vs parallel fan-out (MaxConcurrency 0
/// vs -1) and the RU and call-count drop when the query carries the partition key. The modelled
/// latency is waited on a fake clock that the test moves only once the partition requests it expects
/// are all waiting on it, so the spans are the model's, however fast this machine is.
/// </summary>
public sealed class FanOutTests : EmulatorTest
{
    private const double PartitionLatencyMilliseconds = 50;

    // The SDK signs requests with the real time, so the fake clock starts there.
    private readonly FakeTimeProvider _time = new(DateTimeOffset.UtcNow);
    private readonly Configuration.LatencyOptions _latency = new() { FixedMilliseconds = 0, PerDocumentMilliseconds = 0, ThrottledMilliseconds = 0 };
    private readonly WaitCountingClock _clock;

    public FanOutTests()
        : base(physicalPartitions: ScenarioA.Partitions)
    {
        _clock = new WaitCountingClock(_time);
    }

    protected override void Configure(Configuration.CosmosEmulatorOptions options)
    {
        options.TimeProvider = _clock;
        options.Latency = _latency;
    }

    [Fact]
    public async Task Serial_fan_out_takes_the_sum_of_the_partitions_and_parallel_about_the_slowest()
    {
        var container = await ScenarioA.CreateAsync(Emulator, Client, "utilization", "/partitionKey", 100_000, _time);
        _latency.FixedMilliseconds = PartitionLatencyMilliseconds;

        var serial = new List<double>();
        var parallel = new List<double>();
        for (var run = 0; run < 3; run++)
        {
            serial.Add(await SpanAsync(() => QueryRequests(container, new QueryRequestOptions { MaxConcurrency = 0 }, waitingAtOnce: 1)));
            parallel.Add(await SpanAsync(() => QueryRequests(container, new QueryRequestOptions { MaxConcurrency = -1 }, waitingAtOnce: ScenarioA.Partitions)));
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
        var container = await ScenarioA.CreateAsync(Emulator, Client, "utilization", "/partitionKey", 100_000, _time);
        _latency.FixedMilliseconds = PartitionLatencyMilliseconds;

        var serial = await QueryRequests(container, new QueryRequestOptions { MaxConcurrency = 0 }, waitingAtOnce: 1);
        // Three partition requests waiting at once is overlap enough; the SDK may send more.
        var parallel = await QueryRequests(container, new QueryRequestOptions { MaxConcurrency = -1 }, waitingAtOnce: 3);

        Assert.Equal(1, MaxOverlap(serial));
        Assert.True(MaxOverlap(parallel) >= 3, $"Parallel fan-out should overlap partition requests (max overlap {MaxOverlap(parallel)}).");
    }

    [Fact]
    public async Task Utilization_query_costs_about_29_RU_fanned_out_and_3_4_RU_with_the_partition_key()
    {
        var crossPartition = await ScenarioA.CreateAsync(Emulator, Client, "utilization-cp", "/partitionKey", 100_000, _time);
        var singlePartition = await ScenarioA.CreateAsync(Emulator, Client, "utilization-sp", "/ownerId", 100_000, _time);

        var fannedOut = await ScenarioA.RunAsync(crossPartition, "owner-7");
        var before = Emulator.LastRequestSequence;
        var scoped = await ScenarioA.RunAsync(singlePartition, "owner-7", new QueryRequestOptions { PartitionKey = new PartitionKey("owner-7") });
        var scopedCalls = Emulator.GetRequests(before).Count(r => r.Operation == CosmosEmulatorOperations.Query);

        Assert.Equal(10, fannedOut.Sum(p => p.Count));
        Assert.Equal(10, scoped.Sum(p => p.Count));
        var fannedOutCharge = fannedOut.Sum(p => p.RequestCharge);
        var scopedCharge = scoped.Sum(p => p.RequestCharge);
        Assert.InRange(fannedOutCharge, 26, 32);
        Assert.InRange(scopedCharge, 3, 3.8);
        Assert.InRange(fannedOutCharge / scopedCharge, 7.5, 9.5);
        Assert.Equal(1, scopedCalls);
    }

    /// <summary>
    /// Runs the utilization query, moving the emulator's clock by the modelled latency each time
    /// <paramref name="waitingAtOnce"/> partition requests (or all those still to come) wait on it.
    /// </summary>
    private async Task<IReadOnlyList<EmulatorRequest>> QueryRequests(Container container, QueryRequestOptions options, int waitingAtOnce)
    {
        var before = Emulator.LastRequestSequence;
        var query = ScenarioA.RunAsync(container, "owner-3", options);
        int Answered() => Emulator.GetRequests(before).Count(r => r.Operation == CosmosEmulatorOperations.Query);
        bool Ready() => query.IsCompleted || (_clock.Waiting > 0 && _clock.Waiting >= Math.Min(waitingAtOnce, ScenarioA.Partitions - Answered()));
        while (!query.IsCompleted)
        {
            Assert.True(await Eventually.TrueAsync(Ready, TimeSpan.FromSeconds(60), TimeSpan.FromMilliseconds(5)), $"{_clock.Waiting} partition requests waiting, {Answered()} answered.");
            if (!query.IsCompleted)
            {
                _time.Advance(TimeSpan.FromMilliseconds(PartitionLatencyMilliseconds));
            }
        }

        var pages = await query;
        Assert.Equal(10, pages.Sum(p => p.Count));
        var queries = Emulator.GetRequests(before).Where(r => r.Operation == CosmosEmulatorOperations.Query).ToList();
        Assert.Equal(ScenarioA.Partitions, queries.Count);
        Assert.Single(queries.Select(r => r.CorrelatedActivityId).Distinct());
        return queries;
    }

    // How long the query took on the emulator's clock: only the modelled latencies move it.
    private async Task<double> SpanAsync(Func<Task<IReadOnlyList<EmulatorRequest>>> query)
    {
        var started = _time.GetUtcNow();
        var requests = await query();
        Assert.All(requests, r => Assert.Equal(PartitionLatencyMilliseconds, r.ModelledLatencyMilliseconds));
        return (_time.GetUtcNow() - started).TotalMilliseconds;
    }

    // Overlap in real time: requests that waited on the clock at once were in hand at once.

    private static int MaxOverlap(IReadOnlyList<EmulatorRequest> requests) =>
        requests.Max(r => requests.Count(o => o.StartMilliseconds < r.EndMilliseconds && r.StartMilliseconds < o.EndMilliseconds));
}

/// <summary>A fake clock that also says how many timers (the modelled latencies) are waiting on it.</summary>
internal sealed class WaitCountingClock(FakeTimeProvider time) : TimeProvider
{
    private int _waiting;

    public int Waiting => Volatile.Read(ref _waiting);

    public override TimeZoneInfo LocalTimeZone => time.LocalTimeZone;

    public override long TimestampFrequency => time.TimestampFrequency;

    public override DateTimeOffset GetUtcNow() => time.GetUtcNow();

    public override long GetTimestamp() => time.GetTimestamp();

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        Interlocked.Increment(ref _waiting);
        var timer = new CountedTimer(this);
        timer.Inner = time.CreateTimer(s => { timer.Settle(); callback(s); }, state, dueTime, period);
        return timer;
    }

    private sealed class CountedTimer(WaitCountingClock clock) : ITimer
    {
        private int _settled;

        public ITimer Inner { get; set; } = null!;

        public void Settle()
        {
            if (Interlocked.Exchange(ref _settled, 1) == 0)
            {
                Interlocked.Decrement(ref clock._waiting);
            }
        }

        public bool Change(TimeSpan dueTime, TimeSpan period) => Inner.Change(dueTime, period);

        public void Dispose()
        {
            Settle();
            Inner.Dispose();
        }

        public ValueTask DisposeAsync()
        {
            Settle();
            return Inner.DisposeAsync();
        }
    }
}
