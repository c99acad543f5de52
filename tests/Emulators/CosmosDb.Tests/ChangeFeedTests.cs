using System.Collections.Concurrent;
using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The change feed in latest-version mode as the official .NET SDK reads it: per physical partition,
/// each changed item once in its latest version, in write order, resumable from a continuation;
/// deletes are not in the feed; "nothing new" is 304 Not Modified. And the change feed processor on top.
/// </summary>
public sealed class ChangeFeedTests() : EmulatorTest(physicalPartitions: Partitions)
{
    private const int Partitions = 4;

    public sealed record Delivery(string Id, string OwnerId, int Version);

    private async Task<Container> SeededAsync(string id, int count, CosmosClient? client = null)
    {
        var container = await CosmosTestHost.ContainerAsync(client ?? Client, "/ownerId", id: id);
        for (var i = 0; i < count; i++)
        {
            await container.CreateItemAsync(new Delivery($"d{i}", $"owner-{i % 7}", 1), new PartitionKey($"owner-{i % 7}"));
        }

        return container;
    }

    /// <summary>Reads until the feed answers 304 Not Modified; returns the items and the last continuation.</summary>
    private static async Task<(List<Delivery> Items, int Pages, string Continuation)> DrainAsync(FeedIterator<Delivery> iterator)
    {
        var items = new List<Delivery>();
        var pages = 0;
        while (true)
        {
            var page = await iterator.ReadNextAsync();
            if (page.StatusCode == HttpStatusCode.NotModified)
            {
                return (items, pages, page.ContinuationToken);
            }

            Assert.Equal(HttpStatusCode.OK, page.StatusCode);
            Assert.True(page.RequestCharge > 0);
            pages++;
            items.AddRange(page);
        }
    }

    [Fact]
    public async Task From_the_beginning_each_item_comes_once_in_its_latest_version_and_deletes_do_not_appear()
    {
        var container = await SeededAsync("beginning", 30);
        for (var i = 0; i < 5; i++)
        {
            await container.ReplaceItemAsync(new Delivery($"d{i}", $"owner-{i % 7}", 2), $"d{i}", new PartitionKey($"owner-{i % 7}"));
        }

        await container.DeleteItemAsync<Delivery>("d29", new PartitionKey($"owner-{29 % 7}"));

        var (items, pages, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(
            ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion, new ChangeFeedRequestOptions { PageSizeHint = 4 }));

        Assert.Equal(29, items.Count);
        Assert.Equal(29, items.Select(i => i.Id).Distinct().Count());
        Assert.DoesNotContain(items, i => i.Id == "d29");
        Assert.All(items, i => Assert.Equal(int.Parse(i.Id[1..]) < 5 ? 2 : 1, i.Version));
        Assert.True(pages > Partitions, $"page size 4 over 29 items in {Partitions} partitions takes several pages per partition (took {pages})");

        // Within a logical partition the feed keeps write order: the replaced items come after the others.
        var owner0 = items.Where(i => i.OwnerId == "owner-0").Select(i => i.Id).ToList();
        Assert.Equal(["d7", "d14", "d21", "d28", "d0"], owner0);
    }

