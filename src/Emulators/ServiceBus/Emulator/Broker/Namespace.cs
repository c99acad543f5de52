using System.Collections;
using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// The emulated namespace: its queues, topics, subscriptions, dead-letter queues and nodes. The configuration's entities
/// are there from the start; the administration API adds and removes others while clients are connected, so every
/// lookup and change takes the namespace's lock, and what other threads enumerate (the sweeper, the metrics) are
/// snapshots.
/// </summary>
internal sealed class Namespace
{
    private readonly Lock _sync = new();
    private readonly Dictionary<string, QueueEntity> _entities = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<QueueEntity, ManagementNode> _management = [];
    private readonly Dictionary<string, Topic> _topics = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<QueueEntity, HashSet<AmqpLink>> _links = [];
    private readonly EntityList _queues = new();

    public Namespace(ServiceBusEmulatorOptions options)
    {
        Name = options.NamespaceName;
        Faults = new FaultInjector(options.TimeProvider);
        Latency = new LatencyModel(options.SendLatency, options.ReceiveLatency, options.CompleteLatency);
        Settings = new EmulatorSettings(Latency, options.MaxMessageSizeBytes, options.TimeProvider) { Faults = Faults };
        Cbs = new CbsNode(options.SharedAccessKeyName, options.SharedAccessKey, options.TimeProvider);
        foreach (var queue in options.Queues)
        {
            AddQueue(queue);
        }

        foreach (var topicOptions in options.Topics)
        {
            var topic = AddTopic(topicOptions)!;
            foreach (var subscription in topicOptions.Subscriptions)
            {
                AddSubscription(topic, subscription);
            }
        }

        // Rules given at start must name entities the namespace has, as rules set at run time must.
        options.Faults.ValidateEntities(path => Find(path) is not null, "Emulator.Faults");
        Faults.Configure(options.Faults);
    }

    public string Name { get; }

    public EmulatorSettings Settings { get; }

    /// <summary>The round trips added to sends, receives and settlements (<c>/_emulator/latency</c> replaces them).</summary>
    public LatencyModel Latency { get; }

    /// <summary>The faults injected into the namespace's operations (rules set at start and at run time).</summary>
    public FaultInjector Faults { get; }

    public CbsNode Cbs { get; }

    /// <summary>Queues, topics and subscriptions (not dead-letter queues), in the order they were made; enumerating it reads a snapshot.</summary>
    public IReadOnlyList<QueueEntity> Queues => _queues;

    /// <summary>Every entity, dead-letter queues included: a snapshot.</summary>
    public IReadOnlyList<QueueEntity> AllEntities
    {
        get
        {
            lock (_sync)
            {
                return [.. _entities.Values];
            }
        }
    }

    public QueueEntity? Find(string path)
    {
        lock (_sync)
        {
            return _entities.GetValueOrDefault(path.Trim('/'));
        }
    }

    public ManagementNode Management(QueueEntity entity) => FindManagement(entity) ?? throw new KeyNotFoundException($"'{entity.Path}' has no management node.");

    /// <summary>The entity's management node, or null once the entity has been deleted.</summary>
    public ManagementNode? FindManagement(QueueEntity entity)
    {
        lock (_sync)
        {
            return _management.GetValueOrDefault(entity);
        }
    }

    /// <summary>A queue (not a topic, a subscription or a dead-letter queue) by name.</summary>
    public QueueEntity? FindQueue(string name) => Find(name) is { IsTopic: false, IsSubscription: false, IsDeadLetterQueue: false } queue ? queue : null;

    public Topic? FindTopic(string name)
    {
        lock (_sync)
        {
            return _topics.GetValueOrDefault(name.Trim('/'));
        }
    }

    public IReadOnlyList<QueueEntity> ListQueues() => [.. _queues.Where(q => !q.IsTopic && !q.IsSubscription)];

    public IReadOnlyList<Topic> ListTopics() => [.. _queues.Where(q => q.IsTopic).Select(q => FindTopic(q.Path)).OfType<Topic>()];

    /// <summary>Adds a queue and its dead-letter queue; null when a queue or topic of that name exists.</summary>
    public QueueEntity? AddQueue(QueueOptions options)
    {
        lock (_sync)
        {
            if (_entities.ContainsKey(options.Name))
            {
                return null;
            }

            var metrics = new Metrics.QueueMetrics();
            var dlq = new QueueEntity(options, Settings, metrics, deadLetterQueue: null);
            var main = new QueueEntity(options, Settings, metrics, dlq);
            Register(main, new ManagementNode(main, Latency, Settings.Time));
            Register(dlq, new ManagementNode(dlq, Latency, Settings.Time));
            _queues.Add(main);
            return main;
        }
    }

    /// <summary>Adds a topic without subscriptions (its options' subscriptions are not read); null when the name is taken.</summary>
    public Topic? AddTopic(TopicOptions options)
    {
        lock (_sync)
        {
            if (_entities.ContainsKey(options.Name))
            {
                return null;
            }

            var router = new TopicRouter(options);
            var entity = new QueueEntity(options.AsQueue(), Settings, new Metrics.QueueMetrics(), deadLetterQueue: null, router.Distribute);
            var topic = new Topic(entity, router);
            Register(entity, new ManagementNode(entity, Latency, Settings.Time));
            _topics[options.Name] = topic;
            _queues.Add(entity);
            return topic;
        }
    }

