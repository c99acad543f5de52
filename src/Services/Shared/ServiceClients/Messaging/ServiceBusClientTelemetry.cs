using System.Diagnostics.Metrics;
using Azure.Messaging.ServiceBus;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.ServiceClients.Messaging;

/// <summary>
/// The Service Bus client metrics of Ingestion and Workflow. The SDK traces its operations (ActivitySources
/// <c>Azure.Messaging.ServiceBus.*</c>, switched on in ServiceDefaults) but emits no metrics, so the services count
/// what they send and settle themselves, where they do it, tagged with <c>messaging.destination.name</c>. Names
/// are those the dashboards, the lab and docs/observability.md read (<c>servicebus_client_*_total</c> in Prometheus).
/// </summary>
public static class ServiceBusClientTelemetry
{
    /// <summary>Meter name.</summary>
    public const string MeterName = "DroneDelivery.Messaging";

    /// <summary>Counter of messages sent or scheduled (Ingestion's batches, Workflow's scheduled retries).</summary>
    public const string MessagesSent = "servicebus.client.messages.sent";

    /// <summary>Counter of messages handed to the Workflow's handler; each delivery counts, redeliveries too.</summary>
    public const string MessagesReceived = "servicebus.client.messages.received";

    public const string MessagesCompleted = "servicebus.client.messages.completed";

    public const string MessagesAbandoned = "servicebus.client.messages.abandoned";

    /// <summary>Counter of messages the Workflow dead-lettered (not those the broker moved there itself).</summary>
    public const string MessagesDeadLettered = "servicebus.client.messages.deadlettered";

    /// <summary>
    /// Counter of settlements and lock renewals that failed with <see cref="ServiceBusFailureReason.MessageLockLost"/>:
    /// the lock ran out first (in the prefetch buffer, or a handler outlived it) and the broker delivers the message again.
    /// </summary>
    public const string LockLost = "servicebus.client.lock_lost";

    /// <summary>The tag naming the queue.</summary>
    public const string DestinationTag = "messaging.destination.name";

    /// <summary>Application property carrying the sender's W3C trace context, under the name the SDK reads and writes.</summary>
    public const string DiagnosticIdProperty = "Diagnostic-Id";

    /// <summary>The W3C name of the same context, which the SDK prefers when both are present.</summary>
    public const string TraceParentProperty = "traceparent";

    private static readonly ComponentTelemetry Telemetry = new(MeterName);

    /// <summary>One counter per <see cref="MessageEvent"/>, in its order.</summary>
    private static readonly Counter<long>[] Counters =
    [
        Telemetry.Counter(MessagesSent, "{message}", "Messages sent or scheduled."),
        Telemetry.Counter(MessagesReceived, "{message}", "Messages received (each delivery counts)."),
        Telemetry.Counter(MessagesCompleted, "{message}", "Messages completed."),
        Telemetry.Counter(MessagesAbandoned, "{message}", "Messages abandoned."),
        Telemetry.Counter(MessagesDeadLettered, "{message}", "Messages dead-lettered by the client."),
        Telemetry.Counter(LockLost, "{operation}", "Settlements or lock renewals that failed with MessageLockLost."),
    ];

    /// <summary>Counts <paramref name="count"/> messages (or, for <see cref="MessageEvent.LockLost"/>, operations) on <paramref name="queue"/>.</summary>
    public static void Record(MessageEvent what, string queue, int count = 1) => Counters[(int)what].Add(count, Destination(queue));

    /// <summary>Whether <paramref name="error"/> says the message's lock had run out.</summary>
    public static bool IsLockLost(Exception error) => error is ServiceBusException { Reason: ServiceBusFailureReason.MessageLockLost };

    private static KeyValuePair<string, object?> Destination(string queue) => new(DestinationTag, queue);
}

/// <summary>What happened to messages, as the services count it (<see cref="ServiceBusClientTelemetry.Record"/>).</summary>
public enum MessageEvent
{
    Sent,
    Received,
    Completed,
    Abandoned,
    DeadLettered,
    LockLost,
}
