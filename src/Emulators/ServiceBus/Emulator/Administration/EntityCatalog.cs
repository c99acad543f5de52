using System.Collections.Concurrent;
using System.Xml.Linq;
using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>An answer: the status and the document (null for an empty body).</summary>
internal sealed record AdministrationResult(int Status, XElement? Document);

/// <summary>
/// The administration operations on the namespace: create, read, update, delete and list queues, topics,
/// subscriptions and rules, with the service's statuses and errors. Entities made here are built exactly as the
/// configuration's are (the same options, the same broker code), so they behave alike. Changes are serialised by one
/// lock (they are rare); reads take the namespace's snapshots.
/// </summary>
internal sealed class EntityCatalog(Namespace ns, long maxMessageSizeBytes, TimeProvider time)
{
    /// <summary>The service's quotas (Standard tier): queues and topics per namespace, subscriptions per topic, rules per subscription.</summary>
    public const int MaxEntities = 10_000;

    public const int MaxSubscriptionsPerTopic = 2_000;

    public const int MaxRulesPerSubscription = 2_000;

    private readonly Lock _changes = new();
    private readonly ConcurrentDictionary<string, EntityExtras> _extras = new(StringComparer.OrdinalIgnoreCase);
    private readonly DateTime _started = time.GetUtcNow().UtcDateTime;

    private DateTime Now => time.GetUtcNow().UtcDateTime;

    public AdministrationResult Get(AdministrationTarget target, AtomWriter atom, int skip, int top)
    {
        switch (target.Kind)
        {
            case TargetKind.Namespace:
                return new(200, atom.NamespaceInfo(_started));
            case TargetKind.QueueList:
                return new(200, atom.Feed(target.Path, "Queues", Now, ns.ListQueues().Skip(skip).Take(top).Select(q => atom.Queue(q, Extras(q.Path, queue: true)))));
            case TargetKind.TopicList:
                return new(200, atom.Feed(target.Path, "Topics", Now, ns.ListTopics().Skip(skip).Take(top).Select(t => atom.Topic(t, Extras(t.Name, queue: false)))));
            case TargetKind.Entity when ns.FindQueue(target.Name) is { } queue:
                return new(200, atom.Queue(queue, Extras(queue.Path, queue: true)));
            case TargetKind.Entity when ns.FindTopic(target.Name) is { } topic:
                return new(200, atom.Topic(topic, Extras(topic.Name, queue: false)));
            case TargetKind.Entity:
                return new(200, AtomWriter.NothingFound(Now));
        }

        // Below a topic: the service answers a missing topic with the empty feed, a missing subscription or rule with a 404.
        if (ns.FindTopic(target.Topic) is not { } parent)
        {
            return target.Kind is TargetKind.SubscriptionList or TargetKind.Subscription
                ? new(200, AtomWriter.NothingFound(Now))
                : throw AdministrationException.EntityNotFound(target.Tracker(ns.Name));
        }

        if (target.Kind == TargetKind.SubscriptionList)
        {
            var subscriptions = parent.Router.Subscriptions.Skip(skip).Take(top);
            return new(200, atom.Feed(target.Path, "Subscriptions", Now, subscriptions.Select(s => atom.Subscription(parent, s, Extras(s.Queue.Path, queue: false)))));
        }

        var subscription = parent.FindSubscription(target.Subscription) ?? throw AdministrationException.EntityNotFound(target.Tracker(ns.Name));
        return target.Kind switch
        {
            TargetKind.Subscription => new(200, atom.Subscription(parent, subscription, Extras(subscription.Queue.Path, queue: false))),
            TargetKind.RuleList => new(200, atom.Feed(target.Path, "Rules", Now, subscription.Rules.Skip(skip).Take(top).Select(r => atom.Rule(subscription, r)))),
            _ => new(200, atom.Rule(subscription, FindRule(subscription, target.Name) ?? throw AdministrationException.EntityNotFound(target.Tracker(ns.Name)))),
        };
    }

    /// <summary>PUT: creates, or with <paramref name="update"/> (If-Match) replaces, the entity the body describes.</summary>
    public AdministrationResult Put(AdministrationTarget target, XElement description, bool update, AtomWriter atom)
    {
        lock (_changes)
        {
            return target.Kind switch
            {
                TargetKind.Entity when description.Name.LocalName == "QueueDescription" => PutQueue(target, description, update, atom),
                TargetKind.Entity when description.Name.LocalName == "TopicDescription" => PutTopic(target, description, update, atom),
                TargetKind.Subscription when description.Name.LocalName == "SubscriptionDescription" => PutSubscription(target, description, update, atom),
                TargetKind.Rule when description.Name.LocalName == "RuleDescription" => PutRule(target, description, update, atom),
                TargetKind.Entity or TargetKind.Subscription or TargetKind.Rule =>
                    throw AdministrationException.BadRequest($"A {description.Name.LocalName} cannot be put at '{target.Path}'."),
                _ => throw new AdministrationException(405, $"The method PUT is not allowed on '{target.Path}'."),
            };
        }
    }

