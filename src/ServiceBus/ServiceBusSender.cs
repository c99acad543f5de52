using System.Diagnostics;
using DroneDelivery.Amqp;
using DroneDelivery.Amqp.Framing;
using DroneDelivery.ServiceBus.Primitives;
using DroneDelivery.ServiceBus.Transport;

namespace DroneDelivery.ServiceBus;

/// <summary>Sends messages to a queue (the SDK's shape). The link is attached on first use and again after a failure.</summary>
public class ServiceBusSender : IAsyncDisposable
{
    private const long DefaultMaxMessageSize = 256 * 1024;
    private readonly ServiceBusClient _client;
    private readonly SemaphoreSlim _linkGate = new(1, 1);
    private readonly ManagementClient _management;
    private SenderLink? _link;
    private int _tag;

    internal ServiceBusSender(ServiceBusClient client, string entityPath)
    {
        _client = client;
        EntityPath = entityPath;
        Identifier = $"{entityPath}-{Guid.NewGuid()}";
        _management = new ManagementClient(client.Scope, entityPath);
    }

    public string EntityPath { get; }

    public string FullyQualifiedNamespace => _client.FullyQualifiedNamespace;

    public string Identifier { get; }

    public bool IsClosed { get; private set; }

    public virtual Task SendMessageAsync(ServiceBusMessage message, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(message);
        return SendMessagesAsync([message], cancellationToken);
    }

    /// <summary>Sends the messages in one transfer (a batch when there are several); all succeed or all fail.</summary>
    public virtual async Task SendMessagesAsync(IEnumerable<ServiceBusMessage> messages, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(messages);
        var list = messages.ToList();
        if (list.Count == 0)
        {
            throw new ArgumentException("At least one message is required.", nameof(messages));
        }

        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.SendActivity, ActivityKind.Producer, EntityPath, FullyQualifiedNamespace, "send");
        activity?.SetTag(ServiceBusTelemetry.BatchCountAttribute, list.Count);
        foreach (var message in list)
        {
            MessageConverter.AddTraceContext(message, activity ?? Activity.Current);
        }

