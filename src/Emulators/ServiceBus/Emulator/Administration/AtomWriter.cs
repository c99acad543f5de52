using System.Globalization;
using System.Xml;
using System.Xml.Linq;
using DroneDelivery.Emulators.ServiceBus.Broker;
using static DroneDelivery.Emulators.ServiceBus.Administration.AtomNames;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// Writes what the administration API answers, in the service's shape: an Atom <c>entry</c> per entity (its id and self
/// link the entity's own URL, which the JavaScript SDK reads names from) whose content is the entity's description with
/// its settings in the service's element order, the runtime counts included; a <c>feed</c> of entries for a list; and
/// for a queue or topic that does not exist, the empty feed the service answers with 200.
/// </summary>
internal sealed class AtomWriter(string baseUrl, string apiVersion, string namespaceName)
{
    /// <summary>What the service reports for a time it has not recorded (last access).</summary>
    private const string NeverRecorded = "0001-01-01T00:00:00Z";

    public XElement Queue(QueueEntity queue, EntityExtras extras)
    {
        var o = queue.Options;
        var counts = Counts.Of(queue);
        return Entry(o.Name, o.Name, extras, new XElement(
            Connect + "QueueDescription",
            new XAttribute(XNamespace.Xmlns + "i", SchemaInstance),
            Field("LockDuration", XmlConvert.ToString(o.LockDuration)),
            Field("MaxSizeInMegabytes", extras.MaxSizeInMegabytes),
            Field("RequiresDuplicateDetection", o.RequiresDuplicateDetection),
            Field("RequiresSession", o.RequiresSession),
            Field("DefaultMessageTimeToLive", XmlConvert.ToString(o.DefaultMessageTimeToLive)),
            Field("DeadLetteringOnMessageExpiration", o.DeadLetteringOnMessageExpiration),
            Field("DuplicateDetectionHistoryTimeWindow", XmlConvert.ToString(o.DuplicateDetectionHistoryTimeWindow)),
            Field("MaxDeliveryCount", o.MaxDeliveryCount),
            Field("EnableBatchedOperations", extras.EnableBatchedOperations),
            Field("SizeInBytes", 0),
            Field("MessageCount", counts.Total),
            AccessAndState(extras),
            Field("SupportOrdering", extras.SupportOrdering),
            counts.Details(),
            Lifetime(),
            Field("EnableExpress", extras.EnableExpress),
            Field("MaxMessageSizeInKilobytes", queue.Settings.MaxMessageSizeBytes / 1024)));
    }

    public XElement Topic(Topic topic, EntityExtras extras)
    {
        var o = topic.Router.Options;
        return Entry(topic.Name, topic.Name, extras, new XElement(
            Connect + "TopicDescription",
            new XAttribute(XNamespace.Xmlns + "i", SchemaInstance),
            Field("DefaultMessageTimeToLive", XmlConvert.ToString(o.DefaultMessageTimeToLive)),
            Field("MaxSizeInMegabytes", extras.MaxSizeInMegabytes),
            Field("RequiresDuplicateDetection", o.RequiresDuplicateDetection),
            Field("DuplicateDetectionHistoryTimeWindow", XmlConvert.ToString(o.DuplicateDetectionHistoryTimeWindow)),
            Field("EnableBatchedOperations", extras.EnableBatchedOperations),
            Field("SizeInBytes", 0),
            Field("FilteringMessagesBeforePublishing", false),
            AccessAndState(extras),
            Field("SupportOrdering", extras.SupportOrdering),
            Counts.Of(topic.Entity).Details(),
            Field("SubscriptionCount", topic.Router.Subscriptions.Count),
            Lifetime(),
            Field("EnableSubscriptionPartitioning", false),
            Field("EnableExpress", extras.EnableExpress),
            Field("MaxMessageSizeInKilobytes", topic.Entity.Settings.MaxMessageSizeBytes / 1024)));
    }

    public XElement Subscription(Topic topic, Subscription subscription, EntityExtras extras)
    {
        var o = subscription.Queue.Options;
        var counts = Counts.Of(subscription.Queue);
        return Entry(subscription.Queue.Path, Broker.Topic.NameOf(subscription), extras, new XElement(
            Connect + "SubscriptionDescription",
            new XAttribute(XNamespace.Xmlns + "i", SchemaInstance),
            Field("LockDuration", XmlConvert.ToString(o.LockDuration)),
            Field("RequiresSession", o.RequiresSession),
            Field("DefaultMessageTimeToLive", XmlConvert.ToString(o.DefaultMessageTimeToLive)),
            Field("DeadLetteringOnMessageExpiration", o.DeadLetteringOnMessageExpiration),
            Field("DeadLetteringOnFilterEvaluationExceptions", extras.DeadLetteringOnFilterEvaluationExceptions),
            Field("MessageCount", counts.Total),
            Field("MaxDeliveryCount", o.MaxDeliveryCount),
            Field("EnableBatchedOperations", extras.EnableBatchedOperations),
            Field("Status", "Active"),
            extras.UserMetadata is null ? null : Field("UserMetadata", extras.UserMetadata),
            Times(extras),
            counts.Details(),
            Field("AutoDeleteOnIdle", XmlConvert.ToString(TimeSpan.MaxValue)),
            Field("EntityAvailabilityStatus", "Available")));
    }

