using System.Globalization;
using System.Text;
using System.Xml;
using System.Xml.Linq;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// A request the administration API refuses, answered as the service answers it: the status and
/// <c>&lt;Error&gt;&lt;Code&gt;status&lt;/Code&gt;&lt;Detail&gt;…&lt;/Detail&gt;&lt;/Error&gt;</c>, the detail starting with a
/// <c>SubCode=NNNNN.</c> where the service gives one (the .NET SDK reads it as the error code) and ending with the
/// tracking id, the entity (<c>SystemTracker</c>) and the time.
/// </summary>
internal sealed class AdministrationException(int status, string detail) : Exception(detail)
{
    public const string MoreInformation = "To know more visit https://aka.ms/sbResourceMgrExceptions.";

    public int Status { get; } = status;

    /// <summary>400 with sub-code 40000: a setting or a body the emulator refuses.</summary>
    public static AdministrationException BadRequest(string reason) => new(400, $"SubCode=40000. {reason} {MoreInformation}");

    /// <summary>What the service says when an entity's name is not one it accepts.</summary>
    public static AdministrationException InvalidName(string url) => BadRequest(
        $"'{url}' contains character(s) that is not allowed by Service Bus. Entity segments can contain only letters, numbers, periods (.), hyphens (-), and underscores (_).");

    /// <summary>Creating what exists: the service's words for queues and topics.</summary>
    public static AdministrationException Conflict() =>
        new(409, $"SubCode=40900. Conflict. You're requesting an operation that isn't allowed in the resource's current state. {MoreInformation} .");

    /// <summary>Creating a subscription or rule that exists (<c>ns:Topic:topic|subscription[|rule]</c>).</summary>
    public static AdministrationException AlreadyExists(string tracker) => new(409, $"The messaging entity '{tracker}' already exists. {MoreInformation}");

    /// <summary>Updating (If-Match) a queue or topic that does not exist.</summary>
    public static AdministrationException OperationNotFound() => new(404, $"SubCode=40400. Not Found. The Operation doesn't exist. {MoreInformation} .");

    /// <summary>Deleting what does not exist.</summary>
    public static AdministrationException NoService() => new(404, "No service is hosted at the specified address.");

    /// <summary>Reading, updating or deleting a subscription or rule that does not exist, or under a topic that does not.</summary>
    public static AdministrationException EntityNotFound(string tracker) => new(404, $"Entity '{tracker}' was not found. {MoreInformation}");

    /// <summary>A missing, malformed, wrongly signed, expired or too narrow shared access signature.</summary>
    public static AdministrationException Unauthorized(string reason) => new(401, $"{reason} {MoreInformation}");

    /// <summary>The body, as the service writes it.</summary>
    public string Body(string tracker, DateTimeOffset now) => new XElement(
        "Error",
        new XElement("Code", Status.ToString(CultureInfo.InvariantCulture)),
        new XElement("Detail", XmlSafe($"{Message} TrackingId:{Guid.NewGuid()}_G0, SystemTracker:{tracker}, Timestamp:{now.UtcDateTime.ToString("yyyy-MM-ddTHH:mm:ss", CultureInfo.InvariantCulture)}")))
        .ToString(SaveOptions.DisableFormatting);

    /// <summary>
    /// The detail names what the request held (its path, a query value), which may contain characters XML cannot carry
    /// (a NUL, a lone surrogate); those become U+FFFD so that the answer can be written at all.
    /// </summary>
    private static string XmlSafe(string text)
    {
        if (text.All(XmlConvert.IsXmlChar))
        {
            return text;
        }

        var safe = new StringBuilder(text.Length);
        for (var i = 0; i < text.Length; i++)
        {
            if (i + 1 < text.Length && XmlConvert.IsXmlSurrogatePair(text[i + 1], text[i]))
            {
                safe.Append(text, i++, 2);
            }
            else
            {
                safe.Append(XmlConvert.IsXmlChar(text[i]) ? text[i] : '\uFFFD');
            }
        }

        return safe.ToString();
    }
}
