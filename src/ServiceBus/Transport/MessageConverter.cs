using System.Diagnostics;
using DroneDelivery.Amqp.Codec;
using DroneDelivery.Amqp.Messaging;
using DroneDelivery.ServiceBus.Primitives;

namespace DroneDelivery.ServiceBus.Transport;

/// <summary>Converts between the Service Bus message types and AMQP messages, as the SDK's converter does.</summary>
internal static class MessageConverter
{
    public static AmqpMessage ToAmqp(ServiceBusMessage message, TimeProvider time)
    {
        var amqp = new AmqpMessage
        {
            Properties = new MessageProperties
            {
                MessageId = message.MessageId,
                CorrelationId = message.CorrelationId,
                Subject = message.Subject,
                ContentType = message.ContentType is { } contentType ? new AmqpSymbol(contentType) : (AmqpSymbol?)null,
                To = message.To,
                ReplyTo = message.ReplyTo,
                GroupId = message.SessionId,
                ReplyToGroupId = message.ReplyToSessionId,
            },
            Body = new DataBody(message.Body.ToMemory()),
        };
        if (message.TimeToLive != TimeSpan.MaxValue && message.TimeToLive > TimeSpan.Zero)
        {
            amqp.EnsureHeader().Ttl = (uint)Math.Min(uint.MaxValue, message.TimeToLive.TotalMilliseconds);
            var now = time.GetUtcNow().UtcDateTime;
            amqp.Properties.CreationTime = now;
            amqp.Properties.AbsoluteExpiryTime = message.TimeToLive >= DateTime.MaxValue - now ? DateTime.MaxValue : now + message.TimeToLive;
        }

        if (message.PartitionKey is not null)
        {
            amqp.EnsureMessageAnnotations()[ServiceBusAmqpNames.PartitionKey] = message.PartitionKey;
        }

        if (message.ScheduledEnqueueTime != default)
        {
            amqp.EnsureMessageAnnotations()[ServiceBusAmqpNames.ScheduledEnqueueTime] = message.ScheduledEnqueueTime.UtcDateTime;
        }

        if (message.ApplicationProperties.Count > 0)
        {
            var properties = amqp.EnsureApplicationProperties();
            foreach (var (key, value) in message.ApplicationProperties)
            {
                properties[key] = ToAmqpValue(value);
            }
        }

        return amqp;
    }

    /// <summary>Adds the sender's trace context (Diagnostic-Id and traceparent) unless the message already has one.</summary>
    public static void AddTraceContext(ServiceBusMessage message, Activity? activity)
    {
        if (activity is null || message.ApplicationProperties.ContainsKey(ServiceBusTelemetry.DiagnosticIdProperty))
        {
            return;
        }

        message.ApplicationProperties[ServiceBusTelemetry.DiagnosticIdProperty] = activity.Id!;
        message.ApplicationProperties[ServiceBusTelemetry.TraceParentProperty] = activity.Id!;
        if (activity.TraceStateString is { Length: > 0 } state)
        {
            message.ApplicationProperties[ServiceBusTelemetry.TraceStateProperty] = state;
        }
    }

    /// <summary>The sender's trace context carried by a received message, if any.</summary>
    public static ActivityContext ParentContext(ServiceBusReceivedMessage message)
    {
        foreach (var key in new[] { ServiceBusTelemetry.TraceParentProperty, ServiceBusTelemetry.DiagnosticIdProperty })
        {
            if (message.ApplicationProperties.TryGetValue(key, out var value) && value is string text &&
                ActivityContext.TryParse(text, message.ApplicationProperties.TryGetValue(ServiceBusTelemetry.TraceStateProperty, out var ts) ? ts as string : null, out var context))
            {
                return context;
            }
        }

        return default;
    }

    public static ServiceBusReceivedMessage FromAmqp(AmqpMessage amqp, Guid lockToken, bool peeked, DroneDelivery.Amqp.IncomingDelivery? delivery)
    {
        var annotations = amqp.MessageAnnotations;
        var properties = amqp.Properties;
        var application = new Dictionary<string, object>(StringComparer.Ordinal);
        if (amqp.ApplicationProperties is { } appProperties)
        {
            foreach (var (key, value) in appProperties)
            {
                if (value is not null)
                {
                    application[key] = value is AmqpSymbol symbol ? symbol.Value : value;
                }
            }
        }

        var headerCount = (int)(amqp.Header?.DeliveryCount ?? 0);
        var ttl = amqp.Header?.Ttl is { } ms and > 0 ? TimeSpan.FromMilliseconds(ms) : TimeSpan.MaxValue;
        var enqueued = Annotation<DateTime>(annotations, ServiceBusAmqpNames.EnqueuedTime);
        var lockedUntil = Annotation<DateTime>(annotations, ServiceBusAmqpNames.LockedUntil);
        var scheduled = Annotation<DateTime>(annotations, ServiceBusAmqpNames.ScheduledEnqueueTime);
        return new ServiceBusReceivedMessage
        {
            Body = Body(amqp.Body),
            MessageId = properties?.MessageId?.ToString(),
            CorrelationId = properties?.CorrelationId?.ToString(),
            Subject = properties?.Subject,
            ContentType = properties?.ContentType?.Value,
            To = properties?.To,
            ReplyTo = properties?.ReplyTo,
            SessionId = properties?.GroupId,
            ReplyToSessionId = properties?.ReplyToGroupId,
            PartitionKey = Annotation<string>(annotations, ServiceBusAmqpNames.PartitionKey),
            TimeToLive = ttl,
            ApplicationProperties = application,
            SequenceNumber = Annotation<long>(annotations, ServiceBusAmqpNames.SequenceNumber),
            EnqueuedSequenceNumber = Annotation<long>(annotations, ServiceBusAmqpNames.EnqueueSequenceNumber),
            EnqueuedTime = enqueued == default ? default : new DateTimeOffset(DateTime.SpecifyKind(enqueued, DateTimeKind.Utc)),
            ScheduledEnqueueTime = scheduled == default ? default : new DateTimeOffset(DateTime.SpecifyKind(scheduled, DateTimeKind.Utc)),
            LockedUntil = lockedUntil == default ? default : new DateTimeOffset(DateTime.SpecifyKind(lockedUntil, DateTimeKind.Utc)),
            DeliveryCount = peeked ? headerCount : headerCount + 1,
            DeadLetterSource = Annotation<string>(annotations, ServiceBusAmqpNames.DeadLetterSource),
            State = (ServiceBusMessageState)Annotation<int>(annotations, ServiceBusAmqpNames.MessageState),
            LockTokenGuid = lockToken,
            Delivery = delivery,
        };
    }

    private static T? Annotation<T>(Dictionary<object, object?>? annotations, AmqpSymbol key) =>
        annotations is not null && annotations.TryGetValue(key, out var value) && value is T typed ? typed : default;

    private static BinaryData Body(MessageBody? body) => body switch
    {
        DataBody data => BinaryData.FromBytes(data.Combined()),
        ValueBody { Value: byte[] bytes } => BinaryData.FromBytes(bytes),
        ValueBody { Value: string text } => BinaryData.FromString(text),
        ValueBody { Value: null } or null => BinaryData.Empty,
        ValueBody value => BinaryData.FromString(value.Value?.ToString() ?? string.Empty),
        SequenceBody => BinaryData.Empty,
        _ => BinaryData.Empty,
    };

    private static object? ToAmqpValue(object? value) => value switch
    {
        DateTimeOffset offset => offset.UtcDateTime,
        Uri uri => uri.ToString(),
        _ => value,
    };
}
