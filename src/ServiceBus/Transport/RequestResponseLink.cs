using System.Collections.Concurrent;
using DroneDelivery.Amqp;
using DroneDelivery.Amqp.Framing;
using DroneDelivery.Amqp.Messaging;

namespace DroneDelivery.ServiceBus.Transport;

/// <summary>
/// A request/response pair of links to a node (<c>$cbs</c>, <c>&lt;entity&gt;/$management</c>): requests carry a
/// message-id and reply-to; responses are matched by correlation-id.
/// </summary>
internal sealed class RequestResponseLink
{
    private readonly ConcurrentDictionary<string, TaskCompletionSource<AmqpMessage>> _pending = new(StringComparer.Ordinal);
    private readonly SenderLink _sender;
    private readonly ReceiverLink _receiver;
    private readonly string _replyTo;
    private long _tag;

    private RequestResponseLink(SenderLink sender, ReceiverLink receiver, string replyTo)
    {
        _sender = sender;
        _receiver = receiver;
        _replyTo = replyTo;
        receiver.OnMessage = OnResponse;
        receiver.Closed += (_, error) => FailAll(error);
        sender.Closed += (_, error) => FailAll(error);
    }

    public bool IsClosed => _sender.IsClosed || _receiver.IsClosed;

    public AmqpSession Session => _sender.Session;

    public static async Task<RequestResponseLink> CreateAsync(AmqpSession session, string node, Dictionary<object, object?>? properties, CancellationToken cancellationToken)
    {
        var name = Guid.NewGuid().ToString("N");
        var replyTo = name + "-reply";
        var sender = await session.AttachSenderAsync(new LinkOptions
        {
            Name = name + ":sender",
            Source = new Source { Address = name },
            Target = new Target { Address = node },
            SenderSettleMode = SenderSettleMode.Settled,
            Properties = properties,
        }, cancellationToken).ConfigureAwait(false);
        var receiver = await session.AttachReceiverAsync(new LinkOptions
        {
            Name = name + ":receiver",
            Source = new Source { Address = node },
            Target = new Target { Address = replyTo },
            Properties = properties,
        }, cancellationToken).ConfigureAwait(false);
        var link = new RequestResponseLink(sender, receiver, replyTo);
        receiver.SetCredit(200);
        return link;
    }

    public async Task<AmqpMessage> RequestAsync(AmqpMessage request, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var id = Guid.NewGuid().ToString();
        request.EnsureProperties().MessageId = id;
        request.Properties!.ReplyTo = _replyTo;
        var response = new TaskCompletionSource<AmqpMessage>(TaskCreationOptions.RunContinuationsAsynchronously);
        _pending[id] = response;
        try
        {
            var tag = BitConverter.GetBytes(Interlocked.Increment(ref _tag));
            await _sender.SendAsync(request.ToArray(), tag, cancellationToken: cancellationToken).ConfigureAwait(false);
            return await response.Task.WaitAsync(timeout, Session.Connection.Options.TimeProvider, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _pending.TryRemove(id, out _);
        }
    }

    public async Task CloseAsync()
    {
        await _sender.CloseAsync().ConfigureAwait(false);
        await _receiver.CloseAsync().ConfigureAwait(false);
        await _sender.Session.EndAsync().ConfigureAwait(false);
    }

    private void OnResponse(ReceiverLink link, IncomingDelivery delivery)
    {
        if (!delivery.RemoteSettled)
        {
            link.Settle(delivery, Accepted.Instance);
        }

        if (link.Credit < 100)
        {
            link.SetCredit(200);
        }

        AmqpMessage message;
        try
        {
            message = delivery.Message;
        }
        catch (DroneDelivery.Amqp.Codec.AmqpDecodeException)
        {
            return;
        }

        if (message.Properties?.CorrelationId?.ToString() is { } correlation && _pending.TryRemove(correlation, out var waiter))
        {
            waiter.TrySetResult(message);
        }
    }

    private void FailAll(Error? error)
    {
        var exception = new AmqpException(error ?? new Error { Condition = ErrorCondition.DetachForced, Description = "The request/response link closed." });
        foreach (var waiter in _pending.Values)
        {
            waiter.TrySetException(exception);
        }
    }
}
