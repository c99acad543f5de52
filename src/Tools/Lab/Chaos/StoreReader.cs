using System.Text.Json;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Lab.Deployment;
using Microsoft.Azure.Cosmos;
using StackExchange.Redis;

namespace DroneDelivery.Lab.Chaos;

/// <summary>
/// Reads what the services stored, from the stores themselves rather than the services' APIs: Package's and
/// DroneScheduler's Cosmos DB containers (with the Cosmos DB SDK), Delivery's Redis (every <c>delivery:{id}</c>
/// key) and the queue's dead-letter sub-queue (peeked with the Service Bus SDK, so nothing is taken away).
/// </summary>
internal static class StoreReader
{
    private const string DeliveryKeyPrefix = "delivery:";
    private const string EventsKeySuffix = ":events";

    public static async Task<StoreContents> ReadAsync(LocalDeployment deployment, string queue, CancellationToken cancellationToken)
    {
        using var cosmos = new CosmosClient(deployment.Cosmos.ConnectionString, new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
            UseSystemTextJsonSerializerWithOptions = new JsonSerializerOptions(JsonSerializerDefaults.Web),
        });
        var database = cosmos.GetDatabase(deployment.DatabaseId);
        var packages = await QueryAsync<PackageRow>(database.GetContainer("packages"), "SELECT c.id, c.deliveryId FROM c", cancellationToken).ConfigureAwait(false);
        var assignments = await QueryAsync<IdRow>(database.GetContainer("drones"), "SELECT c.id FROM c", cancellationToken).ConfigureAwait(false);
        var utilization = await QueryAsync<IdRow>(database.GetContainer("utilization"), "SELECT c.id FROM c WHERE c.type = 'DroneUtilization'", cancellationToken).ConfigureAwait(false);
        return new StoreContents(
            [.. packages.Select(p => new StoredPackage(p.Id, p.DeliveryId))],
            [.. assignments.Select(a => a.Id)],
            [.. utilization.Select(u => u.Id)],
            await DeliveriesAsync(deployment.Redis!.Port, cancellationToken).ConfigureAwait(false),
            await DeadLettersAsync(deployment.ServiceBus!.ConnectionString, queue, cancellationToken).ConfigureAwait(false));
    }

    private static async Task<List<T>> QueryAsync<T>(Container container, string query, CancellationToken cancellationToken)
    {
        var rows = new List<T>();
        using var iterator = container.GetItemQueryIterator<T>(query, requestOptions: new QueryRequestOptions { MaxItemCount = 1000 });
        while (iterator.HasMoreResults)
        {
            rows.AddRange(await iterator.ReadNextAsync(cancellationToken).ConfigureAwait(false));
        }

        return rows;
    }

    /// <summary>Every delivery in Redis (<c>delivery:{id}</c>; its events list and other keys skipped).</summary>
    private static async Task<List<StoredDelivery>> DeliveriesAsync(int port, CancellationToken cancellationToken)
    {
        await using var redis = await ConnectionMultiplexer.ConnectAsync(new ConfigurationOptions { EndPoints = { { "127.0.0.1", port } }, AbortOnConnectFail = true }).ConfigureAwait(false);
        var server = redis.GetServer(redis.GetEndPoints().Single());
        var database = redis.GetDatabase();
        var deliveries = new List<StoredDelivery>();
        await foreach (var key in server.KeysAsync(pattern: DeliveryKeyPrefix + "*", pageSize: 1000).WithCancellation(cancellationToken).ConfigureAwait(false))
        {
            var name = (string)key!;
            if (name.EndsWith(EventsKeySuffix, StringComparison.Ordinal))
            {
                continue;
            }

            var json = await database.StringGetAsync(key).ConfigureAwait(false);
            if (json.IsNull)
            {
                continue; // Expired or removed meanwhile.
            }

            using var document = JsonDocument.Parse((string)json!);
            var root = document.RootElement;
            deliveries.Add(new StoredDelivery(
                root.GetProperty("deliveryId").GetString()!,
                root.GetProperty("packageId").GetString()!,
                root.GetProperty("createdAt").GetDateTimeOffset()));
        }

        return deliveries;
    }

    /// <summary>Every message of the dead-letter sub-queue, peeked: the delivery id from its body, the reason and description it was dead-lettered with.</summary>
    private static async Task<List<DeadLetter>> DeadLettersAsync(string connectionString, string queue, CancellationToken cancellationToken)
    {
        await using var client = new ServiceBusClient(connectionString);
        await using var receiver = client.CreateReceiver(queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        var deadLetters = new List<DeadLetter>();
        long? from = null;
        while (true)
        {
            var batch = await receiver.PeekMessagesAsync(250, from, cancellationToken).ConfigureAwait(false);
            if (batch.Count == 0)
            {
                return deadLetters;
            }

            deadLetters.AddRange(batch.Select(m => new DeadLetter(DeliveryId(m.Body), m.DeadLetterReason ?? "(none)", m.DeadLetterErrorDescription ?? string.Empty)));
            from = batch[^1].SequenceNumber + 1;
        }
    }

    private static string? DeliveryId(BinaryData body)
    {
        try
        {
            using var document = JsonDocument.Parse(body.ToMemory());
            return document.RootElement.ValueKind == JsonValueKind.Object && document.RootElement.TryGetProperty("deliveryId", out var id) && id.ValueKind == JsonValueKind.String
                ? id.GetString()
                : null;
        }
        catch (JsonException)
        {
            return null;
        }
    }

    private sealed record PackageRow(string Id, string DeliveryId);

    private sealed record IdRow(string Id);
}
