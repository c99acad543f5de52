using System.Text.Json;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>
/// How the <c>delivery-requests</c> scenario follows an accepted request to completion: it polls the
/// Location it was given until the status answers 200 with a body <see cref="IsCompleted"/> accepts.
/// Polls use their own connections and are not counted as load.
/// </summary>
public sealed record CompletionTracking
{
    /// <summary>Pause before each poll of one delivery; default 250 ms. It bounds the latency's resolution.</summary>
    public TimeSpan PollInterval { get; init; } = TimeSpan.FromMilliseconds(250);

    /// <summary>Longest a delivery is followed, from its request's intended send time; default 60 s.</summary>
    public TimeSpan MaxWait { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>Most status requests outstanding at once, across all deliveries; default 16.</summary>
    public int MaxConcurrentPolls { get; init; } = 16;

    /// <summary>
    /// Follow one accepted delivery in this many (every request whose sequence number is a multiple of it);
    /// default 1, every one. Each followed delivery is polled until it completes, and its polls are load on
    /// the system too: a sample keeps the completion latency's distribution at a fraction of that load.
    /// </summary>
    public int FollowOneIn { get; init; } = 1;

    /// <summary>Most deliveries followed at once; beyond it, accepted deliveries are counted as untracked. Default 100,000.</summary>
    public int MaxTracked { get; init; } = 100_000;

    /// <summary>Whether a 200 status body means the delivery is complete; default: any 200 does.</summary>
    public Func<JsonElement, bool> IsCompleted { get; init; } = AnyStatus;

    /// <summary>A completion test: the status body's <c>stage</c> equals <paramref name="stage"/> (ignoring case).</summary>
    public static Func<JsonElement, bool> StageIs(string stage)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(stage);
        return body => body.ValueKind == JsonValueKind.Object
            && body.TryGetProperty("stage", out var value)
            && value.ValueKind == JsonValueKind.String
            && string.Equals(value.GetString(), stage, StringComparison.OrdinalIgnoreCase);
    }

    public void Validate()
    {
        if (PollInterval < TimeSpan.FromMilliseconds(10) || PollInterval > TimeSpan.FromMinutes(1))
        {
            throw new ArgumentException($"The poll interval must be between 10 ms and 1 minute (got {PollInterval}).");
        }

        if (MaxWait <= TimeSpan.Zero || MaxWait > TimeSpan.FromHours(1))
        {
            throw new ArgumentException($"The maximum completion wait must be above 0 and at most 1 hour (got {MaxWait}).");
        }

        if (MaxConcurrentPolls is < 1 or > 1_000)
        {
            throw new ArgumentException($"Concurrent polls must be between 1 and 1000 (got {MaxConcurrentPolls}).");
        }

        if (FollowOneIn is < 1 or > 1_000_000)
        {
            throw new ArgumentException($"One delivery followed in N needs N between 1 and 1000000 (got {FollowOneIn}).");
        }

        if (MaxTracked is < 1 or > 1_000_000)
        {
            throw new ArgumentException($"Tracked deliveries must be between 1 and 1000000 (got {MaxTracked}).");
        }

        ArgumentNullException.ThrowIfNull(IsCompleted);
    }

    private static bool AnyStatus(JsonElement body) => true;
}
