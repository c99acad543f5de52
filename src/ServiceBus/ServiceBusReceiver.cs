using System.Diagnostics;
using DroneDelivery.Amqp;
using DroneDelivery.Amqp.Codec;
using DroneDelivery.Amqp.Framing;
using DroneDelivery.Amqp.Messaging;
using DroneDelivery.ServiceBus.Primitives;
using DroneDelivery.ServiceBus.Transport;

namespace DroneDelivery.ServiceBus;

/// <summary>
/// Receives from a queue or its dead-letter queue (the SDK's shape and wire behaviour): the lock token is the
/// delivery tag; settlement is a disposition on the receive link answered by the service, with the management
/// link's update-disposition as the fallback; renew, peek and deferred receives go over <c>$management</c>.
/// </summary>
public class ServiceBusReceiver : IAsyncDisposable
{
    private readonly ServiceBusClient _client;
    private readonly SemaphoreSlim _linkGate = new(1, 1);
    private readonly Lock _creditSync = new();
    private ReceiverLink? _link;
    private readonly ManagementClient _management;
    private int _leftoverCredit;
    private long _lastPeekedSequenceNumber;

    internal ServiceBusReceiver(ServiceBusClient client, string queueName, ServiceBusReceiverOptions options)
    {
        if (options.PrefetchCount < 0)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "PrefetchCount must not be negative.");
        }

        _client = client;
        EntityPath = options.SubQueue switch
        {
            SubQueue.DeadLetter => queueName + ServiceBusAmqpNames.DeadLetterQueueSuffix,
            SubQueue.TransferDeadLetter => queueName + "/$Transfer" + ServiceBusAmqpNames.DeadLetterQueueSuffix,
            _ => queueName,
        };
        _management = new ManagementClient(client.Scope, EntityPath);
        ReceiveMode = options.ReceiveMode;
        PrefetchCount = options.PrefetchCount;
        Identifier = options.Identifier ?? $"{EntityPath}-{Guid.NewGuid()}";
    }

    public string EntityPath { get; }

    public string FullyQualifiedNamespace => _client.FullyQualifiedNamespace;

    public ServiceBusReceiveMode ReceiveMode { get; }

    public int PrefetchCount { get; }

    public string Identifier { get; }

    public bool IsClosed { get; private set; }

    private RetryPolicy Retry => _client.Scope.Retry;

    public virtual async Task<ServiceBusReceivedMessage?> ReceiveMessageAsync(TimeSpan? maxWaitTime = null, CancellationToken cancellationToken = default)
    {
        var messages = await ReceiveMessagesAsync(1, maxWaitTime, cancellationToken).ConfigureAwait(false);
        return messages.Count == 0 ? null : messages[0];
    }

    /// <summary>
    /// Waits up to <paramref name="maxWaitTime"/> (default: the retry options' try timeout) for a message, then returns it
    /// with any others already buffered, up to <paramref name="maxMessages"/>. Without prefetch each call adds
    /// <paramref name="maxMessages"/> to the link credit, which stays granted after the call returns.
    /// </summary>
    public virtual async Task<IReadOnlyList<ServiceBusReceivedMessage>> ReceiveMessagesAsync(int maxMessages, TimeSpan? maxWaitTime = null, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxMessages, 1);
        ObjectDisposedException.ThrowIf(IsClosed, this);
        var wait = maxWaitTime ?? Retry.Options.TryTimeout;
        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.ReceiveActivity, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "receive");
        try
        {
            var link = _link is { IsClosed: false } open ? open : await Retry.RunAsync((_, token) => GetLinkAsync(token), EntityPath, cancellationToken).ConfigureAwait(false);
            if (PrefetchCount == 0)
            {
                IssueCredit(link, maxMessages);
            }

            var received = new List<ServiceBusReceivedMessage>();
            var taken = 0;
            try
            {
                var first = await link.ReceiveAsync(wait, cancellationToken).ConfigureAwait(false);
                if (first is not null)
                {
                    taken++;
                    Add(received, first);
                    while (taken < maxMessages && link.TryReceive(out var next))
                    {
                        taken++;
                        Add(received, next);
                    }
                }
            }
            finally
            {
                if (PrefetchCount == 0)
                {
                    ReturnUnusedCredit(link, maxMessages - taken);
                }
            }

            activity?.SetTag(ServiceBusTelemetry.BatchCountAttribute, received.Count);
            if (received.Count > 0)
            {
                ServiceBusTelemetry.Received.Add(received.Count, ServiceBusTelemetry.Entity(EntityPath));
            }

            return received;
        }
        catch (Exception e) when (e is not OperationCanceledException || !cancellationToken.IsCancellationRequested)
        {
            var mapped = ServiceBusErrors.From(e, EntityPath);
            ServiceBusTelemetry.Fail(activity, mapped);
            throw mapped;
        }
    }

    public virtual async Task<ServiceBusReceivedMessage?> PeekMessageAsync(long? fromSequenceNumber = null, CancellationToken cancellationToken = default)
    {
        var messages = await PeekMessagesAsync(1, fromSequenceNumber, cancellationToken).ConfigureAwait(false);
        return messages.Count == 0 ? null : messages[0];
    }

    /// <summary>Reads messages without locking them, from <paramref name="fromSequenceNumber"/> or after the last one peeked.</summary>
    public virtual async Task<IReadOnlyList<ServiceBusReceivedMessage>> PeekMessagesAsync(int maxMessages, long? fromSequenceNumber = null, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxMessages, 1);
        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.PeekActivity, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "peek");
        var from = fromSequenceNumber ?? _lastPeekedSequenceNumber + 1;
        var body = await ManagementAsync(ServiceBusAmqpNames.PeekMessageOperation, new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.FromSequenceNumberKey] = from,
            [ServiceBusAmqpNames.MessageCountKey] = maxMessages,
        }, activity, cancellationToken).ConfigureAwait(false);
        var peeked = new List<ServiceBusReceivedMessage>();
        foreach (var entry in Messages(body))
        {
            if (entry.GetValueOrDefault(ServiceBusAmqpNames.MessageKey) is byte[] encoded)
            {
                peeked.Add(MessageConverter.FromAmqp(AmqpMessage.Decode(encoded), Guid.Empty, peeked: true, delivery: null));
            }
        }

        if (peeked.Count > 0)
        {
            _lastPeekedSequenceNumber = peeked[^1].SequenceNumber;
        }

        return peeked;
    }

    public virtual Task CompleteMessageAsync(ServiceBusReceivedMessage message, CancellationToken cancellationToken = default) =>
        SettleAsync(message, Accepted.Instance, ServiceBusAmqpNames.DispositionCompleted, null, null, null, ServiceBusTelemetry.CompleteActivity, ServiceBusTelemetry.Completed, cancellationToken);

    /// <summary>Makes the message available again; its delivery count goes up.</summary>
    public virtual Task AbandonMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify = null, CancellationToken cancellationToken = default) =>
        SettleAsync(message, new Modified { MessageAnnotations = ToMap(propertiesToModify) }, ServiceBusAmqpNames.DispositionAbandoned, propertiesToModify, null, null,
            ServiceBusTelemetry.AbandonActivity, ServiceBusTelemetry.Abandoned, cancellationToken);

    public virtual Task DeferMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify = null, CancellationToken cancellationToken = default) =>
        SettleAsync(message, new Modified { UndeliverableHere = true, MessageAnnotations = ToMap(propertiesToModify) }, ServiceBusAmqpNames.DispositionDeferred, propertiesToModify, null, null,
            ServiceBusTelemetry.DeferActivity, ServiceBusTelemetry.Deferred, cancellationToken);

    public virtual Task DeadLetterMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify = null, CancellationToken cancellationToken = default) =>
        DeadLetterMessageAsync(message, propertiesToModify, null, null, cancellationToken);

    public virtual Task DeadLetterMessageAsync(ServiceBusReceivedMessage message, string deadLetterReason, string? deadLetterErrorDescription = null, CancellationToken cancellationToken = default) =>
        DeadLetterMessageAsync(message, null, deadLetterReason, deadLetterErrorDescription, cancellationToken);

    /// <summary>Moves the message to the dead-letter queue with a reason and description (each at most 4096 characters).</summary>
    public virtual Task DeadLetterMessageAsync(ServiceBusReceivedMessage message, IDictionary<string, object>? propertiesToModify, string? deadLetterReason, string? deadLetterErrorDescription = null, CancellationToken cancellationToken = default)
    {
        if (deadLetterReason?.Length > 4096 || deadLetterErrorDescription?.Length > 4096)
        {
            throw new ArgumentOutOfRangeException(nameof(deadLetterReason), "The dead-letter reason and description are limited to 4096 characters.");
        }

        DeliveryState state;
        if (deadLetterReason is null && deadLetterErrorDescription is null && propertiesToModify is null)
        {
            state = new Rejected();
        }
        else
        {
            var info = ToMap(propertiesToModify) ?? [];
            if (deadLetterReason is not null)
            {
                info[ServiceBusAmqpNames.DeadLetterReasonProperty] = deadLetterReason;
            }

            if (deadLetterErrorDescription is not null)
            {
                info[ServiceBusAmqpNames.DeadLetterErrorDescriptionProperty] = deadLetterErrorDescription;
            }

            state = new Rejected { Error = new Error { Condition = ServiceBusAmqpNames.DeadLetterError, Info = info } };
        }

        return SettleAsync(message, state, ServiceBusAmqpNames.DispositionSuspended, propertiesToModify, deadLetterReason, deadLetterErrorDescription,
            ServiceBusTelemetry.DeadLetterActivity, ServiceBusTelemetry.DeadLettered, cancellationToken);
    }

    /// <summary>Extends the message's lock by the queue's lock duration and updates <see cref="ServiceBusReceivedMessage.LockedUntil"/>.</summary>
    public virtual async Task RenewMessageLockAsync(ServiceBusReceivedMessage message, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(message);
        RequirePeekLock();
        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.RenewLockActivity, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "renew_message_lock");
        try
        {
            var body = await ManagementAsync(ServiceBusAmqpNames.RenewLockOperation, new Dictionary<object, object?>
            {
                [ServiceBusAmqpNames.LockTokensKey] = new[] { message.LockTokenGuid },
            }, activity, cancellationToken).ConfigureAwait(false);
            if (body?.GetValueOrDefault(ServiceBusAmqpNames.ExpirationsKey) is not DateTime[] { Length: > 0 } expirations)
            {
                throw new ServiceBusException("The renew-lock response has no expirations.", ServiceBusFailureReason.GeneralError, EntityPath);
            }

            message.LockedUntil = new DateTimeOffset(DateTime.SpecifyKind(expirations[0], DateTimeKind.Utc));
            ServiceBusTelemetry.LockRenewals.Add(1, ServiceBusTelemetry.Entity(EntityPath));
        }
        catch (Exception e) when (ServiceBusErrors.IsLockLost(e))
        {
            ServiceBusTelemetry.LockLost.Add(1, ServiceBusTelemetry.Entity(EntityPath));
            throw;
        }
    }

    public virtual async Task<ServiceBusReceivedMessage> ReceiveDeferredMessageAsync(long sequenceNumber, CancellationToken cancellationToken = default) =>
        (await ReceiveDeferredMessagesAsync([sequenceNumber], cancellationToken).ConfigureAwait(false))[0];

    public virtual async Task<IReadOnlyList<ServiceBusReceivedMessage>> ReceiveDeferredMessagesAsync(IEnumerable<long> sequenceNumbers, CancellationToken cancellationToken = default)
    {
        var sequences = sequenceNumbers.ToArray();
        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.ReceiveActivity, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "receive_deferred");
        var body = await ManagementAsync(ServiceBusAmqpNames.ReceiveBySequenceNumberOperation, new Dictionary<object, object?>
        {
            [ServiceBusAmqpNames.SequenceNumbersKey] = sequences,
            [ServiceBusAmqpNames.ReceiverSettleModeKey] = ReceiveMode == ServiceBusReceiveMode.PeekLock ? 1u : 0u,
        }, activity, cancellationToken).ConfigureAwait(false);
        var result = new List<ServiceBusReceivedMessage>();
        foreach (var entry in Messages(body))
        {
            if (entry.GetValueOrDefault(ServiceBusAmqpNames.MessageKey) is byte[] encoded)
            {
                var token = entry.GetValueOrDefault(ServiceBusAmqpNames.LockTokenKey) is Guid g ? g : Guid.Empty;
                result.Add(MessageConverter.FromAmqp(AmqpMessage.Decode(encoded), token, peeked: false, delivery: null));
            }
        }

        ServiceBusTelemetry.Received.Add(result.Count, ServiceBusTelemetry.Entity(EntityPath));
        return result;
    }

    /// <summary>Drains the link's credit, releases buffered messages unsettled and detaches.</summary>
    public virtual async Task CloseAsync(CancellationToken cancellationToken = default)
    {
        if (IsClosed)
        {
            return;
        }

        IsClosed = true;
        if (_link is { IsClosed: false } link)
        {
            // No more credit from here on: settling or releasing must not invite new deliveries.
            link.AutoCredit = 0;
            try
            {
                if (link.Credit > 0)
                {
                    using var tryTimeout = new CancellationTokenSource(Retry.Options.TryTimeout, Retry.Time);
                    using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, tryTimeout.Token);
                    await link.DrainAsync(timeout.Token).ConfigureAwait(false);
                }
            }
            catch (Exception e) when (e is OperationCanceledException or AmqpException)
            {
                // Closing anyway: the service keeps the locks of anything in flight until they expire.
            }

            foreach (var buffered in link.TakeBuffered())
            {
                if (!buffered.RemoteSettled)
                {
                    link.Settle(buffered, Released.Instance);
                }
            }

            await link.CloseAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
            await link.Session.EndAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
        }

        await _management.CloseAsync().ConfigureAwait(false);
    }

    public async ValueTask DisposeAsync()
    {
        await CloseAsync().ConfigureAwait(false);
        GC.SuppressFinalize(this);
    }

    internal async Task<ReceiverLink> GetLinkAsync(CancellationToken cancellationToken)
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
            var link = await session.AttachReceiverAsync(new LinkOptions
            {
                Name = $"{Identifier};{Guid.NewGuid():N}",
                Source = new Source { Address = EntityPath },
                Target = new Target { Address = Identifier },
                SenderSettleMode = ReceiveMode == ServiceBusReceiveMode.ReceiveAndDelete ? SenderSettleMode.Settled : SenderSettleMode.Mixed,
                ReceiverSettleMode = ReceiveMode == ServiceBusReceiveMode.PeekLock ? ReceiverSettleMode.Second : ReceiverSettleMode.First,
                Properties = new Dictionary<object, object?> { [ServiceBusAmqpNames.TimeoutProperty] = (uint)Retry.Options.TryTimeout.TotalMilliseconds },
            }, cancellationToken).ConfigureAwait(false);
            if (PrefetchCount > 0)
            {
                link.AutoCredit = (uint)PrefetchCount;
                link.SetCredit((uint)PrefetchCount);
            }

            lock (_creditSync)
            {
                _leftoverCredit = 0; // a new link starts without credit
                _link = link;
            }

            return link;
        }
        finally
        {
            _linkGate.Release();
        }
    }

    /// <summary>
    /// Without prefetch a receive call asks for credit for the messages it wants, but first uses credit that earlier
    /// calls granted and did not use (it stays granted on the link, as with the SDK's AMQP library), so the link
    /// never holds more credit than the receive calls in progress asked for.
    /// </summary>
    private void IssueCredit(ReceiverLink link, int wanted)
    {
        uint add;
        lock (_creditSync)
        {
            var fromLeftover = Math.Min(wanted, _leftoverCredit);
            _leftoverCredit -= fromLeftover;
            add = (uint)(wanted - fromLeftover);
        }

        if (add > 0)
        {
            link.AddCredit(add);
        }
    }

    private void ReturnUnusedCredit(ReceiverLink link, int unused)
    {
        lock (_creditSync)
        {
            if (link == _link && unused > 0)
            {
                _leftoverCredit += unused;
            }
        }
    }

    private void Add(List<ServiceBusReceivedMessage> received, IncomingDelivery delivery)
    {
        try
        {
            var token = ReceiveMode == ServiceBusReceiveMode.PeekLock && delivery.Tag.Length == 16 ? new Guid(delivery.Tag) : Guid.Empty;
            received.Add(MessageConverter.FromAmqp(delivery.Message, token, peeked: false, delivery));
        }
        catch (AmqpDecodeException e)
        {
            // An undecodable delivery is refused rather than handed to the application.
            if (!delivery.Settled)
            {
                delivery.Link.Settle(delivery, new Rejected { Error = new Error { Condition = ErrorCondition.DecodeError, Description = e.Message } });
            }
        }
    }

    private async Task SettleAsync(
        ServiceBusReceivedMessage message,
        DeliveryState state,
        string dispositionStatus,
        IDictionary<string, object>? propertiesToModify,
        string? deadLetterReason,
        string? deadLetterDescription,
        string activityName,
        System.Diagnostics.Metrics.Counter<long> counter,
        CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(message);
        RequirePeekLock();
        using var activity = ServiceBusTelemetry.Start(activityName, ActivityKind.Client, EntityPath, FullyQualifiedNamespace, "settle");
        activity?.SetTag(ServiceBusTelemetry.DispositionAttribute, dispositionStatus);
        activity?.SetTag(ServiceBusTelemetry.MessageIdAttribute, message.MessageId);
        try
        {
            var delivery = message.Delivery;
            var viaLink = delivery is not null && delivery.Link == _link && !delivery.Link.IsClosed;
            if (viaLink)
            {
                // Not retried: a disposition that got lost cannot be told apart from one that took effect.
                var outcome = await delivery!.Link.DisposeAsync(delivery, state, cancellationToken).WaitAsync(Retry.Options.TryTimeout, Retry.Time, cancellationToken).ConfigureAwait(false);
                if (outcome is Rejected { Error: { } error })
                {
                    if (error.Condition != ErrorCondition.NotFound)
                    {
                        throw ServiceBusErrors.From(error, EntityPath);
                    }

                    viaLink = false; // the service asks for the management path
                }
            }

            if (!viaLink)
            {
                var body = new Dictionary<object, object?>
                {
                    [ServiceBusAmqpNames.LockTokensKey] = new[] { message.LockTokenGuid },
                    [ServiceBusAmqpNames.DispositionStatusKey] = dispositionStatus,
                };
                if (deadLetterReason is not null)
                {
                    body[ServiceBusAmqpNames.DeadLetterReasonKey] = deadLetterReason;
                }

                if (deadLetterDescription is not null)
                {
                    body[ServiceBusAmqpNames.DeadLetterDescriptionKey] = deadLetterDescription;
                }

                if (ToMap(propertiesToModify) is { } properties)
                {
                    body[ServiceBusAmqpNames.PropertiesToModifyKey] = properties;
                }

                await ManagementAsync(ServiceBusAmqpNames.UpdateDispositionOperation, body, activity, cancellationToken).ConfigureAwait(false);
            }

            message.IsSettled = true;
            counter.Add(1, ServiceBusTelemetry.Entity(EntityPath));
        }
        catch (Exception e)
        {
            if (ServiceBusErrors.IsLockLost(e))
            {
                ServiceBusTelemetry.LockLost.Add(1, ServiceBusTelemetry.Entity(EntityPath));
            }

            ServiceBusTelemetry.Fail(activity, e);
            throw;
        }
    }

    /// <summary>Runs a management operation and returns the response body map (null for 204 No Content).</summary>
    private async Task<Dictionary<object, object?>?> ManagementAsync(string operation, Dictionary<object, object?> body, Activity? activity, CancellationToken cancellationToken)
    {
        try
        {
            return await _management.RequestAsync(operation, body, _link?.Name, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            ServiceBusTelemetry.Fail(activity, e);
            throw;
        }
    }

    private void RequirePeekLock()
    {
        if (ReceiveMode != ServiceBusReceiveMode.PeekLock)
        {
            throw new InvalidOperationException("The operation is only supported in PeekLock receive mode.");
        }
    }

    private static IEnumerable<Dictionary<object, object?>> Messages(Dictionary<object, object?>? body) =>
        body?.GetValueOrDefault(ServiceBusAmqpNames.MessagesKey) is List<object?> list ? list.OfType<Dictionary<object, object?>>() : [];

    private static Dictionary<object, object?>? ToMap(IDictionary<string, object>? properties)
    {
        if (properties is null)
        {
            return null;
        }

        var map = new Dictionary<object, object?>();
        foreach (var (key, value) in properties)
        {
            map[key] = value is DateTimeOffset offset ? offset.UtcDateTime : value;
        }

        return map;
    }
}
