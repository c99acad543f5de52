using System.Text;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>What a client offers during SASL negotiation: a mechanism name and its initial response.</summary>
public sealed record SaslProfile(string Mechanism, byte[]? InitialResponse = null)
{
    /// <summary>Azure Service Bus's mechanism: anonymous at the SASL layer, authorised later by claims-based security (CBS).</summary>
    public static SaslProfile MsSbCbs { get; } = new(SaslMechanism.MsSbCbsName);

    public static SaslProfile Anonymous { get; } = new(SaslMechanism.AnonymousName);

    /// <summary>PLAIN (RFC 4616): authorisation id empty, then user name and password separated by NUL.</summary>
    public static SaslProfile Plain(string user, string password) =>
        new(SaslMechanism.PlainName, Encoding.UTF8.GetBytes($"\0{user}\0{password}"));
}

/// <summary>A mechanism a listener offers, with the check it applies to the client's initial response.</summary>
public sealed record SaslMechanism(string Name, Func<byte[]?, bool> Authenticate)
{
    public const string AnonymousName = "ANONYMOUS";
    public const string PlainName = "PLAIN";
    public const string MsSbCbsName = "MSSBCBS";

    public static SaslMechanism Anonymous { get; } = new(AnonymousName, _ => true);

    /// <summary>Accepts the connection at the SASL layer; the client must then authorise over <c>$cbs</c>.</summary>
    public static SaslMechanism MsSbCbs { get; } = new(MsSbCbsName, _ => true);

    public static SaslMechanism Plain(Func<string, string, bool> validate) => new(PlainName, response =>
    {
        if (response is null)
        {
            return false;
        }

        var parts = Encoding.UTF8.GetString(response).Split('\0');
        return parts.Length == 3 && validate(parts[1], parts[2]);
    });

    internal AmqpSymbol Symbol => new(Name);
}
