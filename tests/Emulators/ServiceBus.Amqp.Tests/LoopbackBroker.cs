using System.Collections.Concurrent;
using System.Net;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp.Tests;

/// <summary>
/// A minimal in-test listener: links whose target is "queue" store messages, links whose source is
/// "queue" deliver them. It exists to exercise both roles of the engine over real sockets.
/// </summary>
internal sealed class LoopbackBroker : IAmqpLinkHandler, IAsyncDisposable
{
    private readonly AmqpListener _listener;

    public LoopbackBroker(IReadOnlyList<SaslMechanism>? mechanisms = null, AmqpConnectionOptions? connection = null)
    {
        _listener = AmqpListener.Start(new IPEndPoint(IPAddress.Loopback, 0), new AmqpListenerOptions
        {
            Connection = connection ?? new AmqpConnectionOptions { ContainerId = "loopback-broker" },
            SaslMechanisms = mechanisms ?? [SaslMechanism.Anonymous],
            RequireSasl = mechanisms is not { Count: 0 },
            HandlerFactory = _ => this,
        });
    }

    public int Port => _listener.EndPoint.Port;

    public ConcurrentQueue<IncomingDelivery> Stored { get; } = new();

    public ConcurrentQueue<(OutgoingDelivery Delivery, DeliveryState? State)> Outcomes { get; } = new();

    public ConcurrentQueue<string> Events { get; } = new();

    /// <summary>Messages to hand out on receiver links, in order.</summary>
    public ConcurrentQueue<byte[]> ToDeliver { get; } = new();

    /// <summary>How the broker answers an unsettled disposition from a receiver.</summary>
    public Func<DeliveryState?, DeliveryState?> ReplyState { get; set; } = state => state;

    /// <summary>When false, drains are never answered (to observe clients that depend on the answer).</summary>
    public bool AnswerDrains { get; set; } = true;

    public IReadOnlyCollection<AmqpConnection> Connections => _listener.Connections;

    public void OnAttach(AmqpLink link)
    {
        var address = link.Role == LinkRole.Receiver ? link.RemoteAttach!.Target?.Address : link.RemoteAttach!.Source?.Address;
        if (address != "queue")
        {
            link.Reject(new Error { Condition = ErrorCondition.NotFound, Description = $"No node '{address}'." });
            return;
        }

        if (link is ReceiverLink receiver)
        {
            receiver.OnMessage = (l, delivery) =>
            {
                Stored.Enqueue(delivery);
                if (!delivery.RemoteSettled)
                {
                    l.Settle(delivery, Accepted.Instance);
                }
            };
            receiver.Accept(maxMessageSize: 1024 * 1024);
            receiver.SetCredit(100);
            return;
        }

        var sender = (SenderLink)link;
        var tag = 0;
        sender.FlowReceived += s =>
        {
            Events.Enqueue(s.DrainRequested ? "drain" : "flow");
            while (s.Credit > 0 && ToDeliver.TryDequeue(out var payload))
            {
                s.TrySend(payload, BitConverter.GetBytes(Interlocked.Increment(ref tag)), settled: s.SenderSettleMode == SenderSettleMode.Settled);
            }

            if (AnswerDrains)
            {
                s.CompleteDrain();
            }
        };
        sender.DeliveryUpdated += (s, delivery) =>
        {
            Outcomes.Enqueue((delivery, delivery.RemoteState));
            if (!delivery.RemoteSettled)
            {
                s.Settle(delivery, ReplyState(delivery.RemoteState));
            }
        };
        sender.Accept();
    }

    public ValueTask DisposeAsync() => _listener.DisposeAsync();
}