    [Fact]
    public async Task A_continuation_resumes_a_new_iterator_with_only_the_later_changes()
    {
        var container = await SeededAsync("resume", 12);
        var (first, _, continuation) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.Incremental));
        Assert.Equal(12, first.Count);

        await container.UpsertItemAsync(new Delivery("d3", "owner-3", 5), new PartitionKey("owner-3"));
        await container.CreateItemAsync(new Delivery("n1", "owner-1", 1), new PartitionKey("owner-1"));
        await container.CreateItemAsync(new Delivery("n2", "owner-9", 1), new PartitionKey("owner-9"));

        var resumed = container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.ContinuationToken(continuation), ChangeFeedMode.Incremental);
        var (later, _, next) = await DrainAsync(resumed);
        Assert.Equal(["d3", "n1", "n2"], later.Select(i => i.Id).Order());
        Assert.Equal(5, later.Single(i => i.Id == "d3").Version);

        // Nothing changed since: 304 again, from a third iterator too.
        var (none, _, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.ContinuationToken(next), ChangeFeedMode.Incremental));
        Assert.Empty(none);
    }

    [Fact]
    public async Task From_now_only_changes_after_the_first_read_are_returned()
    {
        var container = await SeededAsync("now", 10);
        var iterator = container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Now(), ChangeFeedMode.LatestVersion);
        var (before, _, _) = await DrainAsync(iterator);
        Assert.Empty(before);

        await container.CreateItemAsync(new Delivery("late-1", "owner-2", 1), new PartitionKey("owner-2"));
        await container.CreateItemAsync(new Delivery("late-2", "owner-5", 1), new PartitionKey("owner-5"));
        var (after, _, _) = await DrainAsync(iterator);
        Assert.Equal(["late-1", "late-2"], after.Select(i => i.Id).Order());
    }

    [Fact]
    public async Task From_a_point_in_time_only_items_changed_at_or_after_it_are_returned()
    {
        // Items' _ts comes from the emulator's clock (one-second resolution): a fake clock moved past the
        // early items' second replaces waiting for the real one. The SDK signs with the real time, so it starts there.
        var time = new Microsoft.Extensions.Time.Testing.FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var emulator = await CosmosTestHost.StartAsync(o =>
        {
            o.DefaultPhysicalPartitions = Partitions;
            o.TimeProvider = time;
        });
        using var client = CosmosTestHost.Client(emulator);
        var container = await SeededAsync("time", 6, client);
        var earlySecond = time.GetUtcNow().ToUnixTimeSeconds();
        var lastEarly = (await container.ReadItemAsync<Dictionary<string, object>>("d5", new PartitionKey("owner-5"))).Resource;
        Assert.Equal(earlySecond, Convert.ToInt64(lastEarly["_ts"], System.Globalization.CultureInfo.InvariantCulture));

        time.Advance(TimeSpan.FromSeconds(1));
        await container.CreateItemAsync(new Delivery("t1", "owner-1", 1), new PartitionKey("owner-1"));
        await container.ReplaceItemAsync(new Delivery("d2", "owner-2", 3), "d2", new PartitionKey("owner-2"));

        var start = DateTimeOffset.FromUnixTimeSeconds(earlySecond + 1).UtcDateTime;
        var (items, _, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Time(start), ChangeFeedMode.LatestVersion));
        Assert.Equal(["d2", "t1"], items.Select(i => i.Id).Order());
    }

    [Fact]
    public async Task Each_feed_range_reads_its_own_items_and_together_they_read_the_container()
    {
        var container = await SeededAsync("ranges", 40);
        var ranges = await container.GetFeedRangesAsync();
        Assert.Equal(Partitions, ranges.Count);

        var seen = new List<string>();
        var continuations = new List<(FeedRange Range, string Continuation)>();
        foreach (var range in ranges)
        {
            var (items, _, continuation) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(
                ChangeFeedStartFrom.Beginning(range), ChangeFeedMode.LatestVersion, new ChangeFeedRequestOptions { PageSizeHint = 5 }));
            seen.AddRange(items.Select(i => i.Id));
            continuations.Add((range, continuation));
        }

        Assert.Equal(40, seen.Count);
        Assert.Equal(40, seen.Distinct().Count());

        // One new item: exactly one range's continuation sees it.
        await container.CreateItemAsync(new Delivery("x1", "owner-4", 1), new PartitionKey("owner-4"));
        var found = new List<string>();
        foreach (var (_, continuation) in continuations)
        {
            var (items, _, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.ContinuationToken(continuation), ChangeFeedMode.LatestVersion));
            found.AddRange(items.Select(i => i.Id));
        }

        Assert.Equal(["x1"], found);

        // A logical partition as a feed range.
        var (owner4, _, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(
            ChangeFeedStartFrom.Beginning(FeedRange.FromPartitionKey(new PartitionKey("owner-4"))), ChangeFeedMode.LatestVersion));
        Assert.Equal(Enumerable.Range(0, 40).Where(i => i % 7 == 4).Select(i => $"d{i}").Append("x1").Order(), owner4.Select(i => i.Id).Order());
    }

    [Fact]
    public async Task Feed_ranges_that_cut_a_partition_in_two_read_disjoint_halves_of_it()
    {
        // The .NET SDK reads a feed range smaller than a physical partition with that partition's range id
        // plus x-ms-start-epk/x-ms-end-epk. Cut at the hash of one of the owners: inside a partition.
        var container = await SeededAsync("subranges", 40);
        static string Epk(string owner)
        {
            return Partitioning.EffectivePartitionKey.ComputeV2(new Partitioning.PartitionKeyComponent(Partitioning.PartitionKeyKind.String, Text: owner));
        }

        var middle = Enumerable.Range(0, 7).Select(i => Epk($"owner-{i}")).Order(StringComparer.Ordinal).ElementAt(3);
        var lower = FeedRange.FromJsonString($$$"""{"Range":{"min":"","max":"{{{middle}}}","isMinInclusive":true,"isMaxInclusive":false}}""");
        var upper = FeedRange.FromJsonString($$$"""{"Range":{"min":"{{{middle}}}","max":"FF","isMinInclusive":true,"isMaxInclusive":false}}""");

        var (low, _, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Beginning(lower), ChangeFeedMode.LatestVersion));
        var (high, _, _) = await DrainAsync(container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Beginning(upper), ChangeFeedMode.LatestVersion));

        Assert.All(low, i => Assert.True(string.CompareOrdinal(Epk(i.OwnerId), middle) < 0));
        Assert.All(high, i => Assert.True(string.CompareOrdinal(Epk(i.OwnerId), middle) >= 0));
        Assert.Equal(Enumerable.Range(0, 40).Select(i => $"d{i}").Order(), low.Concat(high).Select(i => i.Id).Order());
        Assert.NotEmpty(low);
        Assert.NotEmpty(high);
    }

    [Fact]
    public async Task A_change_feed_page_costs_what_a_read_feed_page_of_the_same_size_costs()
    {
        var container = await SeededAsync("charges", 20);
        var range = (await container.GetFeedRangesAsync())[0];

        var changes = await container.GetChangeFeedIterator<Delivery>(
            ChangeFeedStartFrom.Beginning(range), ChangeFeedMode.LatestVersion, new ChangeFeedRequestOptions { PageSizeHint = 100 }).ReadNextAsync();
        var feed = await container.GetItemQueryIterator<Delivery>(range, queryDefinition: null, requestOptions: new QueryRequestOptions { MaxItemCount = 100 }).ReadNextAsync();

        Assert.Equal(HttpStatusCode.OK, changes.StatusCode);
        Assert.Equal(feed.Count, changes.Count);
        Assert.Equal(feed.RequestCharge, changes.RequestCharge);
    }

    [Fact]
    public async Task Change_feed_reads_over_the_partition_budget_are_throttled_like_other_reads()
    {
        // A clock that does not move: the partitions' budgets never refill, so the 429 does not depend on this machine's speed.
        var frozen = new Microsoft.Extensions.Time.Testing.FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var emulator = await CosmosTestHost.StartAsync(o =>
        {
            o.DefaultPhysicalPartitions = 1;
            o.TimeProvider = frozen;
        });
        using var client = CosmosTestHost.Client(emulator, o => o.MaxRetryAttemptsOnRateLimitedRequests = 0);
        var container = await CosmosTestHost.ContainerAsync(client, "/ownerId", throughput: 400, id: "throttled");
        await container.CreateItemAsync(new Delivery("d0", "owner-0", 1), new PartitionKey("owner-0"));

        CosmosException? error = null;
        for (var i = 0; i < 1000 && error is null; i++)
        {
            try
            {
                await container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion).ReadNextAsync();
            }
            catch (CosmosException e)
            {
                error = e;
            }
        }

        Assert.NotNull(error);
        Assert.Equal(HttpStatusCode.TooManyRequests, error.StatusCode);
        Assert.Equal(3200, error.SubStatusCode);
    }

    [Fact]
    public async Task All_versions_and_deletes_mode_is_refused_with_a_400_that_names_it()
    {
        var container = await SeededAsync("avad", 2);
        var iterator = container.GetChangeFeedIterator<Delivery>(ChangeFeedStartFrom.Now(), ChangeFeedMode.AllVersionsAndDeletes);
        var error = await Assert.ThrowsAsync<CosmosException>(() => iterator.ReadNextAsync());
        Assert.Equal(HttpStatusCode.BadRequest, error.StatusCode);
        Assert.Contains("all versions and deletes", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_change_feed_processor_delivers_every_change_once()
    {
        var container = await SeededAsync("monitored", 25);
        var leases = (await container.Database.CreateContainerIfNotExistsAsync(new ContainerProperties("leases", "/id"), 1000)).Container;

        var deliveries = new ConcurrentDictionary<string, int>();
        var batches = 0;
        var all = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        const int expected = 35;
        var processor = Processor(container, leases, "worker-1", changes =>
        {
            Interlocked.Increment(ref batches);
            foreach (var change in changes)
            {
                deliveries.AddOrUpdate(change.Id, 1, (_, n) => n + 1);
            }

            if (deliveries.Count >= expected)
            {
                all.TrySetResult();
            }
        });

        await processor.StartAsync();
        try
        {
            for (var i = 25; i < expected; i++)
            {
                await container.CreateItemAsync(new Delivery($"d{i}", $"owner-{i % 7}", 1), new PartitionKey($"owner-{i % 7}"));
            }

            // A generous bound only against a hang: the processor signals when it has seen every item.
            await all.Task.WaitAsync(TimeSpan.FromSeconds(90));
        }
        finally
        {
            await processor.StopAsync();
        }

        Assert.Equal(expected, deliveries.Count);
        Assert.All(deliveries, d => Assert.Equal(1, d.Value));
        Assert.True(batches >= 6, $"at most 6 items a batch over {expected} items (had {batches} batches)");
    }

    [Fact]
    public async Task A_restarted_change_feed_processor_resumes_where_its_leases_stopped()
    {
        var container = await SeededAsync("restarted", 21);
        var leases = (await container.Database.CreateContainerIfNotExistsAsync(new ContainerProperties("leases", "/id"), 1000)).Container;

        var first = new ConcurrentDictionary<string, int>();
        var firstDone = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var processor = Processor(container, leases, "worker-1", changes =>
        {
            foreach (var change in changes)
            {
                first.AddOrUpdate(change.Id, 1, (_, n) => n + 1);
            }

            if (first.Count >= 21)
            {
                firstDone.TrySetResult();
            }
        });
        await processor.StartAsync();
        await firstDone.Task.WaitAsync(TimeSpan.FromSeconds(90));
        await processor.StopAsync();

        // Written while no processor runs: one replace and an item for every owner, so every partition that
        // holds an old item also has a later change.
        await container.ReplaceItemAsync(new Delivery("d3", "owner-3", 2), "d3", new PartitionKey("owner-3"));
        for (var i = 21; i < 28; i++)
        {
            await container.CreateItemAsync(new Delivery($"d{i}", $"owner-{i % 7}", 1), new PartitionKey($"owner-{i % 7}"));
        }

        var second = new ConcurrentQueue<Delivery>();
        var secondDone = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var restarted = Processor(container, leases, "worker-2", changes =>
        {
            foreach (var change in changes)
            {
                second.Enqueue(change);
            }

            if (second.Select(d => d.Id).Distinct().Count() >= 8)
            {
                secondDone.TrySetResult();
            }
        });
        await restarted.StartAsync();
        try
        {
            await secondDone.Task.WaitAsync(TimeSpan.FromSeconds(90));
        }
        finally
        {
            await restarted.StopAsync();
        }

        Assert.Equal(21, first.Count);
        Assert.All(first, d => Assert.Equal(1, d.Value));
        // Each partition's feed is in write order, so an old item delivered again would have come before
        // that partition's later changes, all of which have arrived: the restarted processor went on from
        // its leases' continuations, not from the start time.
        Assert.Equal(["d21", "d22", "d23", "d24", "d25", "d26", "d27", "d3"], second.Select(d => d.Id).Order());
        Assert.Equal(2, second.Single(d => d.Id == "d3").Version);
    }

    private static ChangeFeedProcessor Processor(Container container, Container leases, string instance, Action<IReadOnlyCollection<Delivery>> handle) =>
        container
            .GetChangeFeedProcessorBuilder<Delivery>("deliveries", (IReadOnlyCollection<Delivery> changes, CancellationToken _) =>
            {
                handle(changes);
                return Task.CompletedTask;
            })
            .WithInstanceName(instance)
            .WithLeaseContainer(leases)
            .WithStartTime(DateTime.MinValue.ToUniversalTime())
            .WithPollInterval(TimeSpan.FromMilliseconds(100))
            .WithMaxItems(6)
            .Build();
}
