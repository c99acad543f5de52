namespace DroneDelivery.ServiceBus;

/// <summary>The parts of a Service Bus connection string (same shape as the SDK's type of this name).</summary>
public sealed class ServiceBusConnectionStringProperties
{
    private ServiceBusConnectionStringProperties(Uri endpoint)
    {
        Endpoint = endpoint;
    }

    /// <summary>The namespace endpoint, e.g. <c>sb://contoso.servicebus.windows.net/</c>.</summary>
    public Uri Endpoint { get; }

    public string FullyQualifiedNamespace => Endpoint.Host;

    public string? EntityPath { get; private init; }

    public string? SharedAccessKeyName { get; private init; }

    public string? SharedAccessKey { get; private init; }

    public string? SharedAccessSignature { get; private init; }

    /// <summary>True for <c>UseDevelopmentEmulator=true</c>: plain AMQP (no TLS) on the endpoint's host and port.</summary>
    public bool UseDevelopmentEmulator { get; private init; }

    /// <summary>Parses <c>Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=...[;EntityPath=...][;UseDevelopmentEmulator=true]</c>.</summary>
    /// <exception cref="FormatException">A part is malformed or the endpoint / credentials are missing.</exception>
    public static ServiceBusConnectionStringProperties Parse(string connectionString)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(connectionString);
        string? endpoint = null, entityPath = null, keyName = null, key = null, signature = null;
        var emulator = false;
        foreach (var part in connectionString.Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            var equals = part.IndexOf('=', StringComparison.Ordinal);
            if (equals <= 0)
            {
                throw new FormatException($"The connection string part '{part}' is not of the form Name=Value.");
            }

            var name = part[..equals].Trim();
            var value = part[(equals + 1)..].Trim();
            switch (name.ToLowerInvariant())
            {
                case "endpoint": endpoint = value; break;
                case "entitypath": entityPath = value; break;
                case "sharedaccesskeyname": keyName = value; break;
                case "sharedaccesskey": key = value; break;
                case "sharedaccesssignature": signature = value; break;
                case "usedevelopmentemulator":
                    emulator = bool.TryParse(value, out var flag) ? flag : throw new FormatException($"UseDevelopmentEmulator must be true or false, not '{value}'.");
                    break;
            }
        }

        if (string.IsNullOrEmpty(endpoint))
        {
            throw new FormatException("The connection string has no Endpoint.");
        }

        if (!Uri.TryCreate(endpoint.Contains("://", StringComparison.Ordinal) ? endpoint : "sb://" + endpoint, UriKind.Absolute, out var uri))
        {
            throw new FormatException($"The connection string's Endpoint '{endpoint}' is not a URI.");
        }

        if (signature is null && (string.IsNullOrEmpty(keyName) || string.IsNullOrEmpty(key)))
        {
            throw new FormatException("The connection string needs SharedAccessKeyName and SharedAccessKey, or SharedAccessSignature.");
        }

        var builder = new UriBuilder(uri) { Path = "/", Query = string.Empty };
        if (builder.Scheme is not ("sb" or "amqp" or "amqps"))
        {
            builder.Scheme = "sb";
        }

        return new ServiceBusConnectionStringProperties(builder.Uri)
        {
            EntityPath = string.IsNullOrEmpty(entityPath) ? null : entityPath,
            SharedAccessKeyName = keyName,
            SharedAccessKey = key,
            SharedAccessSignature = signature,
            UseDevelopmentEmulator = emulator,
        };
    }
}
