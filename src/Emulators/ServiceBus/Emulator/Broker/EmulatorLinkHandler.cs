using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Emulators.Hosting;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>Routes links the clients attach: <c>$cbs</c>, <c>&lt;entity&gt;/$management</c>, queues and dead-letter queues.</summary>
internal sealed class EmulatorLinkHandler(Namespace ns, ConnectionState state, AmqpConnection connection) : IAmqpLinkHandler
{
    private const uint SenderCredit = 1000;

    public void OnAttach(AmqpLink link)
    {
        var attach = link.RemoteAttach!;
        var address = link.Role == LinkRole.Receiver ? attach.Target?.Address : attach.Source?.Address;
        if (address is null)
        {
            link.Reject(new Error { Condition = ErrorCondition.InvalidField, Description = "The link has no address." });
            return;
        }

        var path = CbsNode.PathOf(address);
        if (path == ServiceBusAmqpNames.CbsNode)
        {
            AttachNode(link, ServiceBusAmqpNames.CbsNode, (delivery) => ns.Cbs.OnRequest(delivery, state));
            return;
        }

        if (path.EndsWith(ServiceBusAmqpNames.ManagementNodeSuffix, StringComparison.OrdinalIgnoreCase))
        {
            var entityPath = path[..^ServiceBusAmqpNames.ManagementNodeSuffix.Length];
            if (Resolve(link, entityPath, path) is not { } managed)
            {
                return;
            }

            if (ns.FindManagement(managed) is not { } node)
            {
                link.Reject(NotFound(entityPath));
                return;
            }

            AttachNode(link, node.Address, delivery => node.OnRequest(delivery, state));
            ns.Track(managed, link);
            return;
        }

        if (Resolve(link, path, path) is not { } entity)
        {
            return;
        }

        if (link is ReceiverLink receiver)
        {
            if (entity.IsDeadLetterQueue)
            {
                link.Reject(new Error { Condition = ErrorCondition.NotAllowed, Description = "Messages cannot be sent to a dead-letter queue." });
                return;
            }

            if (entity.IsSubscription)
            {
                link.Reject(new Error { Condition = ErrorCondition.NotAllowed, Description = $"Messages cannot be sent to subscription '{entity.Path}': send to its topic." });
                return;
            }

            AcceptSender(receiver, entity);
            ns.Track(entity, receiver);
            return;
        }

        if (entity.IsTopic)
        {
            link.Reject(new Error { Condition = ErrorCondition.NotAllowed, Description = $"Cannot receive from topic '{entity.Path}': receive from one of its subscriptions ('{entity.Path}/Subscriptions/<name>')." });
            return;
        }

        var receiveAndDelete = attach.SenderSettleMode == SenderSettleMode.Settled;
        if (SessionFilter(attach) is { } filter)
        {
            if (!entity.RequiresSession)
            {
                link.Reject(new Error
                {
                    Condition = ErrorCondition.NotAllowed,
                    Description = $"It is not possible for an entity that does not require sessions to create a sessionful message receiver ('{entity.Path}').",
                });
                return;
            }

            if (filter.Value is not (null or string))
            {
                link.Reject(new Error
                {
                    Condition = ErrorCondition.InvalidField,
                    Description = $"The {SessionNames.Filter} filter must be a session id (string) or null for the next available session, not {filter.Value.GetType().Name}.",
                });
                return;
            }

            entity.AcceptSession((SenderLink)link, receiveAndDelete, (string?)filter.Value, AcceptWait(attach));
            ns.Track(entity, link);
            return;
        }

        if (entity.RequiresSession)
        {
            link.Reject(new Error
            {
                Condition = ErrorCondition.NotAllowed,
                Description = $"It is not possible for an entity that requires sessions to create a non-sessionful message receiver ('{entity.Path}').",
            });
            return;
        }

        var consumer = (SenderLink)link;
        consumer.FlowReceived += l => OnReceiverFlow(l, entity);
        entity.AddConsumer(consumer, receiveAndDelete);
        ns.Track(entity, consumer);
    }

