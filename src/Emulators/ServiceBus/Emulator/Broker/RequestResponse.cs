using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// Per-connection state: the audiences authorised over CBS and the reply links of request/response nodes,
/// keyed by their target address (the request's reply-to).
/// </summary>
internal sealed class ConnectionState
{
    private readonly Lock _sync = new();
    private readonly Dictionary<string, DateTimeOffset> _authorisations = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, ReplyLink> _replyLinks = new(StringComparer.Ordinal);

    public void Authorise(string path, DateTimeOffset expiresOn)
    {
        lock (_sync)
        {
            _authorisations[path.Trim('/')] = expiresOn;
        }
    }

    /// <summary>True when a valid token covers <paramref name="entityPath"/> (a token for a path covers what lies below it).</summary>
    public bool IsAuthorised(string entityPath, DateTimeOffset now)
    {
        lock (_sync)
        {
            foreach (var (path, expiresOn) in _authorisations)
            {
                if (expiresOn > now && (path.Length == 0 || entityPath.Equals(path, StringComparison.OrdinalIgnoreCase) ||
                    entityPath.StartsWith(path + "/", StringComparison.OrdinalIgnoreCase)))
                {
                    return true;
                }
            }

            return false;
        }
    }

    public void AddReplyLink(ReplyLink link)
    {
        lock (_sync)
        {
            _replyLinks[link.Address] = link;
        }

        link.Link.Closed += (_, _) =>
        {
            lock (_sync)
            {
                if (_replyLinks.TryGetValue(link.Address, out var current) && current == link)
                {
                    _replyLinks.Remove(link.Address);
                }
            }
        };
    }

    /// <summary>The reply link for a request: by reply-to address, else the one attached to the same node.</summary>
    public ReplyLink? FindReplyLink(string? replyTo, string node)
    {
        lock (_sync)
        {
            if (replyTo is not null && _replyLinks.TryGetValue(replyTo, out var byAddress))
            {
                return byAddress;
            }

            return _replyLinks.Values.FirstOrDefault(l => string.Equals(l.Node, node, StringComparison.OrdinalIgnoreCase));
        }
    }
}

/// <summary>The broker's sending half of a request/response pair; queues replies until the client gives credit.</summary>
internal sealed class ReplyLink
{
    private readonly Queue<byte[]> _pending = new();
    private readonly Lock _sync = new();
    private long _tag;

    public ReplyLink(SenderLink link, string node)
    {
        Link = link;
        Node = node;
        Address = link.RemoteAttach?.Target?.Address ?? link.Name;
        link.FlowReceived += _ => Flush();
    }

    public SenderLink Link { get; }

    public string Node { get; }

    public string Address { get; }

    public void Send(AmqpMessage response)
    {
        var payload = response.ToArray();
        lock (_sync)
        {
            _pending.Enqueue(payload);
        }

        Flush();
    }

    private void Flush()
    {
        lock (_sync)
        {
            while (_pending.TryPeek(out var payload))
            {
                var tag = BitConverter.GetBytes(Interlocked.Increment(ref _tag));
                if (Link.TrySend(payload, tag, settled: true) is null)
                {
                    break;
                }

                _pending.Dequeue();
            }
        }

        if (Link.DrainRequested)
        {
            Link.CompleteDrain();
        }
    }
}

/// <summary>Builds responses in the shapes the Service Bus SDK expects.</summary>
internal static class Responses
{
    public static AmqpMessage For(AmqpMessage request, Dictionary<string, object?> applicationProperties, object? body)
    {
        var response = new AmqpMessage
        {
            Properties = new MessageProperties { CorrelationId = request.Properties?.MessageId, To = request.Properties?.ReplyTo },
            ApplicationProperties = applicationProperties,
        };
        if (body is not null)
        {
            response.Body = new ValueBody(body);
        }

        return response;
    }

    public static string? Text(this Dictionary<string, object?>? properties, string key) =>
        properties is not null && properties.TryGetValue(key, out var value) ? value switch
        {
            string s => s,
            AmqpSymbol symbol => symbol.Value,
            null => null,
            var other => other.ToString(),
        } : null;

    public static object? Entry(this Dictionary<object, object?> map, string key)
    {
        if (map.TryGetValue(key, out var value) || map.TryGetValue(new AmqpSymbol(key), out value))
        {
            return value;
        }

        return null;
    }

    /// <summary>
    /// Decodes a request to a node and settles it: accepted, or, when it cannot be decoded (and so names no reply
    /// address to answer), rejected with amqp:decode-error, so that a sender waiting for its outcome learns at once.
    /// </summary>
    public static bool TryTakeRequest(this IncomingDelivery delivery, out AmqpMessage request)
    {
        DeliveryState outcome;
        try
        {
            request = delivery.Message;
            outcome = Accepted.Instance;
        }
        catch (AmqpDecodeException e)
        {
            request = null!;
            outcome = new Rejected { Error = new Error { Condition = ErrorCondition.DecodeError, Description = "The request could not be decoded: " + e.Message } };
        }

        if (!delivery.RemoteSettled)
        {
            delivery.Link.Settle(delivery, outcome);
        }

        return outcome is Accepted;
    }
}
