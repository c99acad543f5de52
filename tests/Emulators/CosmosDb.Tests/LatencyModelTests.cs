using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using DroneDelivery.Emulators.CosmosDb.Capacity;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The latency model: a fixed and an exponentially distributed delay per partition a request visits, and the
/// account's model replaced at run time over <c>/_emulator/latency</c>.
/// </summary>
public sealed class LatencyModelTests
{
    [Fact]
    public void Each_partition_visited_adds_the_fixed_delay_and_an_exponential_draw_whose_mean_is_the_setting()
    {
        var settings = new LatencyOptions { FixedMilliseconds = 20, ExponentialMeanMilliseconds = 40, PerDocumentMilliseconds = 0.5 };
        var model = new LatencyModel(settings, seed: 7);

        var draws = Enumerable.Range(0, 20_000).Select(_ => model.Served(settings, partitions: 1, documents: 2).TotalMilliseconds).ToList();

        // 20 + 1 (two documents) + Exp(40): at least 21, mean 61, and about e⁻¹ of the draws more than one mean above the least.
        Assert.True(draws.Min() >= 21);
        Assert.InRange(draws.Average(), 60, 62);
        Assert.InRange(draws.Count(d => d > 61) / (double)draws.Count, 0.35, 0.39);
    }

    [Fact]
    public void Nine_partitions_in_series_take_the_sum_and_in_parallel_the_slowest_of_nine_draws()
    {
        var settings = new LatencyOptions { FixedMilliseconds = 20, ExponentialMeanMilliseconds = 40, PerDocumentMilliseconds = 0 };
        var model = new LatencyModel(settings, seed: 11);

        var serial = Enumerable.Range(0, 5_000).Average(_ => model.Served(settings, partitions: 9, documents: 0).TotalMilliseconds);
        var parallel = Enumerable.Range(0, 5_000).Average(_ => Enumerable.Range(0, 9).Max(_ => model.Served(settings, partitions: 1, documents: 0).TotalMilliseconds));

        // 9 × 60 = 540; 20 + 40 × (1 + 1/2 + … + 1/9 = 2.829) = 133: the expected maximum of nine exponential draws.
        Assert.InRange(serial, 530, 550);
        Assert.InRange(parallel, 128, 138);
    }

    [Fact]
    public void Without_an_exponential_part_the_delay_is_exact() =>
        Assert.Equal(TimeSpan.FromMilliseconds(30), new LatencyModel(new LatencyOptions(), seed: null).Served(new LatencyOptions { FixedMilliseconds = 10, PerDocumentMilliseconds = 0 }, partitions: 3, documents: 5));

    [Fact]
    public async Task The_latency_endpoint_replaces_the_accounts_model_for_the_requests_that_follow()
    {
        await using var emulator = await CosmosTestHost.StartAsync(o => o.Latency = new LatencyOptions { FixedMilliseconds = 0, PerDocumentMilliseconds = 0 });
        using var client = CosmosTestHost.Client(emulator);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        await container.CreateItemAsync(new { id = "item", pk = "a" }, new PartitionKey("a"));
        using var http = new HttpClient { BaseAddress = emulator.Endpoint };

        using var put = new HttpRequestMessage(HttpMethod.Put, "_emulator/latency") { Content = JsonContent.Create(new { fixedMilliseconds = 300, exponentialMeanMilliseconds = 0, perDocumentMilliseconds = 0 }) };
        put.Headers.Add("x-emulator-key", emulator.AccountKey);
        using var answer = await http.SendAsync(put);
        answer.EnsureSuccessStatusCode();
        var before = emulator.LastRequestSequence;
        var clock = Stopwatch.StartNew();
        var read = await container.ReadItemAsync<object>("item", new PartitionKey("a"));

        // A lower bound only: a busy machine may take longer, never shorter.
        Assert.True(clock.Elapsed >= TimeSpan.FromMilliseconds(300), $"took {clock.Elapsed.TotalMilliseconds:0} ms");
        Assert.Equal(300, emulator.GetRequests(before).Single(r => r.ActivityId == read.ActivityId).ModelledLatencyMilliseconds, precision: 3);
        var current = await http.GetFromJsonAsync<LatencyOptions>("_emulator/latency", new System.Text.Json.JsonSerializerOptions(System.Text.Json.JsonSerializerDefaults.Web));
        Assert.Equal((300, 0, 0), (current!.FixedMilliseconds, current.ExponentialMeanMilliseconds, current.PerDocumentMilliseconds));
    }

    [Theory]
    [InlineData(null, """{"fixedMilliseconds": 5}""", HttpStatusCode.Unauthorized, "needs the account key")]
    [InlineData("key", """{"fixedMilliseconds": -5}""", HttpStatusCode.BadRequest, "latency.FixedMilliseconds must be between 0 and 60000")]
    [InlineData("key", """{"fixedMilliseconds": 5, "jitter": 2}""", HttpStatusCode.BadRequest, "The body is not a latency model")]
    [InlineData("key", """[1, 2]""", HttpStatusCode.BadRequest, "The body is not a latency model")]
    public async Task A_change_without_the_key_or_with_a_bad_value_is_refused_and_changes_nothing(string? key, string body, HttpStatusCode status, string message)
    {
        await using var emulator = await CosmosTestHost.StartAsync(o => o.Latency = new LatencyOptions { FixedMilliseconds = 3 });
        using var http = new HttpClient { BaseAddress = emulator.Endpoint };
        using var put = new HttpRequestMessage(HttpMethod.Put, "_emulator/latency") { Content = new StringContent(body, System.Text.Encoding.UTF8, "application/json") };
        if (key is not null)
        {
            put.Headers.Add("x-emulator-key", emulator.AccountKey);
        }

        using var answer = await http.SendAsync(put);

        Assert.Equal(status, answer.StatusCode);
        Assert.Contains(message, await answer.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        var current = await http.GetFromJsonAsync<LatencyOptions>("_emulator/latency", new System.Text.Json.JsonSerializerOptions(System.Text.Json.JsonSerializerDefaults.Web));
        Assert.Equal(3, current!.FixedMilliseconds);
    }
}
