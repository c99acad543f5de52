namespace DroneDelivery.Emulators.ServiceBus.Metrics;

/// <summary>
/// Names of the emulator's metrics: Prometheus series on <c>/metrics</c> (each with a <c>queue</c> label; dead-letters
/// also with <c>reason</c>; injected faults with <c>entity</c> and <c>kind</c> instead), the names of its instruments
/// (<see cref="EmulatorInstruments"/>) as the exporter keeps them, and the matching JSON fields on <see cref="JsonPath"/>.
/// </summary>
public static class EmulatorMetricNames
{
    public const string PrometheusPath = EmulatorMetricsEndpoint.Path;
    public const string JsonPath = "/_emulator/metrics";
    public const string HealthPath = "/health";

    public const string IncomingMessages = "servicebus_emulator_incoming_messages_total";
    public const string OutgoingDeliveries = "servicebus_emulator_outgoing_deliveries_total";
    public const string CompletedMessages = "servicebus_emulator_completed_messages_total";
    public const string AbandonedMessages = "servicebus_emulator_abandoned_messages_total";
    public const string DeferredMessages = "servicebus_emulator_deferred_messages_total";
    public const string DeadLetteredMessages = "servicebus_emulator_deadlettered_messages_total";
    public const string LockLostSettlements = "servicebus_emulator_lock_lost_settlements_total";
    public const string LockRenewals = "servicebus_emulator_lock_renewals_total";
    public const string LockExpirations = "servicebus_emulator_lock_expirations_total";
    public const string ExpiredMessages = "servicebus_emulator_expired_messages_total";
    public const string ActiveMessages = "servicebus_emulator_active_messages";
    public const string LockedMessages = "servicebus_emulator_locked_messages";
    public const string ScheduledMessages = "servicebus_emulator_scheduled_messages";
    public const string DeadLetterMessages = "servicebus_emulator_deadletter_messages";
    public const string OldestMessageAgeSeconds = "servicebus_emulator_oldest_message_age_seconds";
    public const string SessionLockRenewals = "servicebus_emulator_session_lock_renewals_total";
    public const string SessionLockExpirations = "servicebus_emulator_session_lock_expirations_total";
    public const string ActiveSessions = "servicebus_emulator_active_sessions";
    public const string LockedSessions = "servicebus_emulator_locked_sessions";

    /// <summary>Counter of injected faults; labels <c>entity</c> (empty for a namespace pause) and <c>kind</c>.</summary>
    public const string InjectedFaults = "servicebus_emulator_injected_faults_total";

    public const string QueueLabel = "queue";
    public const string ReasonLabel = "reason";
    public const string EntityLabel = "entity";
    public const string KindLabel = "kind";

    /// <summary>Reason recorded when a message exceeded the queue's MaxDeliveryCount.</summary>
    public const string MaxDeliveryCountExceededReason = "MaxDeliveryCountExceeded";

    /// <summary>Reason recorded when a message expired and the queue dead-letters on expiration.</summary>
    public const string TtlExpiredReason = "TTLExpiredException";

    /// <summary>Reason recorded when a client dead-lettered a message without giving one.</summary>
    public const string UnspecifiedReason = "Unspecified";
}
