using System.Globalization;
using System.Xml;
using System.Xml.Linq;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// The settings of one entity description, by element name. As the service's contract serializer does, elements it does
/// not know are ignored (the .NET SDK sends back those it does not know itself) and the order is free; a value that is
/// not of its type, or an element given twice, is a 400 naming it.
/// </summary>
internal sealed class DescriptionFields
{
    private readonly Dictionary<string, XElement> _elements = new(StringComparer.Ordinal);

    public DescriptionFields(XElement description)
    {
        foreach (var element in description.Elements())
        {
            if (element.Name.Namespace == AtomNames.Connect && !_elements.TryAdd(element.Name.LocalName, element))
            {
                throw AdministrationException.BadRequest($"The element '{element.Name.LocalName}' is given twice.");
            }
        }
    }

    public XElement? Element(string name) => _elements.GetValueOrDefault(name);

    public string? Text(string name) => Element(name)?.Value;

    public TimeSpan? Duration(string name) => Parse(name, XmlConvert.ToTimeSpan, "an ISO 8601 duration such as PT1M");

    public bool? Bool(string name) => Parse(name, XmlConvert.ToBoolean, "true or false");

    public long? Long(string name) => Parse(name, XmlConvert.ToInt64, "an integer");

    /// <summary>Refuses a setting the emulator does not model when it is present with a value other than the service's default.</summary>
    public void RefuseUnless(bool isDefault, string name, string why)
    {
        if (!isDefault)
        {
            var value = Text(name) ?? string.Empty;
            throw AdministrationException.BadRequest($"The property '{name}' cannot be set to '{(value.Length > 100 ? value[..100] + "…" : value)}': {why}.");
        }
    }

    /// <summary>The settings every description shares: refused where the emulator does not model them, kept where they change nothing.</summary>
    public EntityExtras Extras(EntityExtras defaults, long maxMessageSizeBytes)
    {
        RefuseUnless(Text("Status") is null or "Active", "Status", "entities are always Active in this emulator (sending or receiving cannot be disabled)");
        RefuseUnless(string.IsNullOrWhiteSpace(Text("ForwardTo")), "ForwardTo", "auto-forwarding is not supported by this emulator");
        RefuseUnless(string.IsNullOrWhiteSpace(Text("ForwardDeadLetteredMessagesTo")), "ForwardDeadLetteredMessagesTo", "auto-forwarding is not supported by this emulator");
        RefuseUnless(Duration("AutoDeleteOnIdle") is null || Duration("AutoDeleteOnIdle") == TimeSpan.MaxValue, "AutoDeleteOnIdle", "deleting idle entities is not modelled by this emulator");
        RefuseUnless(Bool("EnablePartitioning") is null or false, "EnablePartitioning", "partitioned entities are not supported by this emulator");
        RefuseUnless(Bool("IsAnonymousAccessible") is null or false, "IsAnonymousAccessible", "every request needs a shared access signature");
        RefuseUnless(Element("AuthorizationRules") is not { HasElements: true }, "AuthorizationRules", "entity-level authorization rules are not modelled; the namespace's key authorises everything");
        var kilobytes = Long("MaxMessageSizeInKilobytes");
        RefuseUnless(kilobytes is null || kilobytes * 1024 == maxMessageSizeBytes, "MaxMessageSizeInKilobytes", $"the namespace's message size limit is {maxMessageSizeBytes / 1024} KB (the emulator's MaxMessageSizeBytes)");
        var size = Long("MaxSizeInMegabytes");
        if (size is not null and not (1024 or 2048 or 3072 or 4096 or 5120))
        {
            throw AdministrationException.BadRequest($"The specified value {size} is invalid. The property 'MaxSizeInMegabytes', must be one of the following values: 1024;2048;3072;4096;5120.");
        }

        var metadata = Text("UserMetadata");
        if (metadata is { Length: > 1024 })
        {
            throw AdministrationException.BadRequest("The property 'UserMetadata' is longer than 1024 characters.");
        }

        return defaults with
        {
            MaxSizeInMegabytes = size ?? defaults.MaxSizeInMegabytes,
            EnableBatchedOperations = Bool("EnableBatchedOperations") ?? true,
            SupportOrdering = Bool("SupportOrdering") ?? defaults.SupportOrdering,
            EnableExpress = Bool("EnableExpress") ?? false,
            DeadLetteringOnFilterEvaluationExceptions = Bool("DeadLetteringOnFilterEvaluationExceptions") ?? true,
            UserMetadata = metadata,
        };
    }

    /// <summary>The service's words for a lock duration beyond its maximum; other ranges are the entity options' own checks.</summary>
    public TimeSpan LockDuration()
    {
        var value = Duration("LockDuration") ?? TimeSpan.FromMinutes(1);
        return value <= TimeSpan.FromMinutes(5) ? value : throw AdministrationException.BadRequest("The supplied lock time exceeds the allowed maximum of '5' minutes.");
    }

    /// <summary>MaxDeliveryCount as an int (a value beyond it is out of every range and refused by the entity's checks).</summary>
    public int? MaxDeliveryCount() => Long("MaxDeliveryCount") is { } count ? (int)Math.Clamp(count, int.MinValue, int.MaxValue) : null;

    private T? Parse<T>(string name, Func<string, T> parse, string expected)
        where T : struct
    {
        if (Text(name) is not { } text)
        {
            return null;
        }

        try
        {
            return parse(text.Trim());
        }
        catch (Exception e) when (e is FormatException or OverflowException)
        {
            var shown = text.Length > 100 ? text[..100] + "…" : text;
            throw AdministrationException.BadRequest(string.Create(CultureInfo.InvariantCulture, $"The value '{shown}' of '{name}' is not valid: expected {expected}."));
        }
    }
}
