using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Lite = global::Amqp;
using LiteFraming = global::Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The emulator driven by AMQPNetLite, an AMQP 1.0 implementation this repository did not write,
/// for what the official SDK never does.
/// </summary>
public sealed class IndependentPeerTests
{
    [Fact]
    public async Task A_refused_link_costs_the_peer_neither_its_session_nor_its_connection()
    {
        await using var scope = await EmulatorScope.StartAsync();
        var connection = await Lite.Connection.Factory.CreateAsync(new Lite.Address($"amqp://127.0.0.1:{scope.Emulator.AmqpEndPoint.Port}"));
        try
        {
            var session = new Lite.Session(connection);
            var refused = new Lite.SenderLink(session, "refused", "no-such-queue");
            var error = await Assert.ThrowsAsync<Lite.AmqpException>(() => refused.SendAsync(new Lite.Message("lost")));
            Assert.Equal("amqp:not-found", error.Error.Condition.ToString());

            // AMQPNetLite answers the refusal with its own detach; the same session then serves $cbs.
            var status = await LitePeer.PutTokenAsync(session, scope.Emulator, $"sb://{scope.Emulator.Options.NamespaceName}/{EmulatorScope.Queue}");

            Assert.Equal(202, status);
            Assert.False(connection.IsClosed, connection.Error?.ToString());
            Assert.False(session.IsClosed, session.Error?.ToString());
        }
        finally
        {
            await connection.CloseAsync();
        }
    }

    [Fact]
    public async Task A_token_for_the_management_node_alone_authorises_its_operations_and_nothing_else()
    {
        // What the JavaScript SDK does before a first peek or lock renewal on an entity.
        await using var scope = await EmulatorScope.StartAsync();
        await using (var sender = scope.Client.CreateSender(EmulatorScope.Queue))
        {
            await sender.SendMessageAsync(new ServiceBusMessage("peek me"));
        }

        var connection = await Lite.Connection.Factory.CreateAsync(new Lite.Address($"amqp://127.0.0.1:{scope.Emulator.AmqpEndPoint.Port}"));
        try
        {
            var session = new Lite.Session(connection);
            var management = $"{EmulatorScope.Queue}{ServiceBusAmqpNames.ManagementNodeSuffix}";
            Assert.Equal(202, await LitePeer.PutTokenAsync(session, scope.Emulator, $"sb://{scope.Emulator.Options.NamespaceName}/{management}"));

            var receiver = new Lite.ReceiverLink(session, "management-replies", new LiteFraming.Source { Address = management }, null);
            var requests = new Lite.SenderLink(session, "management-requests", management);
            var peek = new Lite.Message(new Dictionary<string, object> { [ServiceBusAmqpNames.FromSequenceNumberKey] = 1L, [ServiceBusAmqpNames.MessageCountKey] = 1 })
            {
                Properties = new LiteFraming.Properties { MessageId = "peek-1", ReplyTo = "management-replies" },
                ApplicationProperties = new LiteFraming.ApplicationProperties(),
            };
            peek.ApplicationProperties[ServiceBusAmqpNames.ManagementOperationKey] = ServiceBusAmqpNames.PeekMessageOperation;
            await requests.SendAsync(peek);
            var reply = await receiver.ReceiveAsync(TimeSpan.FromSeconds(30));
            Assert.NotNull(reply);
            Assert.Equal(200, Convert.ToInt32(reply.ApplicationProperties[ServiceBusAmqpNames.ManagementStatusCodeKey], System.Globalization.CultureInfo.InvariantCulture));

            // The entity itself needs its own token.
            var queueSender = new Lite.SenderLink(session, "queue-sender", EmulatorScope.Queue);
            var refused = await Assert.ThrowsAsync<Lite.AmqpException>(() => queueSender.SendAsync(new Lite.Message("not allowed")));
            Assert.Equal("amqp:unauthorized-access", refused.Error.Condition.ToString());
        }
        finally
        {
            await connection.CloseAsync();
        }
    }
}
