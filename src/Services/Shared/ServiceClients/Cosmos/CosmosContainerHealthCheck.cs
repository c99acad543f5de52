using System.Net;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>
/// Ready when the container exists and is partitioned as the service expects. A container partitioned
/// by another path than configured (e.g. <c>Utilization:PartitionKeyPath</c> changed without re-seeding)
/// would make every write fail, so it is reported here, by name.
/// </summary>
public sealed class CosmosContainerHealthCheck(CosmosClient client, string databaseId, string containerId, string partitionKeyPath) : IHealthCheck
{
    public async Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        try
        {
            var response = await client.GetContainer(databaseId, containerId).ReadContainerAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
            var actual = response.Resource.PartitionKeyPath;
            return actual == partitionKeyPath
                ? HealthCheckResult.Healthy($"Container {databaseId}/{containerId} is partitioned by {actual}.")
                : HealthCheckResult.Unhealthy($"Container {databaseId}/{containerId} is partitioned by {actual}, not by the configured {partitionKeyPath}.");
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            return HealthCheckResult.Unhealthy($"Container {databaseId}/{containerId} does not exist; provision it (DroneScheduler's 'seed' command).");
        }
        catch (Exception e) when (e is CosmosException or HttpRequestException or OperationCanceledException)
        {
            return HealthCheckResult.Unhealthy($"Cosmos DB does not answer: {e.Message}");
        }
    }
}
