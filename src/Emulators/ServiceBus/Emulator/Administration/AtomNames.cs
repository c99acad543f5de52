using System.Xml.Linq;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>The XML namespaces of the administration API's Atom documents.</summary>
internal static class AtomNames
{
    public static readonly XNamespace Atom = "http://www.w3.org/2005/Atom";

    /// <summary>The entity descriptions' namespace (QueueDescription, TopicDescription, ...).</summary>
    public static readonly XNamespace Connect = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect";

    /// <summary>Where the runtime counts live (<c>CountDetails</c>'s children).</summary>
    public static readonly XNamespace Counts = "http://schemas.microsoft.com/netservices/2011/06/servicebus";

    public static readonly XNamespace SchemaInstance = "http://www.w3.org/2001/XMLSchema-instance";

    public static readonly XNamespace Schema = "http://www.w3.org/2001/XMLSchema";

    public const string EntryContentType = "application/atom+xml;type=entry;charset=utf-8";

    public const string FeedContentType = "application/atom+xml;type=feed;charset=utf-8";

    public const string ErrorContentType = "application/xml; charset=utf-8";

    /// <summary>The <c>i:type</c> of a filter, an action or a property value, without its prefix.</summary>
    public static string? TypeOf(XElement element)
    {
        var type = element.Attribute(SchemaInstance + "type")?.Value;
        return type is null ? null : type[(type.IndexOf(':', StringComparison.Ordinal) + 1)..];
    }
}