    /// <summary>
    /// Injected faults on a receiver asking for messages: its connection fails, or it is detached with
    /// <c>com.microsoft:server-busy</c> before any message goes out on this flow (this handler runs before the entity's).
    /// </summary>
    private void OnReceiverFlow(SenderLink link, QueueEntity entity)
    {
        if (link.IsClosed || link.Credit == 0 || ns.Faults.BreakConnection(connection, entity.Path))
        {
            return;
        }

        if (ns.Faults.Draw(ServiceBusFaultKind.ServerBusyReceive, entity.Path))
        {
            _ = link.CloseAsync(ServerBusy(entity));
        }
    }

    /// <summary>The service's throttling error: the client backs off (the .NET SDK for 10 s) and retries.</summary>
    private static Error ServerBusy(QueueEntity entity) => new()
    {
        Condition = ServiceBusAmqpNames.ServerBusyError,
        Description = $"The request was terminated because the entity '{entity.Path}' is being throttled. Error code : 50009. Please wait 2 seconds and try again.",
    };

    /// <summary>The com.microsoft:session-filter entry of a receiver's source, if it has one (its value may be null).</summary>
    private static KeyValuePair<object, object?>? SessionFilter(Attach attach)
    {
        foreach (var entry in attach.Source?.Filter ?? [])
        {
            if (entry.Key.ToString() == SessionNames.Filter.Value)
            {
                return entry;
            }
        }

        return null;
    }

    /// <summary>How long an accept-next-session may wait: its com.microsoft:timeout link property (milliseconds), else the service's cap.</summary>
    private static TimeSpan AcceptWait(Attach attach)
    {
        if (attach.Properties is { } properties)
        {
            foreach (var (key, value) in properties)
            {
                if (key.ToString() == ServiceBusAmqpNames.TimeoutProperty.Value && value is IConvertible number)
                {
                    try
                    {
                        var milliseconds = number.ToDouble(System.Globalization.CultureInfo.InvariantCulture);
                        if (milliseconds >= 0 && milliseconds <= int.MaxValue)
                        {
                            return TimeSpan.FromMilliseconds(milliseconds);
                        }
                    }
                    catch (FormatException)
                    {
                        // not a number: the default applies
                    }
                }
            }
        }

        return SessionNames.DefaultAcceptWait;
    }

    /// <summary>
    /// The entity at <paramref name="path"/>, when the connection holds a token for the address the
    /// link attached to (<paramref name="address"/>): as on Azure, a token for an entity covers its
    /// management node, and a token for <c>entity/$management</c> covers that node alone.
    /// </summary>
    private QueueEntity? Resolve(AmqpLink link, string path, string address)
    {
        var entity = ns.Find(path);
        if (entity is null)
        {
            link.Reject(NotFound(path));
            return null;
        }

        if (!state.IsAuthorised(address, ns.Settings.Time.GetUtcNow()))
        {
            link.Reject(new Error
            {
                Condition = ErrorCondition.UnauthorizedAccess,
                Description = $"Unauthorized access to '{address}': put a valid token on $cbs first.",
            });
            return null;
        }

        return entity;
    }

    private Error NotFound(string path) => new()
    {
        Condition = ErrorCondition.NotFound,
        Description = $"The messaging entity 'sb://{ns.Name}/{path}' could not be found. To know more visit https://aka.ms/sbResourceMgrExceptions.",
    };

