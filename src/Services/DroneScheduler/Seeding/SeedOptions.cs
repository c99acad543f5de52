using DroneDelivery.Contracts;

namespace DroneDelivery.DroneScheduler.Seeding;

/// <summary>What the seed command provisions and loads.</summary>
public sealed record SeedOptions
{
    public string DatabaseId { get; init; } = "dronedelivery";

    /// <summary>The utilization container to provision and load.</summary>
    public string UtilizationContainerId { get; init; } = "utilization";

    /// <summary><c>/partitionKey</c> (delivery id) or <c>/ownerId</c>.</summary>
    public string PartitionKeyPath { get; init; } = UtilizationSettings.ByDelivery;

    /// <summary>RU/s of the utilization container after loading (set, or replaced if the container exists).</summary>
    public int Throughput { get; init; } = 900;

    /// <summary>RU/s while loading, to load faster than the case study's throughput allows; null = <see cref="Throughput"/>.</summary>
    public int? LoadThroughput { get; init; }

    public string PackagesContainerId { get; init; } = "packages";

    public string DronesContainerId { get; init; } = "drones";

    /// <summary>RU/s of the packages and drones containers when they are created: the chart's 1,000, so that a hand-made set-up
    /// does not cap scenario A's later steps on them.</summary>
    public int OtherThroughput { get; init; } = 1000;

    /// <summary>Owners <c>owner-0000</c> … (count).</summary>
    public int Owners { get; init; } = 100;

    /// <summary>The first billing month loaded.</summary>
    public BillingPeriod FirstMonth { get; init; } = new(2025, 1);

    /// <summary>Consecutive months loaded (count).</summary>
    public int Months { get; init; } = 1;

    /// <summary>Utilization documents per owner per month (count).</summary>
    public int DeliveriesPerOwnerMonth { get; init; } = 10;

    /// <summary>Seed of the values; the same seed gives the same documents.</summary>
    public int Seed { get; init; } = 1;

    /// <summary>Upserts in flight at once.</summary>
    public int Concurrency { get; init; } = 32;

    /// <summary>Drones the generated assignments are spread over.</summary>
    public int FleetSize { get; init; } = 100;

    /// <summary>Only create the database and containers (and set throughput); load nothing.</summary>
    public bool ProvisionOnly { get; init; }

    /// <summary>
    /// Only load documents into the existing utilization container: create nothing, change no
    /// throughput. What an Entra ID data-plane role allows (on Azure the infrastructure owns the
    /// containers and their RU/s).
    /// </summary>
    public bool LoadOnly { get; init; }

    public long DocumentCount => (long)Owners * Months * DeliveriesPerOwnerMonth;

    /// <summary>The owner id of owner number <paramref name="index"/>.</summary>
    public static string OwnerId(int index) => $"owner-{index:D4}";

    public IEnumerable<string> Validate()
    {
        if (PartitionKeyPath is not (UtilizationSettings.ByDelivery or UtilizationSettings.ByOwner))
        {
            yield return $"--partition-key-path must be {UtilizationSettings.ByDelivery} or {UtilizationSettings.ByOwner}.";
        }

        foreach (var (name, value, min) in new[]
                 {
                     ("--throughput", Throughput, 400), ("--load-throughput", LoadThroughput ?? 400, 400), ("--other-throughput", OtherThroughput, 400),
                     ("--owners", Owners, 1), ("--months", Months, 1), ("--deliveries", DeliveriesPerOwnerMonth, 1),
                     ("--concurrency", Concurrency, 1), ("--fleet-size", FleetSize, 1),
                 })
        {
            if (value < min)
            {
                yield return $"{name} must be at least {min} (was {value}).";
            }
        }

        if (ProvisionOnly && LoadOnly)
        {
            yield return "--provision-only and --load-only exclude each other.";
        }

        if (Owners > 10_000)
        {
            yield return "--owners must be at most 10000 (owner ids have four digits).";
        }
    }
}