    /// <summary>Adds a subscription with its rules (or <c>$Default</c>); null when the topic has one of that name or is gone.</summary>
    public Subscription? AddSubscription(Topic topic, SubscriptionOptions options)
    {
        var queue = options.AsQueue(topic.Name);
        lock (_sync)
        {
            if (_entities.ContainsKey(queue.Name) || !_topics.TryGetValue(topic.Name, out var current) || current != topic)
            {
                return null;
            }

            var metrics = new Metrics.QueueMetrics();
            var dlq = new QueueEntity(queue, Settings, metrics, deadLetterQueue: null);
            var main = new QueueEntity(queue, Settings, metrics, dlq);
            var subscription = new Subscription(main, options.EffectiveRules.Select(r => SubscriptionRule.From(r) with { CreatedAt = Settings.UtcNow }));
            Register(main, new ManagementNode(main, Latency, Settings.Time, subscription));
            Register(dlq, new ManagementNode(dlq, Latency, Settings.Time));
            _queues.Add(main);
            topic.Router.Add(subscription);
            return subscription;
        }
    }

    /// <summary>Deletes a queue with its messages; its links are detached with amqp:not-found. False when there is none.</summary>
    public bool RemoveQueue(string name)
    {
        List<AmqpLink> links;
        QueueEntity? queue;
        lock (_sync)
        {
            queue = FindQueue(name);
            if (queue is null)
            {
                return false;
            }

            links = Unregister(queue);
        }

        Detach(links, queue.Path);
        return true;
    }

    /// <summary>Deletes a topic, its subscriptions and their messages, detaching their links. False when there is none.</summary>
    public bool RemoveTopic(string name)
    {
        var links = new List<AmqpLink>();
        Topic? topic;
        lock (_sync)
        {
            if (!_topics.Remove(name.Trim('/'), out topic))
            {
                return false;
            }

            foreach (var subscription in topic.Router.Subscriptions)
            {
                links.AddRange(Unregister(subscription.Queue));
            }

            links.AddRange(Unregister(topic.Entity));
        }

        Detach(links, topic.Name);
        return true;
    }

    /// <summary>Deletes a subscription and its messages, detaching its links. False when the topic has none of that name.</summary>
    public bool RemoveSubscription(Topic topic, string name)
    {
        List<AmqpLink> links;
        Subscription? subscription;
        lock (_sync)
        {
            subscription = topic.FindSubscription(name);
            if (subscription is null)
            {
                return false;
            }

            topic.Router.Remove(subscription);
            links = Unregister(subscription.Queue);
        }

        Detach(links, subscription.Queue.Path);
        return true;
    }

    /// <summary>
    /// Remembers a link attached to an entity (or its dead-letter queue or management node), so that deleting the
    /// entity detaches it: a sender must not have its messages accepted into an entity that no longer exists.
    /// </summary>
    public void Track(QueueEntity entity, AmqpLink link)
    {
        lock (_sync)
        {
            if (!_management.ContainsKey(entity))
            {
                // Deleted between the attach's lookup and now: refuse as the lookup would have.
                _ = link.CloseAsync(Deleted(entity.Path));
                return;
            }

            if (!_links.TryGetValue(entity, out var links))
            {
                _links[entity] = links = [];
            }

            links.Add(link);
        }

        link.Closed += (l, _) =>
        {
            lock (_sync)
            {
                if (_links.TryGetValue(entity, out var links))
                {
                    links.Remove(l);
                }
            }
        };
    }

    /// <summary>Takes an entity and its dead-letter queue out of every table; returns their links. Caller holds the lock.</summary>
    private List<AmqpLink> Unregister(QueueEntity main)
    {
        var links = new List<AmqpLink>();
        foreach (var entity in new[] { main, main.DeadLetterQueue }.OfType<QueueEntity>())
        {
            _entities.Remove(entity.Path);
            _management.Remove(entity);
            if (_links.Remove(entity, out var attached))
            {
                links.AddRange(attached);
            }
        }

        _queues.Remove(main);
        return links;
    }

    private void Register(QueueEntity entity, ManagementNode node)
    {
        _entities[entity.Path] = entity;
        _management[entity] = node;
    }

    private void Detach(List<AmqpLink> links, string path)
    {
        foreach (var link in links)
        {
            _ = link.CloseAsync(Deleted(path));
        }
    }

    private Error Deleted(string path) => new()
    {
        Condition = ErrorCondition.NotFound,
        Description = $"The messaging entity 'sb://{Name}/{path}' has been deleted.",
    };

    /// <summary>A list other threads may enumerate while entities come and go: each enumeration reads the array of the moment.</summary>
    private sealed class EntityList : IReadOnlyList<QueueEntity>
    {
        private QueueEntity[] _items = [];

        public int Count => Volatile.Read(ref _items).Length;

        public QueueEntity this[int index] => Volatile.Read(ref _items)[index];

        /// <summary>Callers hold the namespace's lock, so changes do not race each other.</summary>
        public void Add(QueueEntity entity) => Volatile.Write(ref _items, [.. _items, entity]);

        public void Remove(QueueEntity entity) => Volatile.Write(ref _items, [.. _items.Where(e => e != entity)]);

        public IEnumerator<QueueEntity> GetEnumerator() => ((IEnumerable<QueueEntity>)Volatile.Read(ref _items)).GetEnumerator();

        IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
    }
}

/// <summary>A topic: the entity senders attach to (it holds scheduled messages only) and the router feeding its subscriptions.</summary>
internal sealed class Topic(QueueEntity entity, TopicRouter router)
{
    public QueueEntity Entity { get; } = entity;

    public TopicRouter Router { get; } = router;

    public string Name => Entity.Path;

    public Subscription? FindSubscription(string name)
    {
        var path = SubscriptionOptions.PathOf(Name, name);
        return Router.Subscriptions.FirstOrDefault(s => string.Equals(s.Queue.Path, path, StringComparison.OrdinalIgnoreCase));
    }

    /// <summary>A subscription's own name (the last segment of its path).</summary>
    public static string NameOf(Subscription subscription) => subscription.Queue.Path[(subscription.Queue.Path.LastIndexOf('/') + 1)..];
}
