using System.ComponentModel.DataAnnotations;
using DroneDelivery.ServiceClients.Cosmos;

namespace DroneDelivery.DroneScheduler;

/// <summary>
/// The utilization container and how the case study's query reads it (section <c>Utilization</c>).
/// The defaults are the baseline (steps A1/A2): partitioned by delivery id, queried without partition
/// key, partitions read one after the other.
/// </summary>
public sealed class UtilizationSettings : IValidatableObject
{
    /// <summary>Partition key path holding the delivery id (baseline).</summary>
    public const string ByDelivery = "/partitionKey";

    /// <summary>Partition key path holding the owner id (step A4).</summary>
    public const string ByOwner = "/ownerId";

    /// <summary>
    /// The utilization container. Default <c>utilization</c>. A container's partition key cannot change,
    /// so step A4 uses another container (e.g. <c>utilization-by-owner</c>) seeded with <c>/ownerId</c>.
    /// </summary>
    [Required]
    [RegularExpression(CosmosNames.IdPattern, ErrorMessage = CosmosNames.IdRule)]
    public string ContainerId { get; set; } = "utilization";

    /// <summary>
    /// The container's partition key path: <c>/partitionKey</c> (holds the delivery id; the owner's
    /// documents spread over every physical partition — baseline) or <c>/ownerId</c> (an owner's documents
    /// in one logical partition — step A4). Must match the container (readiness reports a mismatch).
    /// </summary>
    [Required]
    public string PartitionKeyPath { get; set; } = ByDelivery;

    /// <summary>
    /// Whether GetDroneUtilization passes the owner as <c>QueryRequestOptions.PartitionKey</c>, so the query
    /// reads one partition instead of fanning out. Default false. Requires <c>PartitionKeyPath</c> <c>/ownerId</c> (step A4).
    /// </summary>
    public bool QueryWithPartitionKey { get; set; }

    /// <summary>
    /// <c>QueryRequestOptions.MaxConcurrency</c>: partitions a fan-out query reads at the same time.
    /// 0 = one after the other (default, steps A1/A2); -1 = as many as the SDK chooses (step A3);
    /// n &gt; 0 = at most n. Range -1 – 1000.
    /// </summary>
    [Range(-1, 1000)]
    public int MaxConcurrency { get; set; }

    /// <summary>
    /// <c>QueryRequestOptions.MaxItemCount</c>: documents per page (count; -1 = as many as the service
    /// returns). Unset: the SDK's default. Range -1 – 100000, not 0.
    /// </summary>
    [Range(-1, 100_000)]
    public int? MaxItemCount { get; set; }

    /// <summary>
    /// <c>QueryRequestOptions.MaxBufferedItemCount</c>: documents the client may buffer during a parallel
    /// query (count; -1 = SDK decides). Unset: the SDK's default. Range -1 – 1000000.
    /// </summary>
    [Range(-1, 1_000_000)]
    public int? MaxBufferedItemCount { get; set; }

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (PartitionKeyPath is not (ByDelivery or ByOwner))
        {
            yield return new ValidationResult($"PartitionKeyPath must be {ByDelivery} or {ByOwner}.", [nameof(PartitionKeyPath)]);
        }

        if (QueryWithPartitionKey && PartitionKeyPath != ByOwner)
        {
            yield return new ValidationResult(
                $"QueryWithPartitionKey requires PartitionKeyPath {ByOwner}: with {PartitionKeyPath} the owner id is not a partition key and the query would miss documents.",
                [nameof(QueryWithPartitionKey)]);
        }

        if (MaxItemCount == 0)
        {
            yield return new ValidationResult("MaxItemCount must not be 0.", [nameof(MaxItemCount)]);
        }
    }
}

/// <summary>The drone fleet (section <c>Drones</c>).</summary>
public sealed class DronesSettings
{
    /// <summary>The drone assignments container, partitioned by <c>/id</c> (the delivery id). Default <c>drones</c>.</summary>
    [Required]
    [RegularExpression(CosmosNames.IdPattern, ErrorMessage = CosmosNames.IdRule)]
    public string ContainerId { get; set; } = "drones";

    /// <summary>Drones in the fleet (count, 1 – 100000). A delivery's drone is chosen by a stable hash of its id. Default 100.</summary>
    [Range(1, 100_000)]
    public int FleetSize { get; set; } = 100;
}
