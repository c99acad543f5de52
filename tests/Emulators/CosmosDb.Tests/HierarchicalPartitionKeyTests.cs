using System.Net;
using System.Net.Http.Headers;
using System.Reflection;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// Hierarchical partition keys (kind MultiHash, up to three paths) through the .NET SDK: items are
/// placed by the effective partition key the SDK computes (each component hashed on its own with
/// version 2, the hashes concatenated); point operations need the complete key, and a prefix is
/// refused with 400 / sub-status 1001 as the service refuses it ("The partition key supplied in
/// x-ms-partitionkey header has fewer components than defined in the the collection"); queries and
/// the change feed scoped to a prefix read only the physical partitions the prefix can fall in
/// (docs: "Hierarchical partition keys in Azure Cosmos DB", routing of prefix queries).
/// </summary>
public sealed class HierarchicalPartitionKeyTests() : EmulatorTest(physicalPartitions: Partitions)
{
    private const int Partitions = 8;
    private const int Count = 96;
    private static readonly string[] Paths = ["/tenantId", "/userId", "/sessionId"];
    private Container _container = null!;
    private List<Session> _sessions = null!;

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        var database = (await Client.CreateDatabaseIfNotExistsAsync("test")).Database;
        _container = (await database.CreateContainerIfNotExistsAsync(new ContainerProperties("sessions", Paths), 100_000)).Container;
        _sessions = [.. Enumerable.Range(0, Count).Select(i => new Session($"s{i}", $"tenant-{i % 8}", $"user-{i / 8 % 4}", $"session-{i / 32}", i))];
        foreach (var session in _sessions)
        {
            // The SDK takes the key from the item, using the container's three paths.
            await _container.CreateItemAsync(session);
        }
    }

    public sealed record Session(string Id, string TenantId, string UserId, string SessionId, int N);

    [Fact]
    public async Task The_container_reports_its_hierarchical_definition_and_the_sdk_accepts_it_again()
    {
        var properties = (await _container.ReadContainerAsync()).Resource;
        var again = await _container.Database.CreateContainerIfNotExistsAsync(new ContainerProperties("sessions", Paths), 100_000);

        Assert.Equal(Paths, properties.PartitionKeyPaths);
        Assert.Equal(PartitionKeyDefinitionVersion.V2, properties.PartitionKeyDefinitionVersion);
        Assert.Equal(HttpStatusCode.OK, again.StatusCode);
        var tooDeep = await Assert.ThrowsAsync<CosmosException>(() =>
            _container.Database.CreateContainerAsync(new ContainerProperties("four-levels", ["/a", "/b", "/c", "/d"]), 400));
        Assert.Equal(HttpStatusCode.BadRequest, tooDeep.StatusCode);
    }

    [Fact]
    public async Task Effective_partition_keys_and_prefix_ranges_match_the_sdks_own()
    {
        var properties = (await _container.ReadContainerAsync()).Resource;
        var definition = new PartitionKeyDefinition(Paths, hierarchical: true, version: 2);
        var random = new Random(7);
        for (var i = 0; i < 3000; i++)
        {
            var builder = new PartitionKeyBuilder();
            var levels = 1 + (i % 3);
            for (var level = 0; level < levels; level++)
            {
                // A key of nothing but undefined components is PartitionKey.None, which the SDK resolves
                // from the container instead of sending it; the first component is never undefined.
                var kind = random.Next(8);
                switch (level == 0 && kind == 5 ? 0 : kind)
                {
                    case 0: builder.Add(Guid.NewGuid().ToString()); break;
                    case 1: builder.Add(random.Next(-1_000_000, 1_000_000)); break;
                    case 2: builder.Add(Math.Round((random.NextDouble() - 0.5) * 1e6, 3)); break;
                    case 3: builder.Add(random.Next(2) == 0); break;
                    case 4: builder.AddNullValue(); break;
                    case 5: builder.AddNoneType(); break;
                    case 6: builder.Add("ключ-" + random.Next() + "-ü-漢字"); break;
                    default: builder.Add(new string('k', 90 + random.Next(30)) + i); break;
                }
            }

            var key = builder.Build();
            // The emulator parses the header the SDK would send for this key.
            Assert.True(PartitionKeyValue.TryParseHeader(key.ToString(), out var value, out var error), $"{key}: {error}");
            var (epk, isPrefix) = definition.Locate(value);
            Assert.Equal(levels < Paths.Length, isPrefix);
            if (isPrefix)
            {
                var (min, max) = SdkPrefixRange(key, properties);
                Assert.Equal(min, epk);
                Assert.Equal(max, PartitionKeyDefinition.PrefixRange(epk).MaxExclusive);
            }
            else
            {
                Assert.Equal(SdkEffectivePartitionKey(key, properties), epk);
            }
        }
    }

    [Fact]
    public async Task Every_item_lives_in_the_physical_partition_the_sdk_hashes_its_key_to()
    {
        var properties = (await _container.ReadContainerAsync()).Resource;
        var placed = 0;
        var populated = 0;
        foreach (var feedRange in await _container.GetFeedRangesAsync())
        {
            var (min, max) = Bounds(feedRange);
            var items = await _container.GetItemQueryIterator<Session>(feedRange, new QueryDefinition("SELECT * FROM c")).ToListAsync();
            populated += items.Count > 0 ? 1 : 0;
            foreach (var item in items)
            {
                var epk = SdkEffectivePartitionKey(FullKey(item), properties);
                Assert.True(string.CompareOrdinal(epk, min) >= 0 && string.CompareOrdinal(epk, max) < 0,
                    $"{item.Id} hashes to {epk} in the SDK but the emulator stored it in [{min}, {max}).");
                placed++;
            }
        }

        Assert.Equal(Count, placed);
        Assert.True(populated > 1, "eight tenants spread over several partitions");
    }

    [Fact]
    public async Task Point_operations_need_the_complete_key_and_a_prefix_is_400_1001()
    {
        var session = _sessions[5];
        var read = await _container.ReadItemAsync<Session>(session.Id, FullKey(session));
        Assert.Equal(session, read.Resource);

        foreach (var prefix in new[] { Key(session.TenantId), Key(session.TenantId, session.UserId) })
        {
            var errors = new List<CosmosException>
            {
                await Assert.ThrowsAsync<CosmosException>(() => _container.ReadItemAsync<Session>(session.Id, prefix)),
                await Assert.ThrowsAsync<CosmosException>(() => _container.ReplaceItemAsync(session with { N = -1 }, session.Id, prefix)),
                await Assert.ThrowsAsync<CosmosException>(() => _container.UpsertItemAsync(session with { N = -1 }, prefix)),
                await Assert.ThrowsAsync<CosmosException>(() => _container.DeleteItemAsync<Session>(session.Id, prefix)),
                await Assert.ThrowsAsync<CosmosException>(() => _container.PatchItemAsync<Session>(session.Id, prefix, [PatchOperation.Set("/n", -1)])),
                await Assert.ThrowsAsync<CosmosException>(() => _container.CreateItemAsync(session with { Id = "new" }, prefix)),
            };
            Assert.All(errors, e =>
            {
                Assert.Equal(HttpStatusCode.BadRequest, e.StatusCode);
                Assert.Equal(1001, e.SubStatusCode);
                Assert.Contains("fewer components", e.Message, StringComparison.Ordinal);
            });
        }

        // A complete key that is not the item's is the partition key mismatch of any container.
        var mismatch = await Assert.ThrowsAsync<CosmosException>(() =>
            _container.CreateItemAsync(session with { Id = "other" }, Key(session.TenantId, session.UserId, "session-x")));
        Assert.Equal(HttpStatusCode.BadRequest, mismatch.StatusCode);
        Assert.Equal(1001, mismatch.SubStatusCode);
        Assert.Equal(session, (await _container.ReadItemAsync<Session>(session.Id, FullKey(session))).Resource);
    }

    [Fact]
    public async Task A_query_scoped_to_a_prefix_reads_only_the_partition_the_prefix_hashes_to()
    {
        var properties = (await _container.ReadContainerAsync()).Resource;
        foreach (var (key, expected) in new[]
        {
            (Key("tenant-3"), _sessions.Where(s => s.TenantId == "tenant-3")),
            (Key("tenant-3", "user-2"), _sessions.Where(s => s.TenantId == "tenant-3" && s.UserId == "user-2")),
            (Key("tenant-3", "user-2", "session-1"), _sessions.Where(s => s.TenantId == "tenant-3" && s.UserId == "user-2" && s.SessionId == "session-1")),
        })
        {
            var home = PartitionOf(SdkPrefixRange(Key("tenant-3"), properties).Min);
            var before = Emulator.LastRequestSequence;
            var iterator = _container.GetItemQueryIterator<Session>("SELECT * FROM c",
                requestOptions: new QueryRequestOptions { PartitionKey = key, MaxItemCount = 2 });
            var results = new List<Session>();
            double charge = 0;
            while (iterator.HasMoreResults)
            {
                var page = await iterator.ReadNextAsync();
                results.AddRange(page);
                charge += page.RequestCharge;
            }

            Assert.Equal(expected.Select(s => s.Id).Order(), results.Select(s => s.Id).Order());
            Assert.NotEmpty(results);
            var queries = Emulator.GetRequests(before).Where(r => r.Operation == "Query").ToList();
            Assert.NotEmpty(queries);
            Assert.All(queries, r => Assert.Equal(home, r.PartitionKeyRangeId));
            // Charged as any page of one partition: QueryPerPartition (3.2) a page plus QueryPerDocument (0.02) an item.
            Assert.Equal((queries.Count * 3.2) + (results.Count * 0.02), charge, 2);
        }
    }

    [Fact]
    public async Task Order_by_and_aggregates_within_a_prefix_are_answered_from_its_partition()
    {
        var prefix = Key("tenant-5", "user-1");
        var mine = _sessions.Where(s => s.TenantId == "tenant-5" && s.UserId == "user-1").ToList();

        var ordered = await _container.GetItemQueryIterator<int>("SELECT VALUE c.n FROM c ORDER BY c.n DESC",
            requestOptions: new QueryRequestOptions { PartitionKey = prefix, MaxItemCount = 1 }).ToListAsync();
        var count = await _container.GetItemQueryIterator<int>("SELECT VALUE COUNT(1) FROM c",
            requestOptions: new QueryRequestOptions { PartitionKey = Key("tenant-5") }).ToListAsync();

        Assert.Equal(mine.Select(s => s.N).OrderDescending(), ordered);
        Assert.Equal([_sessions.Count(s => s.TenantId == "tenant-5")], count);
    }

    [Fact]
    public async Task A_where_clause_that_pins_the_leading_paths_narrows_the_query_plan_to_the_prefix()
    {
        var properties = (await _container.ReadContainerAsync()).Resource;
        var (tenantMin, tenantMax) = SdkPrefixRange(Key("tenant-2"), properties);
        var (pairMin, pairMax) = SdkPrefixRange(Key("tenant-2", "user-3"), properties);
        var full = SdkEffectivePartitionKey(Key("tenant-2", "user-3", "session-2"), properties);

        Assert.Equal(new[] { (tenantMin, tenantMax, false) }, await PlannedRangesAsync("SELECT * FROM c WHERE c.tenantId = 'tenant-2'"));
        Assert.Equal(new[] { (pairMin, pairMax, false) }, await PlannedRangesAsync("SELECT * FROM c WHERE c.userId = 'user-3' AND c.tenantId = 'tenant-2' AND c.n > 3"));
        Assert.Equal(new[] { (full, full, true) }, await PlannedRangesAsync(
            "SELECT * FROM c WHERE c.tenantId = 'tenant-2' AND c.userId = 'user-3' AND c.sessionId = 'session-2'"));
        // Only the middle of the hierarchy: a fan-out, as in the service.
        Assert.Equal(new[] { ("", "FF", false) }, await PlannedRangesAsync("SELECT * FROM c WHERE c.userId = 'user-3'"));

        // The SDK follows the plan: the pinned tenant is read from its partition only, the middle level from all.
        var before = Emulator.LastRequestSequence;
        var tenant = await _container.GetItemQueryIterator<Session>("SELECT * FROM c WHERE c.tenantId = 'tenant-2'").ToListAsync();
        var narrowed = Emulator.GetRequests(before).Where(r => r.Operation == "Query").ToList();
        before = Emulator.LastRequestSequence;
        var users = await _container.GetItemQueryIterator<Session>("SELECT * FROM c WHERE c.userId = 'user-3'").ToListAsync();
        var fannedOut = Emulator.GetRequests(before).Where(r => r.Operation == "Query").ToList();

        Assert.Equal(_sessions.Count(s => s.TenantId == "tenant-2"), tenant.Count);
        Assert.Equal(PartitionOf(tenantMin), Assert.Single(narrowed).PartitionKeyRangeId);
        Assert.Equal(_sessions.Count(s => s.UserId == "user-3"), users.Count);
        Assert.Equal(Partitions, fannedOut.Select(r => r.PartitionKeyRangeId).Distinct().Count());
    }

    [Fact]
    public async Task The_change_feed_of_a_prefix_reads_its_partition_and_returns_only_its_items()
    {
        var properties = (await _container.ReadContainerAsync()).Resource;
        var prefix = Key("tenant-6");
        var home = PartitionOf(SdkPrefixRange(prefix, properties).Min);
        var before = Emulator.LastRequestSequence;

        var iterator = _container.GetChangeFeedIterator<Session>(
            ChangeFeedStartFrom.Beginning(FeedRange.FromPartitionKey(prefix)), ChangeFeedMode.LatestVersion, new ChangeFeedRequestOptions { PageSizeHint = 5 });
        var changes = new List<Session>();
        while (true)
        {
            var page = await iterator.ReadNextAsync();
            if (page.StatusCode == HttpStatusCode.NotModified)
            {
                break;
            }

            changes.AddRange(page);
        }

        Assert.Equal(_sessions.Where(s => s.TenantId == "tenant-6").Select(s => s.Id).Order(), changes.Select(s => s.Id).Order());
        var reads = Emulator.GetRequests(before).Where(r => r.Operation == "ReadChangeFeed").ToList();
        Assert.NotEmpty(reads);
        Assert.All(reads, r => Assert.Equal(home, r.PartitionKeyRangeId));
    }

    [Fact]
    public async Task A_transactional_batch_takes_the_complete_key_and_a_prefix_is_refused()
    {
        var key = Key("tenant-9", "user-9", "session-9");
        using var response = await _container.CreateTransactionalBatch(key)
            .CreateItem(new Session("b1", "tenant-9", "user-9", "session-9", 1))
            .CreateItem(new Session("b2", "tenant-9", "user-9", "session-9", 2))
            .ReadItem("b1")
            .ExecuteAsync();
        Assert.True(response.IsSuccessStatusCode, response.ErrorMessage);
        Assert.Equal([HttpStatusCode.Created, HttpStatusCode.Created, HttpStatusCode.OK], response.Select(r => r.StatusCode));

        using var refused = await _container.CreateTransactionalBatch(Key("tenant-9"))
            .CreateItem(new Session("b3", "tenant-9", "user-9", "session-9", 3))
            .ExecuteAsync();
        Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
        await Assert.ThrowsAsync<CosmosException>(() => _container.ReadItemAsync<Session>("b3", key));
    }

    [Fact]
    public async Task Bulk_writes_route_every_operation_by_its_complete_key()
    {
        using var bulkClient = CosmosTestHost.Client(Emulator, o => o.AllowBulkExecution = true);
        var container = bulkClient.GetContainer("test", "sessions");
        var items = Enumerable.Range(0, 60).Select(i => new Session($"bulk-{i}", $"tenant-b{i % 5}", $"user-{i % 3}", "session-0", i)).ToList();

        var responses = await Task.WhenAll(items.Select(item => container.CreateItemAsync(item, FullKey(item))));

        Assert.All(responses, r => Assert.Equal(HttpStatusCode.Created, r.StatusCode));
        foreach (var item in items.Take(10))
        {
            Assert.Equal(item, (await _container.ReadItemAsync<Session>(item.Id, FullKey(item))).Resource);
        }
    }

    private static PartitionKey Key(params string[] components)
    {
        var builder = new PartitionKeyBuilder();
        foreach (var component in components)
        {
            builder.Add(component);
        }

        return builder.Build();
    }

    private static PartitionKey FullKey(Session session) => Key(session.TenantId, session.UserId, session.SessionId);

    private static (string Min, string Max) Bounds(FeedRange feedRange)
    {
        var range = JObject.Parse(feedRange.ToJsonString())["Range"]!;
        return ((string)range["min"]!, (string)range["max"]!);
    }

    /// <summary>The id of the physical partition whose range holds <paramref name="epk"/>, from the emulator's metrics.</summary>
    private string PartitionOf(string epk) =>
        Emulator.GetMetrics().Containers.Single(c => c.Container == "sessions").Partitions
            .Single(p => string.CompareOrdinal(epk, p.MinInclusive) >= 0 && string.CompareOrdinal(epk, p.MaxExclusive) < 0).Id;

    /// <summary>The query plan's ranges, as the gateway answers the plan request (min, max, max inclusive).</summary>
    private async Task<List<(string Min, string Max, bool MaxInclusive)>> PlannedRangesAsync(string query)
    {
        const string link = "dbs/test/colls/sessions";
        using var request = CosmosTestHost.SignedRequest(Emulator, HttpMethod.Post, link + "/docs", "docs", link);
        request.Content = new StringContent(JsonSerializer.Serialize(new { query }), Encoding.UTF8);
        request.Content.Headers.ContentType = new MediaTypeHeaderValue("application/query+json");
        request.Headers.TryAddWithoutValidation("x-ms-cosmos-is-query-plan-request", "True");
        using var http = new HttpClient();
        using var response = await http.SendAsync(request);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        using var plan = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        return [.. plan.RootElement.GetProperty("queryRanges").EnumerateArray().Select(r =>
            (r.GetProperty("min").GetString()!, r.GetProperty("max").GetString()!, r.GetProperty("isMaxInclusive").GetBoolean()))];
    }

    // The SDK's own effective partition key computations (internal API, reached by reflection).
    private static string SdkEffectivePartitionKey(PartitionKey key, ContainerProperties container)
    {
        var (internalKey, definition) = Internals(key, container);
        var method = internalKey.GetType().GetMethods(Flags).Single(m => m.Name == "GetEffectivePartitionKeyString" && m.GetParameters().Length == 2);
        return (string)method.Invoke(internalKey, [definition, true])!;
    }

    private static (string Min, string Max) SdkPrefixRange(PartitionKey key, ContainerProperties container)
    {
        var (internalKey, definition) = Internals(key, container);
        var method = internalKey.GetType().GetMethods(Flags).Single(m => m.Name == "GetEPKRangeForPrefixPartitionKey");
        var range = method.Invoke(internalKey, [definition])!;
        return ((string)range.GetType().GetProperty("Min")!.GetValue(range)!, (string)range.GetType().GetProperty("Max")!.GetValue(range)!);
    }

    private const BindingFlags Flags = BindingFlags.Instance | BindingFlags.Public | BindingFlags.NonPublic;

    private static (object InternalKey, object Definition) Internals(PartitionKey key, ContainerProperties container) =>
        (typeof(PartitionKey).GetProperty("InternalKey", Flags)!.GetValue(key)!,
            typeof(ContainerProperties).GetProperty("PartitionKey", Flags)!.GetValue(container)!);
}
