using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace DroneDelivery.ServiceBus;

/// <summary>
/// Names of the client's telemetry: one <see cref="ActivitySource"/> and one <see cref="Meter"/>, both named
/// <see cref="SourceName"/>. Activity names follow the official SDK ("ServiceBusReceiver.Complete", ...), so the case
/// study's query "Workflow's Service Bus dependency calls named Complete, per 5 s" counts <see cref="CompleteActivity"/>.
/// </summary>
public static class ServiceBusTelemetry
{
    public const string SourceName = "DroneDelivery.ServiceBus";

    public const string SendActivity = "ServiceBusSender.Send";
    public const string ScheduleActivity = "ServiceBusSender.Schedule";
    public const string CancelActivity = "ServiceBusSender.Cancel";
    public const string ReceiveActivity = "ServiceBusReceiver.Receive";
    public const string PeekActivity = "ServiceBusReceiver.Peek";
    public const string ProcessActivity = "ServiceBusProcessor.ProcessMessage";
    public const string CompleteActivity = "ServiceBusReceiver.Complete";
    public const string AbandonActivity = "ServiceBusReceiver.Abandon";
    public const string DeadLetterActivity = "ServiceBusReceiver.DeadLetter";
    public const string DeferActivity = "ServiceBusReceiver.Defer";
    public const string RenewLockActivity = "ServiceBusReceiver.RenewMessageLock";

    public const string MessagesSentCounter = "servicebus.client.messages.sent";
    public const string MessagesReceivedCounter = "servicebus.client.messages.received";
    public const string MessagesCompletedCounter = "servicebus.client.messages.completed";
    public const string MessagesAbandonedCounter = "servicebus.client.messages.abandoned";
    public const string MessagesDeadLetteredCounter = "servicebus.client.messages.deadlettered";
    public const string MessagesDeferredCounter = "servicebus.client.messages.deferred";
    public const string LockLostCounter = "servicebus.client.lock_lost";
    public const string LockRenewalsCounter = "servicebus.client.lock_renewals";

    /// <summary>Application property carrying the W3C trace context of the sender (the SDK's name).</summary>
    public const string DiagnosticIdProperty = "Diagnostic-Id";

    public const string TraceParentProperty = "traceparent";
    public const string TraceStateProperty = "tracestate";

    // Attribute names (OpenTelemetry messaging semantic conventions).
    public const string MessagingSystemAttribute = "messaging.system";
    public const string DestinationAttribute = "messaging.destination.name";
    public const string OperationAttribute = "messaging.operation.name";
    public const string MessageIdAttribute = "messaging.message.id";
    public const string BatchCountAttribute = "messaging.batch.message_count";
    public const string DeliveryCountAttribute = "messaging.servicebus.message.delivery_count";
    public const string DispositionAttribute = "messaging.servicebus.disposition_status";
    public const string ServerAddressAttribute = "server.address";
    public const string MessagingSystemValue = "servicebus";

    internal static readonly ActivitySource Source = new(SourceName);
    internal static readonly Meter Meter = new(SourceName);
    internal static readonly Counter<long> Sent = Meter.CreateCounter<long>(MessagesSentCounter, "{message}", "Messages sent.");
    internal static readonly Counter<long> Received = Meter.CreateCounter<long>(MessagesReceivedCounter, "{message}", "Messages received (each delivery counts).");
    internal static readonly Counter<long> Completed = Meter.CreateCounter<long>(MessagesCompletedCounter, "{message}", "Messages completed.");
    internal static readonly Counter<long> Abandoned = Meter.CreateCounter<long>(MessagesAbandonedCounter, "{message}", "Messages abandoned.");
    internal static readonly Counter<long> DeadLettered = Meter.CreateCounter<long>(MessagesDeadLetteredCounter, "{message}", "Messages dead-lettered by the client.");
    internal static readonly Counter<long> Deferred = Meter.CreateCounter<long>(MessagesDeferredCounter, "{message}", "Messages deferred.");
    internal static readonly Counter<long> LockLost = Meter.CreateCounter<long>(LockLostCounter, "{operation}", "Settlements or renewals that failed with MessageLockLost.");
    internal static readonly Counter<long> LockRenewals = Meter.CreateCounter<long>(LockRenewalsCounter, "{renewal}", "Successful message lock renewals.");

    internal static Activity? Start(string name, ActivityKind kind, string entityPath, string fullyQualifiedNamespace, string operation, ActivityContext parent = default)
    {
        var activity = Source.StartActivity(name, kind, parent);
        if (activity is not null)
        {
            activity.SetTag(MessagingSystemAttribute, MessagingSystemValue);
            activity.SetTag(DestinationAttribute, entityPath);
            activity.SetTag(OperationAttribute, operation);
            activity.SetTag(ServerAddressAttribute, fullyQualifiedNamespace);
        }

        return activity;
    }

    internal static void Fail(Activity? activity, Exception exception)
    {
        if (activity is null)
        {
            return;
        }

        activity.SetStatus(ActivityStatusCode.Error, exception.Message);
        activity.SetTag("error.type", exception is ServiceBusException sb ? sb.Reason.ToString() : exception.GetType().FullName);
    }

    internal static KeyValuePair<string, object?> Entity(string entityPath) => new(DestinationAttribute, entityPath);
}
