using System.Collections.Concurrent;
using System.Text.Json.Nodes;
using DroneDelivery.Emulators.CosmosDb.Capacity;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Partitioning;
using DroneDelivery.Emulators.CosmosDb.Protocol;

namespace DroneDelivery.Emulators.CosmosDb.Storage;

/// <summary>Provisioned throughput requested by a create request: manual RU/s, or autoscale with a maximum.</summary>
internal readonly record struct ThroughputRequest(double Throughput, bool Autoscale);

/// <summary>The account: databases, containers and offers, all in memory.</summary>
internal sealed class AccountStore
{
    private readonly Lock _sync = new();
    private readonly CosmosEmulatorOptions _options;
    private readonly ConcurrentDictionary<string, DatabaseResource> _databases = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, DatabaseResource> _databasesByRid = new(StringComparer.Ordinal);
    private readonly ConcurrentDictionary<string, OfferResource> _offers = new(StringComparer.Ordinal);
    private uint _nextDatabase;
    private uint _nextOffer;

    public AccountStore(CosmosEmulatorOptions options)
    {
        _options = options;
        Latency = new LatencyModel(options.Latency, options.LatencySeed);
        foreach (var database in options.Databases)
        {
            var throughput = database.Throughput is { } shared ? new ThroughputRequest(shared, false) : (ThroughputRequest?)null;
            var (_, created) = CreateDatabase(database.Id, throughput, database.PhysicalPartitions);
            foreach (var container in database.Containers)
            {
                var properties = ContainerResource.EchoedProperties(null);
                var own = container.Throughput is { } ru ? new ThroughputRequest(ru, false) : (ThroughputRequest?)null;
                CreateContainer(
                    created!,
                    container.Id,
                    PartitionKeyDefinition.Hash(container.PartitionKeyPath, container.PartitionKeyVersion),
                    properties,
                    own,
                    container.PhysicalPartitions,
                    container.Latency,
                    container.RequestCharges);
            }
        }
    }

    /// <summary>The latency model of every container that has no latency settings of its own.</summary>
    public LatencyModel Latency { get; }

    public IReadOnlyCollection<DatabaseResource> Databases => [.. _databases.Values.OrderBy(d => d.Rid, StringComparer.Ordinal)];

    public IReadOnlyCollection<OfferResource> Offers => [.. _offers.Values.OrderBy(o => o.Rid, StringComparer.Ordinal)];

    public IEnumerable<ContainerResource> Containers => Databases.SelectMany(d => d.Containers.Values.OrderBy(c => c.Rid, StringComparer.Ordinal));

    public DatabaseResource? FindDatabase(string idOrRid, bool byRid) =>
        (byRid ? _databasesByRid : _databases).TryGetValue(idOrRid, out var database) ? database : null;

    /// <summary>True when the segment names no database by id but is the RID of one (RID-based addressing).</summary>
    public bool IsDatabaseRid(string segment) => !_databases.ContainsKey(segment) && _databasesByRid.ContainsKey(segment);

    public OfferResource? FindOffer(string rid) => _offers.TryGetValue(rid, out var offer) ? offer : null;

    public (bool Created, DatabaseResource? Database) CreateDatabase(string id, ThroughputRequest? throughput, int? partitions = null)
    {
        lock (_sync)
        {
            if (_databases.TryGetValue(id, out var existing))
            {
                return (false, existing);
            }

            var rid = ResourceIds.Database(++_nextDatabase);
            ThroughputPool? pool = null;
            OfferResource? offer = null;
            if (throughput is { } t)
            {
                pool = new ThroughputPool(t.Throughput, partitions ?? DerivedPartitions(t.Throughput), _options.BurstSeconds, _options.TimeProvider, t.Autoscale);
                offer = new OfferResource(ResourceIds.Offer(++_nextOffer), rid, $"dbs/{rid}/", pool, _options.TimeProvider);
                _offers[offer.Rid] = offer;
            }

            var database = new DatabaseResource(id, rid, pool, offer, _options.TimeProvider);
            _databases[id] = database;
            _databasesByRid[rid] = database;
            return (true, database);
        }
    }

    public bool DeleteDatabase(DatabaseResource database)
    {
        lock (_sync)
        {
            if (!_databases.TryRemove(database.Id, out _))
            {
                return false;
            }

            _databasesByRid.TryRemove(database.Rid, out _);
            if (database.Offer is not null)
            {
                _offers.TryRemove(database.Offer.Rid, out _);
            }

            foreach (var container in database.Containers.Values)
            {
                if (container.Offer is not null)
                {
                    _offers.TryRemove(container.Offer.Rid, out _);
                }
            }

            return true;
        }
    }

    public (bool Created, ContainerResource Container) CreateContainer(
        DatabaseResource database,
        string id,
        PartitionKeyDefinition partitionKey,
        JsonObject properties,
        ThroughputRequest? throughput,
        int? partitions = null,
        LatencyOptions? latency = null,
        RequestChargeOptions? charges = null)
    {
        lock (_sync)
        {
            if (database.Containers.TryGetValue(id, out var existing))
            {
                return (false, existing);
            }

            var rid = ResourceIds.Collection(database.Rid, database.NextContainerOrdinal());
            ThroughputPool pool;
            OfferResource? offer = null;
            if (throughput is null && database.SharedPool is not null)
            {
                pool = database.SharedPool;
            }
            else
            {
                var requested = throughput ?? new ThroughputRequest(_options.DefaultThroughput, false);
                var count = partitions ?? _options.DefaultPhysicalPartitions ?? DerivedPartitions(requested.Throughput);
                pool = new ThroughputPool(requested.Throughput, count, _options.BurstSeconds, _options.TimeProvider, requested.Autoscale);
                offer = new OfferResource(ResourceIds.Offer(++_nextOffer), rid, $"dbs/{database.Rid}/colls/{rid}/", pool, _options.TimeProvider);
                _offers[offer.Rid] = offer;
            }

            var container = new ContainerResource(
                database,
                id,
                rid,
                partitionKey,
                properties,
                pool,
                offer,
                Latency,
                latency,
                charges ?? _options.RequestCharges,
                _options.MetricsHistorySeconds,
                _options.TimeProvider);
            database.Containers[id] = container;
            database.ContainersByRid[rid] = container;
            return (true, container);
        }
    }

    public bool DeleteContainer(ContainerResource container)
    {
        lock (_sync)
        {
            if (!container.Database.Containers.TryRemove(container.Id, out _))
            {
                return false;
            }

            container.Database.ContainersByRid.TryRemove(container.Rid, out _);
            if (container.Offer is not null)
            {
                _offers.TryRemove(container.Offer.Rid, out _);
            }

            return true;
        }
    }

    private int DerivedPartitions(double throughput) =>
        Math.Clamp((int)Math.Ceiling(throughput / _options.MaxThroughputPerPartition), 1, 1024);
}
