using System.Net;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Faults;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The emulator's injected faults, met by the official SDK (Gateway mode): each fault is an answer the service
/// itself gives, and the SDK handles it as it does against the service — it retries a 449 itself; a 503, 408 or
/// 410/1002 in Gateway mode reaches the application, whose retry of an idempotent write (an upsert) ends with the
/// item once. Every fault injected is counted.
/// </summary>
public sealed class FaultInjectionTests
{
    private const string Items = "test/items";

    private static CosmosFaultOptions Faults(CosmosFaultKind kind, long maxCount, int delayMilliseconds = 10_000) => new()
    {
        Rules = [new CosmosFaultRule { Kind = kind, Container = Items, Probability = 1, MaxCount = maxCount, DelayMilliseconds = delayMilliseconds }],
    };

    private static long Injected(CosmosEmulator emulator, CosmosFaultKind kind) =>
        emulator.GetInjectedFaults().Where(f => f.Container == Items && f.Kind == kind.ToString()).Sum(f => f.Count);

    public sealed record Parcel(string Id, string Pk, int Version);

    [Fact]
    public async Task The_sdk_retries_a_449_retry_with_by_itself()
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var client = CosmosTestHost.Client(emulator);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        emulator.Faults.Configure(Faults(CosmosFaultKind.RetryWith, 2));

        var created = await container.UpsertItemAsync(new Parcel("p1", "a", 1), new PartitionKey("a"));

