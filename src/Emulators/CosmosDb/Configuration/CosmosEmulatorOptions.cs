namespace DroneDelivery.Emulators.CosmosDb.Configuration;

/// <summary>
/// Everything the emulator can be told at start-up. The JSON config file (<c>--config</c>) binds to
/// this class; property names are matched case-insensitively and unknown names are rejected.
/// </summary>
public sealed class CosmosEmulatorOptions
{
    /// <summary>The master key of the well-known Cosmos DB emulator account.</summary>
    public const string WellKnownAccountKey =
        "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

    /// <summary>TCP port; 0 picks a free one. Default 0.</summary>
    public int Port { get; set; }

    /// <summary>
    /// The IP address to listen on: 127.0.0.1 (default, this machine only), 0.0.0.0 or :: to accept
    /// connections from other machines or pods, another local address, or <c>localhost</c>.
    /// </summary>
    public string Host { get; set; } = "127.0.0.1";

    /// <summary>Serve HTTPS with a self-signed certificate (SAN localhost, 127.0.0.1) instead of HTTP. Default false.</summary>
    public bool Https { get; set; }

    /// <summary>The account master key requests must be signed with (base64). Default: the well-known emulator key.</summary>
    public string AccountKey { get; set; } = WellKnownAccountKey;

    /// <summary>The account's default consistency level, reported to clients. Default Session.</summary>
    public string DefaultConsistencyLevel { get; set; } = "Session";

    /// <summary>RU/s of a container created without a throughput header in a database without shared throughput. Default 400.</summary>
    public int DefaultThroughput { get; set; } = 400;

    /// <summary>
    /// Physical partitions of containers created at run time. Null (default) derives them from RU/s:
    /// <c>ceil(RU/s ÷ MaxThroughputPerPartition)</c>, as the service does.
    /// </summary>
    public int? DefaultPhysicalPartitions { get; set; }

    /// <summary>RU/s one physical partition can serve, used to derive partition counts. Default 10,000 (the service's limit).</summary>
    public int MaxThroughputPerPartition { get; set; } = 10_000;

    /// <summary>
    /// How many seconds of a partition's provisioned throughput can be banked for a burst. Default 1:
    /// the budget is "RU/s per partition, per second", as the service enforces it.
    /// </summary>
    public double BurstSeconds { get; set; } = 1;

    /// <summary>Latency model applied to every data-plane request unless a container overrides it.</summary>
    public LatencyOptions Latency { get; set; } = new();

    /// <summary>Seed of the latency model's random delays, so that a run can be repeated; null (default) seeds from the clock.</summary>
    public int? LatencySeed { get; set; }

    /// <summary>RU charge formula constants unless a container overrides them.</summary>
    public RequestChargeOptions RequestCharges { get; set; } = new();

    /// <summary>Databases and containers that exist at start-up.</summary>
    public List<DatabaseOptions> Databases { get; set; } = [];

    /// <summary>How many recent requests keep their timings for <c>/_emulator/requests</c> and tests. Default 100,000.</summary>
    public int RequestLogCapacity { get; set; } = 100_000;

    /// <summary>How many seconds of per-second metrics each partition keeps. Default 900.</summary>
    public int MetricsHistorySeconds { get; set; } = 900;

    /// <summary>Faults injected into item and query requests from the start; <c>PUT /_emulator/faults</c> replaces them at run time. Default none.</summary>
    public Faults.CosmosFaultOptions Faults { get; set; } = new();

    /// <summary>
    /// The clock behind RU budgets, the latency model, per-second metrics and the authorisation
    /// header's allowed skew. Not a setting: tests replace it to move time themselves.
    /// </summary>
    [System.Text.Json.Serialization.JsonIgnore]
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;
}

/// <summary>A database that exists at start-up.</summary>
public sealed class DatabaseOptions
{
    public string Id { get; set; } = string.Empty;