    public AdministrationResult Delete(AdministrationTarget target)
    {
        lock (_changes)
        {
            var deleted = target.Kind switch
            {
                TargetKind.Entity => ns.RemoveQueue(target.Name) || ns.RemoveTopic(target.Name),
                TargetKind.Subscription => ns.FindTopic(target.Topic) is { } topic && ns.RemoveSubscription(topic, target.Subscription),
                TargetKind.Rule => ns.FindTopic(target.Topic)?.FindSubscription(target.Subscription) is { } subscription && subscription.TryRemove(target.Name)
                    ? true
                    : throw AdministrationException.EntityNotFound(target.Tracker(ns.Name)),
                _ => throw new AdministrationException(405, $"The method DELETE is not allowed on '{target.Path}'."),
            };
            if (!deleted)
            {
                throw AdministrationException.NoService();
            }

            // What was kept about the entity goes with it, and with a topic what was kept about its subscriptions (not about a
            // queue whose name merely starts with the topic's: names may hold '/').
            var below = target.Path + "/Subscriptions/";
            foreach (var key in _extras.Keys.Where(k => k.Equals(target.Path, StringComparison.OrdinalIgnoreCase) || k.StartsWith(below, StringComparison.OrdinalIgnoreCase)))
            {
                _extras.TryRemove(key, out _);
            }

            return new(200, null);
        }
    }

    private AdministrationResult PutQueue(AdministrationTarget target, XElement description, bool update, AtomWriter atom)
    {
        var existing = ns.FindQueue(target.Name);
        var (options, extras) = DescriptionReader.Queue(description, existing?.Options.Name ?? target.Name, Stamped(existing?.Path, queue: true), maxMessageSizeBytes);
        if (!update)
        {
            RefuseTaken(target.Name);
            var queue = ns.AddQueue(options) ?? throw AdministrationException.Conflict();
            return Created(queue.Path, extras, () => atom.Queue(queue, Extras(queue.Path, queue: true)));
        }

        if (existing is null)
        {
            throw AdministrationException.OperationNotFound();
        }

        Unchangeable(existing.Options.RequiresSession, options.RequiresSession, "RequiresSession", "Queue");
        Unchangeable(existing.Options.RequiresDuplicateDetection, options.RequiresDuplicateDetection, "requiresDuplicateDetection", "Queue");
        existing.Reconfigure(options);
        return Updated(existing.Path, extras, () => atom.Queue(existing, Extras(existing.Path, queue: true)));
    }

    private AdministrationResult PutTopic(AdministrationTarget target, XElement description, bool update, AtomWriter atom)
    {
        var existing = ns.FindTopic(target.Name);
        var (options, extras) = DescriptionReader.Topic(description, existing?.Name ?? target.Name, Stamped(existing?.Name, queue: false), maxMessageSizeBytes);
        if (!update)
        {
            RefuseTaken(target.Name);
            var topic = ns.AddTopic(options) ?? throw AdministrationException.Conflict();
            return Created(topic.Name, extras, () => atom.Topic(topic, Extras(topic.Name, queue: false)));
        }

        if (existing is null)
        {
            throw AdministrationException.OperationNotFound();
        }

        Unchangeable(existing.Router.Options.RequiresDuplicateDetection, options.RequiresDuplicateDetection, "requiresDuplicateDetection", "Topic");
        existing.Router.Options = options;
        existing.Entity.Reconfigure(options.AsQueue());
        return Updated(existing.Name, extras, () => atom.Topic(existing, Extras(existing.Name, queue: false)));
    }

