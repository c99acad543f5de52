using System.Xml;
using System.Xml.Linq;
using static DroneDelivery.Emulators.ServiceBus.Administration.AtomNames;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// Reads the entity descriptions of PUT bodies (an Atom <c>entry</c> whose <c>content</c> holds a QueueDescription,
/// TopicDescription, SubscriptionDescription or RuleDescription) into the options the broker is built from. A PUT
/// replaces the whole description, as on the service: a setting left out takes the service's default. Settings the
/// emulator does not model are refused with a 400 naming them rather than ignored.
/// </summary>
internal static class DescriptionReader
{
    /// <summary>The largest body read; a description is a few kilobytes.</summary>
    public const int MaxBodyBytes = 256 * 1024;

    /// <summary>Parses the body and returns its description element (QueueDescription...).</summary>
    /// <exception cref="AdministrationException">400: not well-formed XML, a DTD, or not an Atom entry with a description.</exception>
    public static XElement Description(Stream body)
    {
        XDocument document;
        try
        {
            using var reader = XmlReader.Create(body, new XmlReaderSettings
            {
                DtdProcessing = DtdProcessing.Prohibit,
                XmlResolver = null,
                MaxCharactersInDocument = MaxBodyBytes,
                IgnoreComments = true,
                IgnoreProcessingInstructions = true,
            });
            document = XDocument.Load(reader);
        }
        catch (XmlException e)
        {
            throw AdministrationException.BadRequest($"The request body is not well-formed XML: {e.Message}");
        }

        var content = document.Root is { } root && root.Name == Atom + "entry" ? root.Element(Atom + "content") : null;
        return content?.Elements().FirstOrDefault(e => e.Name.Namespace == Connect)
            ?? throw AdministrationException.BadRequest("The request body must be an Atom entry whose content holds an entity description.");
    }

    public static (QueueOptions Options, EntityExtras Extras) Queue(XElement description, string name, EntityExtras defaults, long maxMessageSizeBytes)
    {
        var fields = new DescriptionFields(description);
        var extras = fields.Extras(defaults, maxMessageSizeBytes);
        var options = new QueueOptions
        {
            Name = name,
            LockDuration = fields.LockDuration(),
            MaxDeliveryCount = fields.MaxDeliveryCount() ?? 10,
            DefaultMessageTimeToLive = fields.Duration("DefaultMessageTimeToLive") ?? TimeSpan.MaxValue,
            DeadLetteringOnMessageExpiration = fields.Bool("DeadLetteringOnMessageExpiration") ?? false,
            RequiresDuplicateDetection = fields.Bool("RequiresDuplicateDetection") ?? false,
            DuplicateDetectionHistoryTimeWindow = fields.Duration("DuplicateDetectionHistoryTimeWindow") ?? TimeSpan.FromMinutes(10),
            RequiresSession = fields.Bool("RequiresSession") ?? false,
        };
        Check(options.Validate);
        return (options, extras);
    }

    public static (TopicOptions Options, EntityExtras Extras) Topic(XElement description, string name, EntityExtras defaults, long maxMessageSizeBytes)
    {
        var fields = new DescriptionFields(description);
        fields.RefuseUnless(fields.Bool("FilteringMessagesBeforePublishing") is null or false, "FilteringMessagesBeforePublishing", "filtering before publishing is not modelled by this emulator");
        fields.RefuseUnless(fields.Bool("EnableSubscriptionPartitioning") is null or false, "EnableSubscriptionPartitioning", "partitioned entities are not supported by this emulator");
        var extras = fields.Extras(defaults, maxMessageSizeBytes);
        var options = new TopicOptions
        {
            Name = name,
            DefaultMessageTimeToLive = fields.Duration("DefaultMessageTimeToLive") ?? TimeSpan.MaxValue,
            RequiresDuplicateDetection = fields.Bool("RequiresDuplicateDetection") ?? false,
            DuplicateDetectionHistoryTimeWindow = fields.Duration("DuplicateDetectionHistoryTimeWindow") ?? TimeSpan.FromMinutes(10),
        };
        Check(options.Validate);
        return (options, extras);
    }

    /// <summary>A subscription, with the default rule of its description (<c>DefaultRuleDescription</c>, else <c>$Default</c>).</summary>
    public static (SubscriptionOptions Options, EntityExtras Extras) Subscription(XElement description, string topic, string name, EntityExtras defaults, long maxMessageSizeBytes)
    {
        var fields = new DescriptionFields(description);
        var extras = fields.Extras(defaults, maxMessageSizeBytes);
        var path = SubscriptionOptions.PathOf(topic, name);
        var rule = fields.Element("DefaultRuleDescription") is { } ruleDescription ? RuleXml.Read(ruleDescription, null, $"Subscription '{path}'") : null;
        var options = new SubscriptionOptions
        {
            Name = name,
            LockDuration = fields.LockDuration(),
            MaxDeliveryCount = fields.MaxDeliveryCount() ?? 10,
            DefaultMessageTimeToLive = fields.Duration("DefaultMessageTimeToLive") ?? TimeSpan.MaxValue,
            DeadLetteringOnMessageExpiration = fields.Bool("DeadLetteringOnMessageExpiration") ?? false,
            RequiresSession = fields.Bool("RequiresSession") ?? false,
            Rules = rule is null ? [] : [rule],
        };
        Check(() => options.Validate(topic));
        return (options, extras);
    }

    /// <summary>The entity options' own checks (ranges, names), their message as the 400's reason.</summary>
    private static void Check(Action validate)
    {
        try
        {
            validate();
        }
        catch (EmulatorConfigurationException e)
        {
            throw AdministrationException.BadRequest(e.Message);
        }
    }
}
