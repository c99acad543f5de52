using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// The <c>$cbs</c> node: claims-based security put-token. SAS tokens are validated (key name, HMAC signature
/// against the configured key, expiry, resource covering the audience); JWTs cannot be validated locally and are refused.
/// </summary>
internal sealed class CbsNode(string keyName, string key, TimeProvider time)
{
    public void OnRequest(IncomingDelivery delivery, ConnectionState state)
    {
        if (!delivery.TryTakeRequest(out var request))
        {
            return;
        }

        var (status, description) = PutToken(request, state);
        var reply = state.FindReplyLink(request.Properties?.ReplyTo, ServiceBusAmqpNames.CbsNode);
        reply?.Send(Responses.For(request, new Dictionary<string, object?>
        {
            [ServiceBusAmqpNames.CbsStatusCodeKey] = status,
            [ServiceBusAmqpNames.CbsStatusDescriptionKey] = description,
        }, null));
    }

    /// <summary>Decides a put-token request: 202 with the audience authorised, or 400 / 401 saying what is wrong.</summary>
    internal (int Status, string Description) PutToken(AmqpMessage request, ConnectionState state)
    {
        var properties = request.ApplicationProperties;
        if (properties.Text(ServiceBusAmqpNames.CbsOperationKey) != ServiceBusAmqpNames.CbsPutToken)
        {
            return (400, "Only the put-token operation is supported.");
        }

        var audience = properties.Text(ServiceBusAmqpNames.CbsAudienceKey);
        var type = properties.Text(ServiceBusAmqpNames.CbsTokenTypeKey);
        if (audience is null || request.Body is not ValueBody { Value: string token })
        {
            return (400, "A put-token request needs a 'name' (audience) and a string token body.");
        }

        if (type == ServiceBusAmqpNames.JwtTokenType)
        {
            return (401, "The emulator validates shared access signatures only; JWT (Microsoft Entra ID) tokens cannot be validated locally.");
        }

        var sas = SharedAccessSignature.TryParse(token, out var problem);
        if (sas is null)
        {
            return (401, $"The token is not a shared access signature: {problem}.");
        }

        var audiencePath = PathOf(audience);
        if (sas.Refusal(keyName, key, time.GetUtcNow(), audiencePath) is { } refusal)
        {
            return (401, refusal);
        }

        state.Authorise(audiencePath, sas.ExpiresOn);
        return (202, "Accepted");
    }

    /// <summary>The entity path of an audience or resource URI (<c>sb://host/queue</c> → <c>queue</c>).</summary>
    public static string PathOf(string uriOrPath)
    {
        if (AbsoluteUri(uriOrPath) is { Scheme: "sb" or "amqp" or "amqps" or "http" or "https" } uri)
        {
            return Uri.UnescapeDataString(uri.AbsolutePath).Trim('/');
        }

        return uriOrPath.Trim('/');
    }

    /// <summary>
    /// The address as an absolute URI, or null. <see cref="Uri.TryCreate(string, UriKind, out Uri)"/> itself throws on
    /// some hostile addresses (an <see cref="IndexOutOfRangeException"/> for <c>//</c> followed by a right-to-left
    /// override, on .NET 10.0.12): such an address is no URI, and its link gets the protocol's not-found, not an internal error.
    /// </summary>
    private static Uri? AbsoluteUri(string text)
    {
        try
        {
            return Uri.TryCreate(text, UriKind.Absolute, out var uri) ? uri : null;
        }
        catch (IndexOutOfRangeException)
        {
            return null;
        }
    }
}