    private AdministrationResult PutSubscription(AdministrationTarget target, XElement description, bool update, AtomWriter atom)
    {
        var topic = ns.FindTopic(target.Topic) ?? throw AdministrationException.EntityNotFound($"{ns.Name}:Topic:{target.Topic}");
        var existing = topic.FindSubscription(target.Subscription);
        var name = existing is null ? target.Subscription : Topic.NameOf(existing);
        var (options, extras) = DescriptionReader.Subscription(description, topic.Name, name, Stamped(existing?.Queue.Path, queue: false), maxMessageSizeBytes);
        if (!update)
        {
            if (existing is not null)
            {
                throw AdministrationException.AlreadyExists(target.Tracker(ns.Name));
            }

            if (topic.Router.Subscriptions.Count >= MaxSubscriptionsPerTopic)
            {
                throw Quota($"The maximum number of subscriptions ({MaxSubscriptionsPerTopic}) on topic '{topic.Name}' has been reached.");
            }

            var subscription = ns.AddSubscription(topic, options) ?? throw AdministrationException.AlreadyExists(target.Tracker(ns.Name));
            return Created(subscription.Queue.Path, extras, () => atom.Subscription(topic, subscription, Extras(subscription.Queue.Path, queue: false)));
        }

        if (existing is null)
        {
            throw AdministrationException.EntityNotFound(target.Tracker(ns.Name));
        }

        Unchangeable(existing.Queue.Options.RequiresSession, options.RequiresSession, "RequiresSession", "Subscription");
        existing.Queue.Reconfigure(options.AsQueue(topic.Name));
        return Updated(existing.Queue.Path, extras, () => atom.Subscription(topic, existing, Extras(existing.Queue.Path, queue: false)));
    }

    private AdministrationResult PutRule(AdministrationTarget target, XElement description, bool update, AtomWriter atom)
    {
        var subscription = ns.FindTopic(target.Topic)?.FindSubscription(target.Subscription)
            ?? throw AdministrationException.EntityNotFound($"{ns.Name}:Topic:{target.Topic}|{target.Subscription}");
        var options = RuleXml.Read(description, target.Name, $"Subscription '{subscription.Queue.Path}'");
        var rule = SubscriptionRule.From(options) with { CreatedAt = Now };
        if (update)
        {
            return subscription.TryReplace(rule)
                ? new(200, atom.Rule(subscription, FindRule(subscription, target.Name)!))
                : throw AdministrationException.EntityNotFound(target.Tracker(ns.Name));
        }

        if (subscription.Rules.Count >= MaxRulesPerSubscription)
        {
            throw Quota($"The maximum number of rules ({MaxRulesPerSubscription}) on subscription '{subscription.Queue.Path}' has been reached.");
        }

        return subscription.TryAdd(rule)
            ? new(201, atom.Rule(subscription, rule))
            : throw AdministrationException.AlreadyExists(target.Tracker(ns.Name));
    }

    private void RefuseTaken(string name)
    {
        if (ns.Find(name) is not null)
        {
            throw AdministrationException.Conflict();
        }

        if (ns.Queues.Count(q => !q.IsSubscription) >= MaxEntities)
        {
            throw Quota($"The maximum number of queues and topics ({MaxEntities}) in the namespace has been reached.");
        }
    }

    private static AdministrationException Quota(string reason) => new(403, $"SubCode=40300. {reason} {AdministrationException.MoreInformation}");

    /// <summary>The service keeps some settings for the life of an entity; changing one is a 400 in its words.</summary>
    private static void Unchangeable(bool current, bool requested, string property, string kind)
    {
        if (current != requested)
        {
            throw AdministrationException.BadRequest($"The value for the '{property}' property of an existing {kind} cannot be changed.");
        }
    }

    private AdministrationResult Created(string path, EntityExtras extras, Func<XElement> entry)
    {
        var now = Now;
        _extras[path] = extras with { CreatedAt = now, UpdatedAt = now };
        return new(201, entry());
    }

    private AdministrationResult Updated(string path, EntityExtras extras, Func<XElement> entry)
    {
        _extras[path] = extras with { UpdatedAt = Now };
        return new(200, entry());
    }

    /// <summary>What is kept about an entity: set when the API made or last changed it, else the defaults since the emulator started.</summary>
    private EntityExtras Extras(string path, bool queue) =>
        _extras.GetValueOrDefault(path) ?? new EntityExtras { CreatedAt = _started, UpdatedAt = _started, SupportOrdering = queue };

    /// <summary>The defaults a PUT's description starts from: the entity's times when it exists.</summary>
    private EntityExtras Stamped(string? path, bool queue) => path is null ? new EntityExtras { SupportOrdering = queue } : Extras(path, queue);

    private static SubscriptionRule? FindRule(Subscription subscription, string name) =>
        subscription.Rules.FirstOrDefault(r => string.Equals(r.Options.Name, name, StringComparison.OrdinalIgnoreCase));
}