    private void AttachNode(AmqpLink link, string node, Action<IncomingDelivery> onRequest)
    {
        if (link is ReceiverLink requests)
        {
            requests.OnMessage = (l, delivery) =>
            {
                onRequest(delivery);
                if (l.Credit < SenderCredit / 2)
                {
                    l.SetCredit(SenderCredit);
                }
            };
            // A bound, so a request split over many frames cannot grow without end; four times a message's limit, so a
            // schedule-message request carrying a message over that limit still reaches the node and is answered 413.
            requests.Accept(maxMessageSize: (ulong)ns.Settings.MaxMessageSizeBytes * 4);
            requests.SetCredit(SenderCredit);
            return;
        }

        var reply = new ReplyLink((SenderLink)link, node);
        state.AddReplyLink(reply);
        link.Accept();
    }

    private void AcceptSender(ReceiverLink link, QueueEntity entity)
    {
        link.OnMessage = (l, delivery) =>
        {
            if (ns.Faults.BreakConnection(connection, entity.Path))
            {
                return;
            }

            if (ns.Faults.Draw(ServiceBusFaultKind.ServerBusySend, entity.Path))
            {
                // Refused as the service refuses a throttled send: nothing stored, the outcome carries the error.
                if (!delivery.RemoteSettled && !l.IsClosed)
                {
                    l.Settle(delivery, new Rejected { Error = ServerBusy(entity) });
                }
            }
            else if (ns.Settings.SendLatency > TimeSpan.Zero)
            {
                _ = ModelledDelay.AtLeastAsync(ns.Settings.SendLatency, ns.Settings.Time).ContinueWith(_ => Store(l, delivery, entity), TaskScheduler.Default);
            }
            else
            {
                Store(l, delivery, entity);
            }

            if (l.Credit < SenderCredit / 2 && !l.IsClosed)
            {
                l.SetCredit(SenderCredit);
            }
        };
        link.Accept(maxMessageSize: (ulong)ns.Settings.MaxMessageSizeBytes);
        link.SetCredit(SenderCredit);
    }

    /// <summary>Stores a sent message (or each message of a batch) and answers with the outcome.</summary>
    private static void Store(ReceiverLink link, IncomingDelivery delivery, QueueEntity entity)
    {
        DeliveryState outcome;
        try
        {
            outcome = StoreCore(delivery, entity);
        }
        catch (AmqpDecodeException e)
        {
            outcome = new Rejected { Error = new Error { Condition = ErrorCondition.DecodeError, Description = "The message could not be decoded: " + e.Message } };
        }

        if (!delivery.RemoteSettled && !link.IsClosed)
        {
            link.Settle(delivery, outcome);
        }
    }

    private static DeliveryState StoreCore(IncomingDelivery delivery, QueueEntity entity)
    {
        var limit = entity.Settings.MaxMessageSizeBytes;
        if (delivery.Payload.Length > limit)
        {
            return SizeExceeded(delivery.Payload.Length, limit);
        }

        var now = entity.Settings.UtcNow;
        List<AmqpMessage> messages;
        if (delivery.MessageFormat == ServiceBusAmqpNames.BatchMessageFormat)
        {
            // A batch: each data section of the envelope is one complete encoded message.
            var envelope = delivery.Message;
            if (envelope.Body is not DataBody data)
            {
                return new Rejected { Error = new Error { Condition = ErrorCondition.DecodeError, Description = "A batch must carry its messages as data sections." } };
            }

            messages = data.Sections.Select(section => AmqpMessage.Decode(section.Span)).ToList();
        }
        else
        {
            messages = [delivery.Message];
        }

        // All or nothing: a batch with one message the entity refuses is refused whole.
        if (!messages.All(entity.Accepts))
        {
            return new Rejected { Error = new Error { Condition = ErrorCondition.NotAllowed, Description = QueueEntity.SessionIdMissing } };
        }

        foreach (var message in messages)
        {
            entity.Enqueue(message, now);
        }

        return Accepted.Instance;
    }

    private static Rejected SizeExceeded(long size, long limit) => new()
    {
        Error = new Error { Condition = ErrorCondition.MessageSizeExceeded, Description = $"The message of {size} bytes exceeds the limit of {limit} bytes." },
    };
}
