using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

internal enum BrokeredMessageState
{
    Available,
    Locked,
    Deferred,

    /// <summary>Sent with a scheduled enqueue time still to come: peekable and cancellable, not receivable.</summary>
    Scheduled,
}

/// <summary>A message held by a queue, with the broker's bookkeeping (sequence number, lock, delivery count).</summary>
internal sealed class BrokeredMessage(AmqpMessage message, long sequenceNumber, DateTime enqueuedTime, DateTime expiresAt)
{
    public AmqpMessage Message { get; } = message;

    public long SequenceNumber { get; } = sequenceNumber;

    public DateTime EnqueuedTime { get; } = enqueuedTime;

    public DateTime ExpiresAt { get; } = expiresAt;

    /// <summary>The session the message belongs to (its group-id), if any.</summary>
    public string? SessionId => Message.Properties?.GroupId;

    /// <summary>Delivery attempts so far (each lock acquisition counts; a release gives one back).</summary>
    public int DeliveryCount { get; set; }

    public BrokeredMessageState State { get; set; }

    public Guid LockToken { get; set; }

    /// <summary>Deferred messages stay deferred (retrievable only by sequence number) even while locked.</summary>
    public bool IsDeferred { get; set; }

    public DateTime LockedUntil { get; set; }

    public string? DeadLetterSource { get; set; }

    /// <summary>Encodes the message as delivered: header with prior attempts, Service Bus annotations, original sections.</summary>
    public byte[] Encode(uint headerDeliveryCount, DateTime? lockedUntil)
    {
        var annotations = new Dictionary<object, object?>();
        if (Message.MessageAnnotations is { } original)
        {
            foreach (var (key, value) in original)
            {
                annotations[key] = value;
            }
        }

        annotations[ServiceBusAmqpNames.SequenceNumber] = SequenceNumber;
        annotations[ServiceBusAmqpNames.EnqueuedTime] = EnqueuedTime;
        annotations[ServiceBusAmqpNames.EnqueueSequenceNumber] = SequenceNumber;
        if (lockedUntil is { } until)
        {
            annotations[ServiceBusAmqpNames.LockedUntil] = until;
        }
        else
        {
            annotations.Remove(ServiceBusAmqpNames.LockedUntil);
        }

        if (State == BrokeredMessageState.Scheduled)
        {
            annotations[ServiceBusAmqpNames.MessageState] = 2;
        }
        else if (IsDeferred)
        {
            annotations[ServiceBusAmqpNames.MessageState] = 1;
        }

        if (DeadLetterSource is not null)
        {
            annotations[ServiceBusAmqpNames.DeadLetterSource] = DeadLetterSource;
        }

        var header = Message.Header;
        using var buffer = new ByteBuffer(512 + (_bare?.Length ?? 0));
        new MessageHeader
        {
            Durable = header?.Durable ?? false,
            Priority = header?.Priority,
            Ttl = header?.Ttl,
            FirstAcquirer = header?.FirstAcquirer ?? false,
            DeliveryCount = headerDeliveryCount,
        }.Encode(buffer);
        AmqpEncoder.WriteDescriptor(buffer, Descriptors.MessageAnnotations);
        AmqpEncoder.WriteMap(buffer, annotations);
        buffer.Write(Bare());
        return buffer.ToArray();
    }

    // The bare message (properties, application properties, body) and footer never change between deliveries
    // unless properties are modified, so they are encoded once.
    private byte[]? _bare;

    public void InvalidateEncoding() => _bare = null;

    private byte[] Bare()
    {
        if (_bare is null)
        {
            using var buffer = new ByteBuffer(512);
            new AmqpMessage { Properties = DeliveredProperties(), ApplicationProperties = Message.ApplicationProperties, Body = Message.Body, Footer = Message.Footer }.Encode(buffer);
            _bare = buffer.ToArray();
        }

        return _bare;
    }

    /// <summary>
    /// The properties as delivered, as the service sets them: creation-time is the enqueued time and absolute-expiry-time the
    /// broker's expiry, the enqueued time plus the time to live in force. The SDK reads ExpiresAt from the latter and
    /// TimeToLive from their difference; left as the sender set them, both would follow the sender's clock.
    /// </summary>
    private MessageProperties? DeliveredProperties()
    {
        var sent = Message.Properties;
        if (ExpiresAt == DateTime.MaxValue)
        {
            return sent;
        }

        return new MessageProperties
        {
            MessageId = sent?.MessageId,
            UserId = sent?.UserId,
            To = sent?.To,
            Subject = sent?.Subject,
            ReplyTo = sent?.ReplyTo,
            CorrelationId = sent?.CorrelationId,
            ContentType = sent?.ContentType,
            ContentEncoding = sent?.ContentEncoding,
            AbsoluteExpiryTime = ExpiresAt,
            CreationTime = EnqueuedTime,
            GroupId = sent?.GroupId,
            GroupSequence = sent?.GroupSequence,
            ReplyToGroupId = sent?.ReplyToGroupId,
        };
    }

    /// <summary>Applies properties-to-modify (abandon, defer, dead-letter) as application properties, as Service Bus does.</summary>
    public void ApplyProperties(IReadOnlyDictionary<object, object?>? properties)
    {
        if (properties is null || properties.Count == 0)
        {
            return;
        }

        _bare = null;
        var target = Message.EnsureApplicationProperties();
        foreach (var (key, value) in properties)
        {
            var name = key switch
            {
                string s => s,
                AmqpSymbol symbol => symbol.Value,
                _ => key.ToString() ?? string.Empty,
            };
            target[name] = value;
        }
    }
}
