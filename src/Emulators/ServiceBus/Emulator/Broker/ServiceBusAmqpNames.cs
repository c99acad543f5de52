using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// The names Azure Service Bus uses on the AMQP wire: annotations, link properties, CBS and management
/// operations, error conditions — what the broker reads from and answers to the official clients. Tests that
/// play a client on raw AMQP use them too.
/// </summary>
public static class ServiceBusAmqpNames
{
    // Message annotations (broker -> client)
    public static readonly AmqpSymbol SequenceNumber = "x-opt-sequence-number";
    public static readonly AmqpSymbol EnqueuedTime = "x-opt-enqueued-time";
    public static readonly AmqpSymbol LockedUntil = "x-opt-locked-until";
    public static readonly AmqpSymbol EnqueueSequenceNumber = "x-opt-enqueue-sequence-number";
    public static readonly AmqpSymbol MessageState = "x-opt-message-state";
    public static readonly AmqpSymbol DeadLetterSource = "x-opt-deadletter-source";
    public static readonly AmqpSymbol PartitionKey = "x-opt-partition-key";
    public static readonly AmqpSymbol ViaPartitionKey = "x-opt-via-partition-key";
    public static readonly AmqpSymbol ScheduledEnqueueTime = "x-opt-scheduled-enqueue-time";
    public static readonly AmqpSymbol LockToken = "x-opt-lock-token";

    // Application properties of dead-lettered messages
    public const string DeadLetterReasonProperty = "DeadLetterReason";
    public const string DeadLetterErrorDescriptionProperty = "DeadLetterErrorDescription";

    // Message formats
    /// <summary>A transfer whose data sections each hold one complete encoded message.</summary>
    public const uint BatchMessageFormat = 0x80013700;

    // Link properties
    public static readonly AmqpSymbol TimeoutProperty = "com.microsoft:timeout";
    public static readonly AmqpSymbol EntityTypeProperty = "com.microsoft:entity-type";
    public static readonly AmqpSymbol TrackingIdProperty = "com.microsoft:tracking-id";
    public const string EntityTypeManagement = "entity-mgmt";

    // Error conditions
    public static readonly AmqpSymbol MessageLockLostError = "com.microsoft:message-lock-lost";
    public static readonly AmqpSymbol DeadLetterError = "com.microsoft:dead-letter";
    public static readonly AmqpSymbol TimeoutError = "com.microsoft:timeout";
    public static readonly AmqpSymbol ServerBusyError = "com.microsoft:server-busy";
    public static readonly AmqpSymbol EntityDisabledError = "com.microsoft:entity-disabled";
    public static readonly AmqpSymbol MessageNotFoundError = "com.microsoft:message-not-found";
    public static readonly AmqpSymbol SessionLockLostError = "com.microsoft:session-lock-lost";
    public static readonly AmqpSymbol ArgumentError = "com.microsoft:argument-error";
    public static readonly AmqpSymbol EntityAlreadyExistsError = "com.microsoft:entity-already-exists";

    // Nodes
    public const string CbsNode = "$cbs";
    public const string ManagementNodeSuffix = "/$management";
    public const string DeadLetterQueueSuffix = "/$DeadLetterQueue";

    // CBS put-token
    public const string CbsOperationKey = "operation";
    public const string CbsPutToken = "put-token";
    public const string CbsTokenTypeKey = "type";
    public const string CbsAudienceKey = "name";
    public const string CbsExpirationKey = "expiration";
    public const string CbsStatusCodeKey = "status-code";
    public const string CbsStatusDescriptionKey = "status-description";
    public const string SasTokenType = "servicebus.windows.net:sastoken";
    public const string JwtTokenType = "jwt";

    // Management request / response
    public const string ManagementOperationKey = "operation";
    public const string ManagementServerTimeoutKey = "com.microsoft:server-timeout";
    public const string ManagementTrackingIdKey = "com.microsoft:tracking-id";
    public const string AssociatedLinkNameKey = "associated-link-name";
    public const string ManagementStatusCodeKey = "statusCode";
    public const string ManagementStatusDescriptionKey = "statusDescription";
    public const string ManagementErrorConditionKey = "errorCondition";

    public const string RenewLockOperation = "com.microsoft:renew-lock";
    public const string PeekMessageOperation = "com.microsoft:peek-message";
    public const string UpdateDispositionOperation = "com.microsoft:update-disposition";
    public const string ReceiveBySequenceNumberOperation = "com.microsoft:receive-by-sequence-number";
    public const string ScheduleMessageOperation = "com.microsoft:schedule-message";
    public const string CancelScheduledMessageOperation = "com.microsoft:cancel-scheduled-message";

    public const string LockTokensKey = "lock-tokens";
    public const string ExpirationsKey = "expirations";
    public const string FromSequenceNumberKey = "from-sequence-number";
    public const string MessageCountKey = "message-count";
    public const string MessagesKey = "messages";
    public const string MessageKey = "message";
    public const string LockTokenKey = "lock-token";
    public const string SequenceNumbersKey = "sequence-numbers";
    public const string ReceiverSettleModeKey = "receiver-settle-mode";
    public const string DispositionStatusKey = "disposition-status";
    public const string DeadLetterReasonKey = "deadletter-reason";
    public const string DeadLetterDescriptionKey = "deadletter-description";
    public const string PropertiesToModifyKey = "properties-to-modify";
    public const string SessionIdKey = "session-id";
    public const string MessageIdKey = "message-id";
    public const string PartitionKeyKey = "partition-key";
    public const string ViaPartitionKeyKey = "via-partition-key";

    public const string DispositionCompleted = "completed";
    public const string DispositionAbandoned = "abandoned";
    public const string DispositionDeferred = "defered";
    public const string DispositionSuspended = "suspended";
}
