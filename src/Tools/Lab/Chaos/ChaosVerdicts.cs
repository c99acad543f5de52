using System.Globalization;

namespace DroneDelivery.Lab.Chaos;

/// <summary>A package document: its id (the request's package id) and the delivery it belongs to.</summary>
internal sealed record StoredPackage(string Id, string DeliveryId);

/// <summary>A delivery in Delivery's store: its id, its package and when it was scheduled (the workflow's last step).</summary>
internal sealed record StoredDelivery(string Id, string PackageId, DateTimeOffset CreatedAt);

/// <summary>A message in the queue's dead-letter sub-queue: the delivery it asked for (null when unreadable) and why it is there.</summary>
internal sealed record DeadLetter(string? DeliveryId, string Reason, string Description);

/// <summary>
/// What the stores hold after the run: Package's and DroneScheduler's Cosmos DB containers, Delivery's Redis
/// and the queue's dead-letter sub-queue. Assignment and utilization documents are keyed by delivery id.
/// </summary>
internal sealed record StoreContents(
    IReadOnlyList<StoredPackage> Packages,
    IReadOnlyList<string> Assignments,
    IReadOnlyList<string> Utilization,
    IReadOnlyList<StoredDelivery> Deliveries,
    IReadOnlyList<DeadLetter> DeadLetters);

/// <summary>What the load driver saw of Ingestion: the 202s, and the requests that got no answer at all (they may have been queued).</summary>
internal sealed record IngestionCounts(long Accepted, long Unanswered);

/// <summary>The time the completion rate took to come back after one fault; null when it did not within the observed time.</summary>
internal sealed record Recovery(FaultRecord Fault, double? Seconds);

/// <summary>A chaos run's figures, all from the stores, and the verdicts on them.</summary>
internal sealed record ChaosFigures
{
    public required long Accepted { get; init; }

    public required long Unanswered { get; init; }

    /// <summary>Deliveries whose package, drone assignment and delivery all exist, and that are not dead-lettered.</summary>
    public required int Completed { get; init; }

    /// <summary>Deliveries dead-lettered, by reason.</summary>
    public required IReadOnlyDictionary<string, int> DeadLettered { get; init; }

    /// <summary>Accepted requests that ended neither completed nor dead-lettered.</summary>
    public required long Lost { get; init; }

    /// <summary>Deliveries that ended (completed or dead-lettered) beyond the 202s and the unanswered requests: the count cannot account for them.</summary>
    public required long Unaccounted { get; init; }

    /// <summary>Items stored twice: per kind (a package id or a delivery's package twice, an assignment or a utilization twice, one request as two deliveries).</summary>
    public required IReadOnlyDictionary<string, int> Duplicated { get; init; }

    /// <summary>Delivery ids left half-done, each with what is missing or left over.</summary>
    public required IReadOnlyList<string> HalfDone { get; init; }

    /// <summary>Dead-lettered for a transient cause (the budget ran out, or an undo failed).</summary>
    public required int TransientDeadLetters { get; init; }

    /// <summary>Completions per second before the first fault.</summary>
    public required double PreFaultRate { get; init; }

    public required IReadOnlyList<Recovery> Recoveries { get; init; }

    public int DuplicatedTotal => Duplicated.Values.Sum();
}

/// <summary>One check of a chaos run.</summary>
internal sealed record ChaosVerdict(string Check, bool Passed, string Measured);

/// <summary>The chaos run's checks, computed from what the stores hold (see docs/reliability.md).</summary>
internal static class ChaosVerdicts
{
    /// <summary>Dead-letter reasons whose cause is transient: a valid request should never end with one.</summary>
    public static IReadOnlySet<string> TransientReasons { get; } = new HashSet<string>(StringComparer.Ordinal) { "TransientFailuresExhausted", "CompensationFailed" };

    /// <summary>The completion rate counts as recovered when a window of this many seconds reaches <see cref="RecoveredShare"/> of the pre-fault rate.</summary>
    public const int RecoveryWindowSeconds = 5;

    public const double RecoveredShare = 0.8;

