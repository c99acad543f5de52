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
    private SenderLink? _link;
    private int _tag;

    internal ServiceBusSender(ServiceBusClient client, string entityPath)
    {
        _client = client;
        EntityPath = entityPath;
        Identifier = $"{entityPath}-{Guid.NewGuid()}";
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