    public XElement Rule(Subscription subscription, SubscriptionRule rule) =>
        Entry($"{subscription.Queue.Path}/Rules/{rule.Options.Name}", rule.Options.Name, new EntityExtras { CreatedAt = rule.CreatedAt, UpdatedAt = rule.CreatedAt }, RuleXml.Write(rule));

    public XElement NamespaceInfo(DateTime created) => Entry("$namespaceinfo", namespaceName, new EntityExtras { CreatedAt = created, UpdatedAt = created }, new XElement(
        Connect + "NamespaceInfo",
        new XAttribute(XNamespace.Xmlns + "i", SchemaInstance),
        Field("CreatedTime", Time(created)),
        Field("MessagingSKU", "Standard"),
        Field("ModifiedTime", Time(created)),
        Field("Name", namespaceName),
        Field("NamespaceType", "Messaging")));

    /// <summary>A list: <paramref name="entries"/> under a feed titled <paramref name="title"/>.</summary>
    public XElement Feed(string path, string title, DateTime now, IEnumerable<XElement> entries) => new(
        Atom + "feed",
        new XElement(Atom + "title", new XAttribute("type", "text"), title),
        new XElement(Atom + "id", Url(path)),
        new XElement(Atom + "updated", Time(now)),
        new XElement(Atom + "link", new XAttribute("rel", "self"), new XAttribute("href", Url(path))),
        entries);

    /// <summary>The service's answer to a GET of a queue or topic that does not exist: 200 and a feed without entries.</summary>
    public static XElement NothingFound(DateTime now) => new(
        Atom + "feed",
        new XElement(Atom + "title", new XAttribute("type", "text"), "Publicly Listed Services"),
        new XElement(Atom + "subtitle", new XAttribute("type", "text"), "This is the list of publicly-listed services currently available."),
        new XElement(Atom + "id", $"uuid:{Guid.NewGuid()};id=1"),
        new XElement(Atom + "updated", Time(now)),
        new XElement(Atom + "generator", "Service Bus 1.1"));

    private XElement Entry(string path, string title, EntityExtras extras, XElement description) => new(
        Atom + "entry",
        new XElement(Atom + "id", Url(path)),
        new XElement(Atom + "title", new XAttribute("type", "text"), title),
        new XElement(Atom + "published", Time(extras.CreatedAt)),
        new XElement(Atom + "updated", Time(extras.UpdatedAt)),
        new XElement(Atom + "author", new XElement(Atom + "name", namespaceName)),
        new XElement(Atom + "link", new XAttribute("rel", "self"), new XAttribute("href", Url(path))),
        new XElement(Atom + "content", new XAttribute("type", "application/xml"), description));

    private string Url(string path) => $"{baseUrl}/{path}?api-version={Uri.EscapeDataString(apiVersion)}";

    /// <summary>A queue's and a topic's access settings (none but the namespace's key), state and times, in the service's order.</summary>
    private static XElement?[] AccessAndState(EntityExtras extras) =>
    [
        Field("IsAnonymousAccessible", false),
        new XElement(Connect + "AuthorizationRules"),
        Field("Status", "Active"),
        extras.UserMetadata is null ? null : Field("UserMetadata", extras.UserMetadata),
        .. Times(extras),
    ];

    /// <summary>Never deleted when idle, never partitioned, always available.</summary>
    private static XElement[] Lifetime() =>
    [
        Field("AutoDeleteOnIdle", XmlConvert.ToString(TimeSpan.MaxValue)),
        Field("EnablePartitioning", false),
        Field("EntityAvailabilityStatus", "Available"),
    ];

    private static XElement[] Times(EntityExtras extras) =>
    [
        Field("CreatedAt", Time(extras.CreatedAt)),
        Field("UpdatedAt", Time(extras.UpdatedAt)),
        Field("AccessedAt", NeverRecorded),
    ];

    private static string Time(DateTime time) => XmlConvert.ToString(DateTime.SpecifyKind(time, DateTimeKind.Utc), XmlDateTimeSerializationMode.Utc);

    private static XElement Field(string name, object value) => new(
        Connect + name,
        value switch
        {
            bool b => XmlConvert.ToString(b),
            IFormattable f => f.ToString(null, CultureInfo.InvariantCulture),
            _ => value,
        });

    /// <summary>
    /// An entity's runtime counts. Deferred messages count as active: they stay in the entity, as the service documents;
    /// the dead-letter count is everything in the dead-letter queue; the total adds the scheduled ones.
    /// </summary>
    private sealed record Counts(long Active, long DeadLetter, long Scheduled)
    {
        public long Total => Active + DeadLetter + Scheduled;

        public static Counts Of(QueueEntity entity)
        {
            var main = entity.Counts();
            var deadLetter = entity.DeadLetterQueue?.Counts();
            return new Counts(main.Active + main.Deferred, deadLetter is { } d ? d.Active + d.Deferred : 0, main.Scheduled);
        }

        public XElement Details() => new(
            Connect + "CountDetails",
            new XAttribute(XNamespace.Xmlns + "d2p1", AtomNames.Counts),
            new XElement(AtomNames.Counts + "ActiveMessageCount", Active),
            new XElement(AtomNames.Counts + "DeadLetterMessageCount", DeadLetter),
            new XElement(AtomNames.Counts + "ScheduledMessageCount", Scheduled),
            new XElement(AtomNames.Counts + "TransferMessageCount", 0),
            new XElement(AtomNames.Counts + "TransferDeadLetterMessageCount", 0));
    }
}
