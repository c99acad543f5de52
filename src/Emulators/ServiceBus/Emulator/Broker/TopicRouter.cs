using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>A rule in force on a subscription.</summary>
internal sealed record SubscriptionRule(RuleOptions Options, IRuleFilter Filter, IRuleAction? Action)
{
    public DateTime CreatedAt { get; init; }

    public static SubscriptionRule From(RuleOptions options) => new(options, options.CreateFilter(), options.CreateAction());
}

/// <summary>A subscription: a queue with a set of rules deciding which of the topic's messages it gets.</summary>
internal sealed class Subscription(QueueEntity queue, IEnumerable<SubscriptionRule> rules)
{
    private readonly Lock _sync = new();
    private List<SubscriptionRule> _rules = [.. rules];

    public QueueEntity Queue { get; } = queue;

    public IReadOnlyList<SubscriptionRule> Rules
    {
        get
        {
            lock (_sync)
            {
                return _rules;
            }
        }
    }

    /// <summary>Adds a rule; false when one of that name exists.</summary>
    public bool TryAdd(SubscriptionRule rule)
    {
        lock (_sync)
        {
            if (_rules.Any(r => string.Equals(r.Options.Name, rule.Options.Name, StringComparison.OrdinalIgnoreCase)))
            {
                return false;
            }

            _rules = [.. _rules, rule];
            return true;
        }
    }

    /// <summary>Replaces the rule of the same name, keeping its creation time; false when there is none of that name.</summary>
    public bool TryReplace(SubscriptionRule rule)
    {
        lock (_sync)
        {
            var index = _rules.FindIndex(r => string.Equals(r.Options.Name, rule.Options.Name, StringComparison.OrdinalIgnoreCase));
            if (index < 0)
            {
                return false;
            }

            List<SubscriptionRule> replaced = [.. _rules];
            replaced[index] = rule with { CreatedAt = _rules[index].CreatedAt };
            _rules = replaced;
            return true;
        }
    }

    /// <summary>Removes a rule; false when there is none of that name.</summary>
    public bool TryRemove(string name)
    {
        lock (_sync)
        {
            var kept = _rules.Where(r => !string.Equals(r.Options.Name, name, StringComparison.OrdinalIgnoreCase)).ToList();
            if (kept.Count == _rules.Count)
            {
                return false;
            }

            _rules = kept;
            return true;
        }
    }

    /// <summary>
    /// The subscription's copy of <paramref name="message"/> when one of its rules matches (one copy however many match;
    /// every matching rule's action applies to it), or null.
    /// </summary>
    public AmqpMessage? Select(AmqpMessage message, TimeSpan topicTimeToLive)
    {
        AmqpMessage? copy = null;
        foreach (var rule in Rules)
        {
            if (!rule.Filter.Matches(message))
            {
                continue;
            }

            copy ??= Copy(message, topicTimeToLive);
            rule.Action?.Apply(copy);
        }

        return copy;
    }

    private static AmqpMessage Copy(AmqpMessage message, TimeSpan topicTimeToLive)
    {
        var header = message.Header;
        var ttl = header?.Ttl is { } own && own > 0 && TimeSpan.FromMilliseconds(own) < topicTimeToLive
            ? own
            : (uint)Math.Min(uint.MaxValue, topicTimeToLive.TotalMilliseconds);
        var p = message.Properties;
        return new AmqpMessage
        {
            Header = new MessageHeader { Durable = header?.Durable ?? false, Priority = header?.Priority, Ttl = ttl, FirstAcquirer = header?.FirstAcquirer ?? false },
            MessageAnnotations = message.MessageAnnotations is { } annotations ? new Dictionary<object, object?>(annotations) : null,
            Properties = p is null ? null : new MessageProperties
            {
                MessageId = p.MessageId,
                UserId = p.UserId,
                To = p.To,
                Subject = p.Subject,
                ReplyTo = p.ReplyTo,
                CorrelationId = p.CorrelationId,
                ContentType = p.ContentType,
                ContentEncoding = p.ContentEncoding,
                AbsoluteExpiryTime = p.AbsoluteExpiryTime,
                CreationTime = p.CreationTime,
                GroupId = p.GroupId,
                GroupSequence = p.GroupSequence,
                ReplyToGroupId = p.ReplyToGroupId,
            },
            ApplicationProperties = message.ApplicationProperties is { } properties ? new Dictionary<string, object?>(properties, StringComparer.Ordinal) : null,
            Body = message.Body,
            Footer = message.Footer,
        };
    }
}

/// <summary>
/// A topic's fan-out: each active message is copied to every subscription whose rules match. Subscriptions come and go
/// at run time (the administration API), so the list is replaced, never changed, and a message goes to the ones of the moment.
/// </summary>
internal sealed class TopicRouter(TopicOptions options)
{
    private readonly Lock _sync = new();
    private Subscription[] _subscriptions = [];

    /// <summary>The topic's settings; an administration update replaces them.</summary>
    public TopicOptions Options { get; set; } = options;

    public IReadOnlyList<Subscription> Subscriptions => Volatile.Read(ref _subscriptions);

    public void Add(Subscription subscription)
    {
        lock (_sync)
        {
            Volatile.Write(ref _subscriptions, [.. _subscriptions, subscription]);
        }
    }

    public void Remove(Subscription subscription)
    {
        lock (_sync)
        {
            Volatile.Write(ref _subscriptions, [.. _subscriptions.Where(s => s != subscription)]);
        }
    }

    public void Distribute(AmqpMessage message, DateTime now)
    {
        var timeToLive = Options.DefaultMessageTimeToLive;
        foreach (var subscription in Subscriptions)
        {
            if (subscription.Select(message, timeToLive) is { } copy)
            {
                subscription.Queue.Enqueue(copy, now);
            }
        }
    }
}