        var encoded = list.Select(m => MessageConverter.ToAmqp(m, _client.Scope.Time).ToArray()).ToList();
        await SendCoreAsync(list, encoded, activity, cancellationToken).ConfigureAwait(false);
    }

    public virtual async Task SendMessagesAsync(ServiceBusMessageBatch messageBatch, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(messageBatch);
        if (messageBatch.Count == 0)
        {
            return;
        }

        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.SendActivity, ActivityKind.Producer, EntityPath, FullyQualifiedNamespace, "send");
        activity?.SetTag(ServiceBusTelemetry.BatchCountAttribute, messageBatch.Count);
        messageBatch.Lock();
        try
        {
            await SendCoreAsync(messageBatch.Messages, messageBatch.Encoded, activity, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            messageBatch.Unlock();
        }
    }

    /// <summary>Schedules a message to be enqueued at <paramref name="scheduledEnqueueTime"/>; returns its sequence number (to cancel it).</summary>
    public virtual async Task<long> ScheduleMessageAsync(ServiceBusMessage message, DateTimeOffset scheduledEnqueueTime, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(message);
        var sequenceNumbers = await ScheduleMessagesAsync([message], scheduledEnqueueTime, cancellationToken).ConfigureAwait(false);
        return sequenceNumbers[0];
    }

    /// <summary>
    /// Schedules messages with the <c>schedule-message</c> management operation: each message's
    /// <see cref="ServiceBusMessage.ScheduledEnqueueTime"/> is set to <paramref name="scheduledEnqueueTime"/>, as the SDK does.
    /// Returns their sequence numbers, in order.
    /// </summary>
    public virtual async Task<IReadOnlyList<long>> ScheduleMessagesAsync(IEnumerable<ServiceBusMessage> messages, DateTimeOffset scheduledEnqueueTime, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(messages);
        ObjectDisposedException.ThrowIf(IsClosed, this);
        var list = messages.ToList();
        if (list.Count == 0)
        {
            return [];
        }

        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.ScheduleActivity, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "schedule");
        activity?.SetTag(ServiceBusTelemetry.BatchCountAttribute, list.Count);
        var entries = new List<object?>(list.Count);
        foreach (var message in list)
        {
            message.ScheduledEnqueueTime = scheduledEnqueueTime.ToUniversalTime();
            MessageConverter.AddTraceContext(message, activity ?? Activity.Current);
            var amqp = MessageConverter.ToAmqp(message, _client.Scope.Time);
            var messageId = amqp.Properties!.MessageId?.ToString() ?? Guid.NewGuid().ToString("N");
            amqp.Properties.MessageId = messageId;
            var entry = new Dictionary<object, object?>
            {
                [ServiceBusAmqpNames.MessageKey] = amqp.ToArray(),
                [ServiceBusAmqpNames.MessageIdKey] = messageId,
            };
            if (!string.IsNullOrWhiteSpace(message.SessionId))
            {
                entry[ServiceBusAmqpNames.SessionIdKey] = message.SessionId;
            }

            if (!string.IsNullOrWhiteSpace(message.PartitionKey))
            {
                entry[ServiceBusAmqpNames.PartitionKeyKey] = message.PartitionKey;
            }

            entries.Add(entry);
        }

        try
        {
            var body = await _management.RequestAsync(ServiceBusAmqpNames.ScheduleMessageOperation,
                new Dictionary<object, object?> { [ServiceBusAmqpNames.MessagesKey] = entries }, _link?.Name, cancellationToken).ConfigureAwait(false);
            var sequenceNumbers = body?.GetValueOrDefault(ServiceBusAmqpNames.SequenceNumbersKey) switch
            {
                long[] longs => longs,
                List<object?> values => [.. values.Select(v => Convert.ToInt64(v, System.Globalization.CultureInfo.InvariantCulture))],
                _ => throw new ServiceBusException("The schedule-message response has no sequence-numbers.", ServiceBusFailureReason.GeneralError, EntityPath),
            };
            if (sequenceNumbers.Length != list.Count)
            {
                throw new ServiceBusException($"The schedule-message response has {sequenceNumbers.Length} sequence numbers for {list.Count} messages.", ServiceBusFailureReason.GeneralError, EntityPath);
            }

            ServiceBusTelemetry.Sent.Add(list.Count, ServiceBusTelemetry.Entity(EntityPath));
            return sequenceNumbers;
        }
        catch (Exception e)
        {
            ServiceBusTelemetry.Fail(activity, e);
            throw;
        }
    }

    /// <summary>Cancels a scheduled message by the sequence number scheduling returned.</summary>
    public virtual Task CancelScheduledMessageAsync(long sequenceNumber, CancellationToken cancellationToken = default) =>
        CancelScheduledMessagesAsync([sequenceNumber], cancellationToken);

    /// <summary>Cancels scheduled messages with the <c>cancel-scheduled-message</c> management operation.</summary>
    public virtual async Task CancelScheduledMessagesAsync(IEnumerable<long> sequenceNumbers, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(sequenceNumbers);
        ObjectDisposedException.ThrowIf(IsClosed, this);
        var numbers = sequenceNumbers.ToArray();
        if (numbers.Length == 0)
        {
            return;
        }

        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.CancelActivity, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "cancel_scheduled");
        try
        {
            await _management.RequestAsync(ServiceBusAmqpNames.CancelScheduledMessageOperation,
                new Dictionary<object, object?> { [ServiceBusAmqpNames.SequenceNumbersKey] = numbers }, _link?.Name, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            ServiceBusTelemetry.Fail(activity, e);
            throw;
        }
    }

    public virtual ValueTask<ServiceBusMessageBatch> CreateMessageBatchAsync(CancellationToken cancellationToken = default) =>
        CreateMessageBatchAsync(new CreateMessageBatchOptions(), cancellationToken);

    /// <summary>Creates a batch limited by the link's max-message-size (attaching the link to learn it).</summary>
    public virtual async ValueTask<ServiceBusMessageBatch> CreateMessageBatchAsync(CreateMessageBatchOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        var link = await _client.Scope.Retry.RunAsync((_, token) => GetLinkAsync(token), EntityPath, cancellationToken).ConfigureAwait(false);
        var linkMax = link.RemoteMaxMessageSize is > 0 and <= long.MaxValue ? (long)link.RemoteMaxMessageSize.Value : DefaultMaxMessageSize;
        if (options.MaxSizeInBytes is { } requested && (requested <= 0 || requested > linkMax))
        {
            throw new ArgumentOutOfRangeException(nameof(options), $"MaxSizeInBytes must be 1..{linkMax} (the link's max-message-size).");
        }

        return new ServiceBusMessageBatch(options.MaxSizeInBytes ?? linkMax, _client.Scope.Time);
    }

    public virtual async Task CloseAsync(CancellationToken cancellationToken = default)
    {
        if (IsClosed)
        {
            return;
        }

        IsClosed = true;
        await _management.CloseAsync().ConfigureAwait(false);
        if (_link is { IsClosed: false } link)
        {
            await link.CloseAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
            await link.Session.EndAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
        }
    }

    public async ValueTask DisposeAsync()
    {
        await CloseAsync().ConfigureAwait(false);
        GC.SuppressFinalize(this);
    }

    private async Task SendCoreAsync(IReadOnlyList<ServiceBusMessage> messages, IReadOnlyList<byte[]> encoded, Activity? activity, CancellationToken cancellationToken)
    {
        ObjectDisposedException.ThrowIf(IsClosed, this);
        var (payload, format) = ServiceBusMessageBatch.Envelope(messages, encoded);
        try
        {
            await _client.Scope.Retry.RunAsync(async (_, token) =>
            {
                var link = await GetLinkAsync(token).ConfigureAwait(false);
                if (link.RemoteMaxMessageSize is > 0 and var max && (ulong)payload.Length > max)
                {
                    throw new ServiceBusException($"The message ({payload.Length} bytes) is larger than the maximum size allowed ({max} bytes).", ServiceBusFailureReason.MessageSizeExceeded, EntityPath);
                }

                var tag = BitConverter.GetBytes(Interlocked.Increment(ref _tag));
                var outcome = await link.SendAsync(payload, tag, format, token).ConfigureAwait(false);
                if (outcome is Rejected rejected)
                {
                    throw ServiceBusErrors.From(rejected.Error ?? new Error { Condition = ErrorCondition.InternalError, Description = "The message was rejected." }, EntityPath);
                }

                if (outcome is not Accepted)
                {
                    throw new ServiceBusException($"The service answered the send with '{outcome}'.", ServiceBusFailureReason.GeneralError, EntityPath);
                }
            }, EntityPath, cancellationToken).ConfigureAwait(false);
            ServiceBusTelemetry.Sent.Add(messages.Count, ServiceBusTelemetry.Entity(EntityPath));
        }
        catch (Exception e)
        {
            ServiceBusTelemetry.Fail(activity, e);
            throw;
        }
    }

    private async Task<SenderLink> GetLinkAsync(CancellationToken cancellationToken)
    {
        if (_link is { IsClosed: false } open)
        {
            return open;
        }

        await _linkGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (_link is { IsClosed: false } again)
            {
                return again;
            }

            ObjectDisposedException.ThrowIf(IsClosed, this);
            var session = await _client.Scope.OpenSessionAsync(EntityPath, cancellationToken).ConfigureAwait(false);
            _link = await session.AttachSenderAsync(new LinkOptions
            {
                Name = $"{Identifier};{Guid.NewGuid():N}",
                Source = new Source { Address = Identifier },
                Target = new Target { Address = "/" + EntityPath },
                SenderSettleMode = SenderSettleMode.Mixed,
                Properties = new Dictionary<object, object?> { [ServiceBusAmqpNames.TimeoutProperty] = (uint)_client.Scope.Options.RetryOptions.TryTimeout.TotalMilliseconds },
            }, cancellationToken).ConfigureAwait(false);
            return _link;
        }
        finally
        {
            _linkGate.Release();
        }
    }
}
