using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The request log is how tests and the lab count calls (calls per operation, throttled attempts,
/// fan-out): a client that has its answer must find its request in the log when it looks.
/// </summary>
public sealed class RequestLogTests
{
    [Fact]
    public async Task A_request_is_in_the_log_by_the_time_its_answer_arrives()
    {
        await using var emulator = await CosmosTestHost.StartAsync();
        using var client = CosmosTestHost.Client(emulator);
        var container = await CosmosTestHost.ContainerAsync(client, "/pk");
        await container.CreateItemAsync(new { id = "item", pk = "a" }, new PartitionKey("a"));

        // Several clients at once on the machine's few cores, so the server is often pre-empted
        // between answering and logging if it logs after the answer.
        var missing = 0;
        await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => Task.Run(async () =>
        {
            for (var i = 0; i < 250; i++)
            {
                var before = emulator.LastRequestSequence;
                var read = await container.ReadItemAsync<object>("item", new PartitionKey("a"));
                if (!emulator.GetRequests(before).Any(r => r.ActivityId == read.ActivityId))
                {
                    Interlocked.Increment(ref missing);
                }
            }
        })));

        Assert.Equal(0, missing);
    }
}
