using System.Diagnostics;
using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.DroneScheduler.Seeding;

/// <summary>A seeding step that cannot be done as asked, with the reason.</summary>
public sealed class SeedException(string message) : Exception(message);

/// <summary>What a seeding run did.</summary>
public sealed record SeedReport(long Documents, double RequestCharge, TimeSpan Elapsed);

/// <summary>
/// Provisions the database and containers (creating them, or replacing the throughput of existing ones)
/// and loads the utilization data set with parallel upserts (idempotent: a rerun rewrites the same
/// documents). Writes lines describing what it does to <paramref name="output"/>.
/// </summary>
public sealed class UtilizationSeeder(CosmosClient client, TextWriter output)
{
    public async Task<SeedReport> RunAsync(SeedOptions options, CancellationToken cancellationToken)
    {
        if (options.LoadOnly)
        {
            return await LoadAsync(await ExistingContainerAsync(options, cancellationToken).ConfigureAwait(false), options, cancellationToken).ConfigureAwait(false);
        }

        var database = (await client.CreateDatabaseIfNotExistsAsync(options.DatabaseId, cancellationToken: cancellationToken).ConfigureAwait(false)).Database;
        await EnsureContainerAsync(database, options.PackagesContainerId, "/id", options.OtherThroughput, replaceThroughput: false, cancellationToken).ConfigureAwait(false);
        await EnsureContainerAsync(database, options.DronesContainerId, "/id", options.OtherThroughput, replaceThroughput: false, cancellationToken).ConfigureAwait(false);
        var utilization = await EnsureContainerAsync(
            database, options.UtilizationContainerId, options.PartitionKeyPath, options.LoadThroughput ?? options.Throughput, replaceThroughput: true, cancellationToken).ConfigureAwait(false);
        if (options.ProvisionOnly)
        {
            return new SeedReport(0, 0, TimeSpan.Zero);
        }

        var report = await LoadAsync(utilization, options, cancellationToken).ConfigureAwait(false);
        if (options.LoadThroughput is { } loading && loading != options.Throughput)
        {
            await utilization.ReplaceThroughputAsync(options.Throughput, cancellationToken: cancellationToken).ConfigureAwait(false);
            await output.WriteLineAsync($"Throughput of {options.UtilizationContainerId} set back to {options.Throughput} RU/s.").ConfigureAwait(false);
        }

        return report;
    }

    /// <summary>The utilization container as the infrastructure created it, checked for the expected partition key.</summary>
    private async Task<Container> ExistingContainerAsync(SeedOptions options, CancellationToken cancellationToken)
    {
        var container = client.GetContainer(options.DatabaseId, options.UtilizationContainerId);
        ContainerProperties properties;
        try
        {
            properties = (await container.ReadContainerAsync(cancellationToken: cancellationToken).ConfigureAwait(false)).Resource;
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            throw new SeedException(
                $"Container {options.DatabaseId}/{options.UtilizationContainerId} does not exist; --load-only creates nothing " +
                "(on Azure the infrastructure creates the containers; locally run without --load-only).");
        }

        CheckPartitionKey(options.DatabaseId, options.UtilizationContainerId, properties.PartitionKeyPath, options.PartitionKeyPath);
        await output.WriteLineAsync($"Container {options.DatabaseId}/{options.UtilizationContainerId} exists, partitioned by {properties.PartitionKeyPath}; loading only.").ConfigureAwait(false);
        return container;
    }

    private static void CheckPartitionKey(string databaseId, string containerId, string actualPath, string expectedPath)
    {
        if (actualPath != expectedPath)
        {
            throw new SeedException(
                $"Container {databaseId}/{containerId} exists partitioned by {actualPath}, not {expectedPath}. " +
                "A partition key cannot change: choose another container id (e.g. utilization-by-owner for /ownerId).");
        }
    }

    private async Task<Container> EnsureContainerAsync(
        Database database, string containerId, string partitionKeyPath, int throughput, bool replaceThroughput, CancellationToken cancellationToken)
    {
        var container = database.GetContainer(containerId);
        ContainerProperties existing;
        try
        {
            existing = (await container.ReadContainerAsync(cancellationToken: cancellationToken).ConfigureAwait(false)).Resource;
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            var response = await database.CreateContainerIfNotExistsAsync(
                new ContainerProperties(containerId, partitionKeyPath), throughput, cancellationToken: cancellationToken).ConfigureAwait(false);
            if (response.StatusCode == HttpStatusCode.Created)
            {
                await output.WriteLineAsync($"Created container {database.Id}/{containerId} partitioned by {partitionKeyPath} with {throughput} RU/s.").ConfigureAwait(false);
                return response.Container;
            }

            existing = response.Resource;
        }

        var actualPath = existing.PartitionKeyPath;
        CheckPartitionKey(database.Id, containerId, actualPath, partitionKeyPath);

        var current = await container.ReadThroughputAsync(cancellationToken).ConfigureAwait(false);
        if (replaceThroughput && current != throughput)
        {
            await container.ReplaceThroughputAsync(throughput, cancellationToken: cancellationToken).ConfigureAwait(false);
            await output.WriteLineAsync($"Container {database.Id}/{containerId} exists; throughput {current?.ToString() ?? "shared"} → {throughput} RU/s.").ConfigureAwait(false);
        }
        else
        {
            await output.WriteLineAsync($"Container {database.Id}/{containerId} exists, partitioned by {actualPath}, {current?.ToString() ?? "shared"} RU/s.").ConfigureAwait(false);
        }

        return container;
    }

    private async Task<SeedReport> LoadAsync(Container container, SeedOptions options, CancellationToken cancellationToken)
    {
        await output.WriteLineAsync(
            $"Loading {options.DocumentCount} utilization documents ({options.Owners} owners × {options.Months} months from {options.FirstMonth} × {options.DeliveriesPerOwnerMonth} deliveries, seed {options.Seed}) into {container.Id}...").ConfigureAwait(false);
        var stopwatch = Stopwatch.StartNew();
        long written = 0;
        double charge = 0;
        var chargeLock = new Lock();
        var writeOptions = new ItemRequestOptions { EnableContentResponseOnWrite = false };
        await Parallel.ForEachAsync(
            UtilizationDataSet.Generate(options),
            new ParallelOptions { MaxDegreeOfParallelism = options.Concurrency, CancellationToken = cancellationToken },
            async (document, token) =>
            {
                var response = await container.UpsertItemAsync(document, document.PartitionKeyIn(options.PartitionKeyPath), writeOptions, token).ConfigureAwait(false);
                lock (chargeLock)
                {
                    charge += response.RequestCharge;
                }

                Interlocked.Increment(ref written);
            }).ConfigureAwait(false);
        stopwatch.Stop();
        await output.WriteLineAsync(
            $"Loaded {written} documents in {stopwatch.Elapsed.TotalSeconds:0.0} s ({written / Math.Max(stopwatch.Elapsed.TotalSeconds, 0.001):0} documents/s, {charge:0} RU).").ConfigureAwait(false);
        return new SeedReport(written, charge, stopwatch.Elapsed);
    }
}