    /// <summary>Shared (database-level) RU/s for containers declared without their own throughput. Null: none.</summary>
    public int? Throughput { get; set; }

    /// <summary>Physical partitions of the shared throughput; null derives them from <see cref="Throughput"/>.</summary>
    public int? PhysicalPartitions { get; set; }

    public List<ContainerOptions> Containers { get; set; } = [];
}

/// <summary>A container that exists at start-up, with its capacity model.</summary>
public sealed class ContainerOptions
{
    public string Id { get; set; } = string.Empty;

    /// <summary>The partition key path, e.g. <c>/ownerId</c>. Required.</summary>
    public string PartitionKeyPath { get; set; } = string.Empty;

    /// <summary>Partition key hash version, 1 or 2. Default 2.</summary>
    public int PartitionKeyVersion { get; set; } = 2;

    /// <summary>Provisioned RU/s (dedicated). Null: the database's shared throughput, or <see cref="CosmosEmulatorOptions.DefaultThroughput"/>.</summary>
    public int? Throughput { get; set; }

    /// <summary>Physical partitions; null derives them from RU/s. Scenario A uses 9.</summary>
    public int? PhysicalPartitions { get; set; }

    /// <summary>Overrides the account-wide latency model for this container.</summary>
    public LatencyOptions? Latency { get; set; }

    /// <summary>Overrides the account-wide charge formula for this container.</summary>
    public RequestChargeOptions? RequestCharges { get; set; }
}

/// <summary>
/// The time a data-plane request takes inside the emulator: for each physical partition it visits,
/// <c>FixedMilliseconds</c> plus a delay drawn from an exponential distribution of mean
/// <c>ExponentialMeanMilliseconds</c> (one partition after another), plus
/// <c>PerDocumentMilliseconds × documents read</c>; throttled requests take <c>ThrottledMilliseconds</c>.
/// Metadata requests (account, containers, partition key ranges, offers, query plans) are not delayed.
/// <c>PUT /_emulator/latency</c> replaces the account's model at run time.
/// </summary>
public sealed class LatencyOptions
{
    /// <summary>Fixed delay per partition a request visits, in milliseconds. Default 3.</summary>
    public double FixedMilliseconds { get; set; } = 3;

    /// <summary>
    /// Mean of an exponentially distributed extra delay per partition a request visits, in milliseconds.
    /// Default 0 (none). A service's latency varies from call to call, and a fan-out of parallel calls
    /// waits for its slowest: with this, nine parallel partition queries take about 2.8 means
    /// (the expected maximum of nine draws) where nine serial ones take nine.
    /// </summary>
    public double ExponentialMeanMilliseconds { get; set; }

    /// <summary>Extra delay per document a request reads or writes, in milliseconds. Default 0.01.</summary>
    public double PerDocumentMilliseconds { get; set; } = 0.01;

    /// <summary>Delay before a 429 answer, in milliseconds. Default 1.</summary>
    public double ThrottledMilliseconds { get; set; } = 1;
}

/// <summary>
/// The RU charge formula. Sizes are in KB (1,024 bytes) and never less than 1:
/// point read = <c>PointReadPerKilobyte × KB</c>; create, replace, upsert, patch and delete =
/// <c>WritePerKilobyte × KB</c>; each query page a physical partition serves =
/// <c>QueryPerPartition + QueryPerDocument × documents read</c>.
/// </summary>
public sealed class RequestChargeOptions
{
    /// <summary>RU per KB read by a point read. Default 1 (the service's published figure).</summary>
    public double PointReadPerKilobyte { get; set; } = 1;

    /// <summary>RU per KB written. Default 5.7.</summary>
    public double WritePerKilobyte { get; set; } = 5.7;

    /// <summary>RU per query request to one physical partition. Default 3.2.</summary>
    public double QueryPerPartition { get; set; } = 3.2;

    /// <summary>RU per document a query reads (matches its filter). Default 0.02.</summary>
    public double QueryPerDocument { get; set; } = 0.02;
}