    public static ChaosFigures Figures(StoreContents stores, IngestionCounts ingestion, IReadOnlyList<FaultRecord> faults, DateTimeOffset loadStart, DateTimeOffset observedUntil)
    {
        var packagesByDelivery = stores.Packages.GroupBy(p => p.DeliveryId, StringComparer.Ordinal).ToDictionary(g => g.Key, g => g.Count(), StringComparer.Ordinal);
        var assignments = stores.Assignments.ToHashSet(StringComparer.Ordinal);
        var utilization = stores.Utilization.ToHashSet(StringComparer.Ordinal);
        var deliveries = stores.Deliveries.ToDictionary(d => d.Id, StringComparer.Ordinal);
        var deadLettered = stores.DeadLetters.Where(d => d.DeliveryId is not null).Select(d => d.DeliveryId!).ToHashSet(StringComparer.Ordinal);

        var duplicated = new Dictionary<string, int>(StringComparer.Ordinal)
        {
            ["package id stored twice"] = stores.Packages.Count - stores.Packages.Select(p => p.Id).Distinct(StringComparer.Ordinal).Count(),
            ["delivery with two packages"] = packagesByDelivery.Count(p => p.Value > 1),
            ["drone assignment stored twice"] = stores.Assignments.Count - assignments.Count,
            ["drone utilization stored twice"] = stores.Utilization.Count - utilization.Count,
            ["one request (package id) as two deliveries"] = stores.Deliveries.GroupBy(d => d.PackageId, StringComparer.Ordinal).Count(g => g.Count() > 1),
        };

        // Every delivery id any store or the dead-letter queue knows: each must be whole or wholly undone.
        var halfDone = new List<string>();
        var completed = 0;
        foreach (var id in packagesByDelivery.Keys.Concat(assignments).Concat(utilization).Concat(deliveries.Keys).Concat(deadLettered).Distinct(StringComparer.Ordinal).Order(StringComparer.Ordinal))
        {
            var parts = new[] { ("package", packagesByDelivery.ContainsKey(id)), ("drone assignment", assignments.Contains(id)), ("utilization", utilization.Contains(id)), ("delivery", deliveries.ContainsKey(id)) };
            var present = parts.Where(p => p.Item2).Select(p => p.Item1).ToList();
            if (deadLettered.Contains(id))
            {
                if (present.Count > 0)
                {
                    halfDone.Add($"{id}: dead-lettered, yet its {string.Join(", ", present)} remain");
                }
            }
            else if (present.Count == parts.Length)
            {
                completed++;
            }
            else
            {
                halfDone.Add($"{id}: {string.Join(", ", present)} without its {string.Join(", ", parts.Where(p => !p.Item2).Select(p => p.Item1))}");
            }
        }

        var ended = completed + deadLettered.Count;
        var unreadableDeadLetters = stores.DeadLetters.Count(d => d.DeliveryId is null);
        var completions = stores.Deliveries.Where(d => !deadLettered.Contains(d.Id)).Select(d => d.CreatedAt).ToList();
        var preFault = PreFaultRate(completions, loadStart, faults);
        return new ChaosFigures
        {
            Accepted = ingestion.Accepted,
            Unanswered = ingestion.Unanswered,
            Completed = completed,
            DeadLettered = stores.DeadLetters.GroupBy(d => d.Reason, StringComparer.Ordinal).ToDictionary(g => g.Key, g => g.Count(), StringComparer.Ordinal),
            // An unreadable dead letter cannot be matched to a request: it is counted as lost, not as ended.
            Lost = Math.Max(0, ingestion.Accepted - ended) + unreadableDeadLetters,
            Unaccounted = Math.Max(0, ended - ingestion.Accepted - ingestion.Unanswered),
            Duplicated = duplicated,
            HalfDone = halfDone,
            TransientDeadLetters = stores.DeadLetters.Count(d => TransientReasons.Contains(d.Reason)),
            PreFaultRate = preFault,
            Recoveries = [.. faults.Select(f => new Recovery(f, RecoverySeconds(completions, loadStart + f.Ended, observedUntil, preFault)))],
        };
    }

