using System.Diagnostics.Metrics;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.Workflow;

/// <summary>
/// Workflow's own telemetry: messages by outcome, process duration and per-backend call durations
/// (the case study's "Process" operation and its dependency percentiles). Service Bus' own spans (Process,
/// Complete, DeadLetter, ...) come from the SDK, its counters (received, completed, lock lost, ...) from
/// <see cref="DroneDelivery.ServiceClients.Messaging.ServiceBusClientTelemetry"/>.
/// </summary>
public static class WorkflowTelemetry
{
    /// <summary>ActivitySource and Meter name.</summary>
    public const string SourceName = "DroneDelivery.Workflow";

    /// <summary>Counter of messages handled; tags <c>operation</c> (delivery, cancel, reschedule, unknown) and <c>outcome</c> (<see cref="Outcomes"/>).</summary>
    public const string Messages = "dronedelivery.workflow.messages";

    /// <summary>Histogram of the time to handle one message, settlement included, in seconds; tags <c>operation</c> and <c>outcome</c>.</summary>
    public const string ProcessDuration = "dronedelivery.workflow.process.duration";

    /// <summary>
    /// Histogram of backend call durations in seconds (retries included); tags <c>backend</c>, <c>step</c>
    /// (e.g. CreatePackage, AssignDrone, ScheduleDelivery, ReleaseDrone) and <c>outcome</c>.
    /// </summary>
    public const string BackendDuration = "dronedelivery.workflow.backend.duration";

    /// <summary>
    /// Counter of retries scheduled after a transient failure; tags <c>operation</c> and <c>reason</c>
    /// (<c>{backend}_failed</c>, <c>{backend}_timed_out</c>, <c>not_scheduled_yet</c>, <c>compensation_failed</c>).
    /// </summary>
    public const string Retries = "dronedelivery.workflow.retries";

    /// <summary>Counter of the circuit breaker's transitions; tag <c>state</c> (the state entered: open, half_open, closed).</summary>
    public const string BreakerTransitionsName = "dronedelivery.workflow.breaker.transitions";

    /// <summary>Values of the <c>outcome</c> tag of <see cref="Messages"/>.</summary>
    public static class Outcomes
    {
        public const string Completed = "completed";

        /// <summary>A transient failure: a copy is scheduled for later and the original completed.</summary>
        public const string Retried = "retried";

        /// <summary>Given back to the queue to be delivered again: a transient failure whose retry could not be scheduled, or a message held when the processor stopped.</summary>
        public const string Abandoned = "abandoned";

        /// <summary>Dead-lettered with nothing to undo.</summary>
        public const string DeadLettered = "deadlettered";

        /// <summary>Partial work undone (drone released, package removed), then dead-lettered.</summary>
        public const string Compensated = "compensated";

        /// <summary>The lock expired before settlement; the broker delivers the message again.</summary>
        public const string LockLost = "lock_lost";

        /// <summary>Settling failed otherwise.</summary>
        public const string SettleFailed = "settle_failed";
    }

    private static readonly ComponentTelemetry Telemetry = new(SourceName);

    internal static readonly Counter<long> MessageCount = Telemetry.Counter(Messages, "{message}", "Messages handled, by operation and outcome.");

    internal static readonly Histogram<double> ProcessDurations = Telemetry.Duration(ProcessDuration, "Time to handle one message.");

    internal static readonly Counter<long> RetryCount = Telemetry.Counter(Retries, "{retry}", "Retries scheduled after a transient failure, by operation and reason.");

    internal static readonly Counter<long> BreakerTransitions = Telemetry.Counter(BreakerTransitionsName, "{transition}", "Circuit breaker transitions, by the state entered.");

    internal static readonly Histogram<double> BackendDurations = Telemetry.Duration(BackendDuration, "Duration of calls to the backends.");
}