        Assert.Equal(HttpStatusCode.Created, created.StatusCode);
        Assert.Equal(2, Injected(emulator, CosmosFaultKind.RetryWith));
        Assert.Equal([new Parcel("p1", "a", 1)], await ReadAllAsync(container));
    }

    /// <summary>
    /// The SDK (3.64, Gateway mode, one endpoint) makes one call and hands these to the application: its
    /// ClientRetryPolicy retries a 503 only in another region, and in Gateway mode a 410/1002 is the gateway's to
    /// handle. Nothing was done, so the application's retry — the services answer 503 and their callers retry —
    /// stores the item once.
    /// </summary>
    [Theory]
    [InlineData(CosmosFaultKind.ServiceUnavailable, HttpStatusCode.ServiceUnavailable, 0)]
    [InlineData(CosmosFaultKind.RequestTimeout, HttpStatusCode.RequestTimeout, 0)]
    [InlineData(CosmosFaultKind.PartitionKeyRangeGone, HttpStatusCode.Gone, 1002)]
    public async Task A_request_refused_transiently_reaches_the_application_did_nothing_and_its_retry_stores_the_item_once(CosmosFaultKind kind, HttpStatusCode status, int subStatus)
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var client = CosmosTestHost.Client(emulator);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        await container.UpsertItemAsync(new Parcel("p1", "a", 1), new PartitionKey("a"));
        emulator.Faults.Configure(Faults(kind, 2));

        var write = await Assert.ThrowsAsync<CosmosException>(() => container.UpsertItemAsync(new Parcel("p1", "a", 2), new PartitionKey("a")));
        var read = await Assert.ThrowsAsync<CosmosException>(() => container.ReadItemAsync<Parcel>("p1", new PartitionKey("a")));
        Assert.Equal((status, subStatus), (write.StatusCode, write.SubStatusCode));
        Assert.Equal((status, subStatus), (read.StatusCode, read.SubStatusCode));
        Assert.Equal(2, Injected(emulator, kind));

        Assert.Equal([new Parcel("p1", "a", 1)], await ReadAllAsync(container));
        await container.UpsertItemAsync(new Parcel("p1", "a", 2), new PartitionKey("a"));
        Assert.Equal([new Parcel("p1", "a", 2)], await ReadAllAsync(container));
    }

    [Fact]
    public async Task A_write_whose_answer_comes_after_the_caller_gave_up_took_effect_and_the_retry_keeps_one_item()
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var client = CosmosTestHost.Client(emulator);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        emulator.Faults.Configure(Faults(CosmosFaultKind.Delay, 1, delayMilliseconds: 600_000));
        using var timeout = new CancellationTokenSource();

        var upsert = container.UpsertItemAsync(new Parcel("p1", "a", 1), new PartitionKey("a"), cancellationToken: timeout.Token);

        // The emulator did the work and holds the answer; the caller's timeout (a service's per-call limit) ends the wait.
        Assert.True(await TestSupport.Eventually.TrueAsync(async () => Injected(emulator, CosmosFaultKind.Delay) == 1 && (await ReadAllAsync(container)).Count == 1, TimeSpan.FromSeconds(60)));
        Assert.False(upsert.IsCompleted);
        await timeout.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => upsert);

        // At-least-once: the caller does not know the write took effect and retries; an upsert leaves one item.
        await container.UpsertItemAsync(new Parcel("p1", "a", 1), new PartitionKey("a"));
        Assert.Equal([new Parcel("p1", "a", 1)], await ReadAllAsync(container));
    }

    [Fact]
    public async Task The_admin_endpoint_sets_reads_and_clears_faults_and_metrics_count_them()
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var client = CosmosTestHost.Client(emulator);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        using var http = new HttpClient { BaseAddress = emulator.Endpoint };

        using var set = await SendAsync(http, HttpMethod.Put, """{"seed": 3, "rules": [{"kind": "RetryWith", "container": "test/items", "probability": 1, "maxCount": 1}]}""", emulator.AccountKey);
        Assert.Equal(HttpStatusCode.OK, set.StatusCode);
        Assert.Equal(CosmosFaultKind.RetryWith, Assert.Single(emulator.Faults.Options.Rules).Kind);
        await container.CreateItemAsync(new Parcel("p1", "a", 1), new PartitionKey("a"));

        using var state = JsonDocument.Parse(await http.GetStringAsync("_emulator/faults"));
        Assert.Equal(3, state.RootElement.GetProperty("faults").GetProperty("seed").GetInt32());
        var injected = Assert.Single(state.RootElement.GetProperty("injected").EnumerateArray());
        Assert.Equal(("test/items", "RetryWith", 1), (injected.GetProperty("container").GetString(), injected.GetProperty("kind").GetString(), injected.GetProperty("count").GetInt32()));
        var scraped = Lab.Measurement.PrometheusText.Parse(await http.GetStringAsync("metrics"));
        Assert.Equal(1, Assert.Single(scraped, m => m.Name == CosmosFaultInjector.MetricName && m.Label("container") == "test/items" && m.Label("kind") == "RetryWith").Value);

        using var cleared = await SendAsync(http, HttpMethod.Delete, null, emulator.AccountKey);
        Assert.Equal(HttpStatusCode.OK, cleared.StatusCode);
        Assert.Empty(emulator.Faults.Options.Rules);
    }

    [Theory]
    [InlineData("""{"rules": [{"kind": "Meteor", "probability": 0.1}]}""", "The body is not valid fault settings")]
    [InlineData("""{"rules": [{"kind": "ServiceUnavailable", "probability": 1.5}]}""", "faults.Rules[0].Probability must be between 0 and 1")]
    [InlineData("""{"rules": [{"kind": "ServiceUnavailable", "probability": 0.1, "container": "items"}]}""", "faults.Rules[0].Container must be 'database/container' or '*'")]
    [InlineData("""{"rules": [{"kind": "Delay", "probability": 0.1, "delayMilliseconds": 0}]}""", "faults.Rules[0].DelayMilliseconds must be between 1 and 600000")]
    [InlineData("""{"rules": [{"kind": "Delay", "probability": 0.1, "maxCount": 0}]}""", "faults.Rules[0].MaxCount must be at least 1")]
    [InlineData("""{"ruels": []}""", "The body is not valid fault settings")]
    public async Task A_bad_fault_setting_is_a_400_naming_it_and_changes_nothing(string body, string expected)
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var http = new HttpClient { BaseAddress = emulator.Endpoint };

        using var response = await SendAsync(http, HttpMethod.Put, body, emulator.AccountKey);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        using var error = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        Assert.Contains(expected, error.RootElement.GetProperty("message").GetString(), StringComparison.Ordinal);
        Assert.Empty(emulator.Faults.Options.Rules);
    }

    [Fact]
    public async Task A_change_without_the_account_key_is_a_401_and_changes_nothing()
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var http = new HttpClient { BaseAddress = emulator.Endpoint };

        using var unsigned = await SendAsync(http, HttpMethod.Put, """{"rules": [{"kind": "ServiceUnavailable", "probability": 1}]}""", key: null);
        using var wrong = await SendAsync(http, HttpMethod.Put, """{"rules": [{"kind": "ServiceUnavailable", "probability": 1}]}""", key: "bm90IHRoZSBrZXk=");

        Assert.Equal((HttpStatusCode.Unauthorized, HttpStatusCode.Unauthorized), (unsigned.StatusCode, wrong.StatusCode));
        Assert.Empty(emulator.Faults.Options.Rules);
    }

    [Fact]
    public async Task A_bad_fault_given_at_start_stops_the_start_naming_it()
    {
        var failure = await Assert.ThrowsAsync<CosmosEmulatorConfigurationException>(() => CosmosTestHost.StartAsync(o => o.Faults = new CosmosFaultOptions
        {
            Rules = [new CosmosFaultRule { Kind = CosmosFaultKind.ServiceUnavailable, Probability = 2 }],
        }));

        Assert.Contains("Faults.Rules[0].Probability must be between 0 and 1", failure.Message, StringComparison.Ordinal);
    }

    private static async Task<HttpResponseMessage> SendAsync(HttpClient http, HttpMethod method, string? body, string? key)
    {
        using var request = new HttpRequestMessage(method, "_emulator/faults");
        if (body is not null)
        {
            request.Content = new StringContent(body, Encoding.UTF8, "application/json");
        }

        if (key is not null)
        {
            request.Headers.TryAddWithoutValidation("x-emulator-key", key);
        }

        return await http.SendAsync(request);
    }

    private static async Task<List<Parcel>> ReadAllAsync(Container container)
    {
        var items = new List<Parcel>();
        using var feed = container.GetItemQueryIterator<Parcel>("SELECT * FROM c");
        while (feed.HasMoreResults)
        {
            items.AddRange(await feed.ReadNextAsync());
        }

        return items;
    }
}
