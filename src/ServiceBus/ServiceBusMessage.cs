namespace DroneDelivery.ServiceBus;

/// <summary>A message to send (the SDK's shape).</summary>
public class ServiceBusMessage
{
    public ServiceBusMessage()
        : this(BinaryData.Empty)
    {
    }

    public ServiceBusMessage(string body)
        : this(BinaryData.FromString(body))
    {
    }

    public ServiceBusMessage(ReadOnlyMemory<byte> body)
        : this(BinaryData.FromBytes(body))
    {
    }

    public ServiceBusMessage(BinaryData body)
    {
        Body = body;
    }

    /// <summary>Copies a received message so it can be sent again (e.g. resubmitted from a dead-letter queue).</summary>
    public ServiceBusMessage(ServiceBusReceivedMessage received)
        : this(received.Body)
    {
        MessageId = received.MessageId;
        CorrelationId = received.CorrelationId;
        Subject = received.Subject;
        ContentType = received.ContentType;
        To = received.To;
        ReplyTo = received.ReplyTo;
        SessionId = received.SessionId;
        ReplyToSessionId = received.ReplyToSessionId;
        PartitionKey = received.PartitionKey;
        if (received.TimeToLive != TimeSpan.MaxValue)
        {
            TimeToLive = received.TimeToLive;
        }

        foreach (var (key, value) in received.ApplicationProperties)
        {
            if (key is not (Primitives.ServiceBusAmqpNames.DeadLetterReasonProperty or Primitives.ServiceBusAmqpNames.DeadLetterErrorDescriptionProperty))
            {
                ApplicationProperties[key] = value;
            }
        }
    }

    public BinaryData Body { get; set; }

    public string? MessageId { get; set; }

    public string? CorrelationId { get; set; }

    public string? Subject { get; set; }

    public string? ContentType { get; set; }

    public string? To { get; set; }

    public string? ReplyTo { get; set; }

    public string? SessionId { get; set; }

    public string? ReplyToSessionId { get; set; }

    public string? PartitionKey { get; set; }

    public TimeSpan TimeToLive { get; set; } = TimeSpan.MaxValue;

    /// <summary>
    /// When set, the message is enqueued at this time rather than when it is sent (the <c>x-opt-scheduled-enqueue-time</c>
    /// annotation): until then receivers do not get it, and a peek shows it as <see cref="ServiceBusMessageState.Scheduled"/>.
    /// </summary>
    public DateTimeOffset ScheduledEnqueueTime { get; set; }

    /// <summary>User properties: string, bool, integral and floating-point numbers, Guid, DateTime(Offset), TimeSpan, Uri, byte[].</summary>
    public IDictionary<string, object> ApplicationProperties { get; } = new Dictionary<string, object>(StringComparer.Ordinal);

    public override string ToString() => $"{{MessageId:{MessageId}}}";
}

/// <summary>A received message with the broker's annotations (the SDK's shape).</summary>
public class ServiceBusReceivedMessage
{
    internal ServiceBusReceivedMessage()
    {
    }

    public BinaryData Body { get; internal init; } = BinaryData.Empty;

    public string? MessageId { get; internal init; }

    public string? CorrelationId { get; internal init; }

    public string? Subject { get; internal init; }

    public string? ContentType { get; internal init; }

    public string? To { get; internal init; }

    public string? ReplyTo { get; internal init; }

    public string? SessionId { get; internal init; }

    public string? ReplyToSessionId { get; internal init; }

    public string? PartitionKey { get; internal init; }

    public TimeSpan TimeToLive { get; internal init; } = TimeSpan.MaxValue;

    public IReadOnlyDictionary<string, object> ApplicationProperties { get; internal init; } = new Dictionary<string, object>();

    /// <summary>The lock token (the delivery tag as a GUID); empty for received-and-deleted and peeked messages.</summary>
    public string LockToken => LockTokenGuid.ToString();

    public DateTimeOffset LockedUntil { get; internal set; }

    public long SequenceNumber { get; internal init; }

    public long EnqueuedSequenceNumber { get; internal init; }

    public DateTimeOffset EnqueuedTime { get; internal init; }

    /// <summary>The time the message was scheduled for (default when it was not scheduled).</summary>
    public DateTimeOffset ScheduledEnqueueTime { get; internal init; }

    public DateTimeOffset ExpiresAt => TimeToLive == TimeSpan.MaxValue || EnqueuedTime + TimeToLive > DateTimeOffset.MaxValue - TimeSpan.FromDays(1)
        ? DateTimeOffset.MaxValue
        : EnqueuedTime + TimeToLive;

    /// <summary>Delivery attempts including this one.</summary>
    public int DeliveryCount { get; internal init; }

    public string? DeadLetterSource { get; internal init; }

    public string? DeadLetterReason => ApplicationProperties.TryGetValue(Primitives.ServiceBusAmqpNames.DeadLetterReasonProperty, out var value) ? value as string : null;

    public string? DeadLetterErrorDescription => ApplicationProperties.TryGetValue(Primitives.ServiceBusAmqpNames.DeadLetterErrorDescriptionProperty, out var value) ? value as string : null;

    public ServiceBusMessageState State { get; internal init; }

    internal Guid LockTokenGuid { get; init; }

    /// <summary>The AMQP delivery this message arrived on (null for peeked or management-received messages).</summary>
    internal Amqp.IncomingDelivery? Delivery { get; init; }

    /// <summary>Set once the message was settled through this client, so auto-complete skips it.</summary>
    internal bool IsSettled { get; set; }

    public override string ToString() => $"{{MessageId:{MessageId}, SequenceNumber:{SequenceNumber}}}";
}
