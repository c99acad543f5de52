namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// What the administration API keeps about an entity beyond the settings the broker acts on: when it was created and
/// last updated, and the settings the service stores and echoes that change nothing here (the size quota is not
/// enforced; batching, ordering and express are how the emulator always works).
/// </summary>
internal sealed record EntityExtras
{
    public DateTime CreatedAt { get; init; }

    public DateTime UpdatedAt { get; init; }

    public long MaxSizeInMegabytes { get; init; } = 1024;

    public bool EnableBatchedOperations { get; init; } = true;

    public bool SupportOrdering { get; init; } = true;

    public bool EnableExpress { get; init; }

    /// <summary>Subscriptions: the emulator's filters never fail while evaluated, so nothing is dead-lettered for it.</summary>
    public bool DeadLetteringOnFilterEvaluationExceptions { get; init; } = true;

    public string? UserMetadata { get; init; }
}