    public static IReadOnlyList<ChaosVerdict> Verdicts(ChaosFigures figures, IReadOnlyList<FaultRecord> faults)
    {
        var reasons = figures.DeadLettered.Count == 0 ? "none" : string.Join(", ", figures.DeadLettered.Select(d => $"{d.Key} {d.Value}"));
        var unrecovered = figures.Recoveries.Where(r => r.Seconds is null).ToList();
        return
        [
            new("every accepted request completed or dead-lettered with a reason (lost 0)", figures.Lost == 0 && figures.Unaccounted == 0,
                Invariant($"{figures.Accepted} accepted ({figures.Unanswered} unanswered): {figures.Completed} completed, {figures.DeadLettered.Values.Sum()} dead-lettered ({reasons}); lost {figures.Lost}, unaccounted {figures.Unaccounted}")),
            new("nothing stored twice (duplicated 0)", figures.DuplicatedTotal == 0,
                $"duplicated {figures.DuplicatedTotal}" + (figures.DuplicatedTotal == 0 ? string.Empty : ": " + string.Join(", ", figures.Duplicated.Where(d => d.Value > 0).Select(d => $"{d.Key} {d.Value}")))),
            new("nothing half-done (half-done 0)", figures.HalfDone.Count == 0,
                $"half-done {figures.HalfDone.Count}" + (figures.HalfDone.Count == 0 ? string.Empty : ": " + string.Join("; ", figures.HalfDone.Take(5)))),
            new("no valid request dead-lettered for a transient cause", figures.TransientDeadLetters == 0, $"{figures.TransientDeadLetters} dead-lettered for a transient cause"),
            new("every fault ran", faults.Count > 0 && FaultSchedule.SlottedFaults.All(k => faults.Any(f => f.Kind == k)) && faults.Sum(f => f.ReplicasKilled) > 0,
                Invariant($"{faults.Count} faults, {faults.Sum(f => f.ReplicasKilled)} replicas killed")),
            new(Invariant($"completion rate back to {RecoveredShare:P0} of the pre-fault rate after every fault"), figures.PreFaultRate > 0 && unrecovered.Count == 0,
                Invariant($"pre-fault {figures.PreFaultRate:0.0}/s; slowest {figures.Recoveries.Where(r => r.Seconds is not null).Select(r => r.Seconds!.Value).DefaultIfEmpty(0).Max():0} s") +
                (unrecovered.Count == 0 ? string.Empty : "; not recovered: " + string.Join(", ", unrecovered.Select(r => r.Fault.Kind)))),
        ];
    }

    /// <summary>Completions per second over the second half of the warm-up, before the first fault (the system's steady rate: its start-up and first backlog excluded).</summary>
    internal static double PreFaultRate(IReadOnlyList<DateTimeOffset> completions, DateTimeOffset loadStart, IReadOnlyList<FaultRecord> faults)
    {
        if (faults.Count == 0)
        {
            return 0;
        }

        var firstFault = loadStart + faults.Min(f => f.Started);
        var from = loadStart + ((firstFault - loadStart) / 2);
        var seconds = (firstFault - from).TotalSeconds;
        return seconds <= 0 ? 0 : completions.Count(c => c >= from && c < firstFault) / seconds;
    }

    /// <summary>
    /// Seconds from <paramref name="faultEnd"/> until the first window of <see cref="RecoveryWindowSeconds"/> whose completion rate
    /// reaches <see cref="RecoveredShare"/> of <paramref name="preFaultRate"/>; null when none does before <paramref name="observedUntil"/>.
    /// </summary>
    internal static double? RecoverySeconds(IReadOnlyList<DateTimeOffset> completions, DateTimeOffset faultEnd, DateTimeOffset observedUntil, double preFaultRate)
    {
        var needed = RecoveredShare * preFaultRate * RecoveryWindowSeconds;
        var sorted = completions.Where(c => c >= faultEnd && c < observedUntil).Order().ToList();
        for (var offset = 0; faultEnd.AddSeconds(offset + RecoveryWindowSeconds) <= observedUntil; offset++)
        {
            var from = faultEnd.AddSeconds(offset);
            var to = from.AddSeconds(RecoveryWindowSeconds);
            if (sorted.Count(c => c >= from && c < to) >= needed)
            {
                return offset;
            }
        }

        return null;
    }

    private static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);
}
