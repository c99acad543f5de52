using DroneDelivery.Amqp.Codec;
using DroneDelivery.Amqp.Messaging;
using DroneDelivery.ServiceBus.Primitives;

namespace DroneDelivery.ServiceBus.Transport;

/// <summary>
/// An entity's <c>$management</c> node, for a sender or a receiver: a request/response link opened on first use
/// and again after a failure; each request carries the operation, the server timeout and the link it concerns,
/// and the answer's <c>statusCode</c> decides between the response body and a <see cref="ServiceBusException"/>.
/// </summary>
internal sealed class ManagementClient(ConnectionScope scope, string entityPath)
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    private RequestResponseLink? _link;

    /// <summary>Runs an operation with the client's retry policy and returns the response body map (null for 204 No Content).</summary>
    public Task<Dictionary<object, object?>?> RequestAsync(string operation, Dictionary<object, object?> body, string? associatedLinkName, CancellationToken cancellationToken) =>
        scope.Retry.RunAsync<Dictionary<object, object?>?>(async (timeout, token) =>
        {
            var link = await GetLinkAsync(token).ConfigureAwait(false);
            var request = new AmqpMessage
            {
                ApplicationProperties = new Dictionary<string, object?>
                {
                    [ServiceBusAmqpNames.ManagementOperationKey] = operation,
                    [ServiceBusAmqpNames.ManagementServerTimeoutKey] = (uint)timeout.TotalMilliseconds,
                    [ServiceBusAmqpNames.AssociatedLinkNameKey] = associatedLinkName,
                },
                Body = new ValueBody(body),
            };
            var response = await link.RequestAsync(request, timeout, token).ConfigureAwait(false);
            var status = response.ApplicationProperties?.GetValueOrDefault(ServiceBusAmqpNames.ManagementStatusCodeKey) is int code ? code : 500;
            if (status == 204)
            {
                return null;
            }

            if (status is >= 200 and < 300)
            {
                return (response.Body as ValueBody)?.Value as Dictionary<object, object?> ?? [];
            }

            var description = response.ApplicationProperties?.GetValueOrDefault(ServiceBusAmqpNames.ManagementStatusDescriptionKey)?.ToString();
            var condition = response.ApplicationProperties?.GetValueOrDefault(ServiceBusAmqpNames.ManagementErrorConditionKey) switch
            {
                AmqpSymbol symbol => symbol.Value,
                string text => text,
                _ => null,
            };
            throw ServiceBusErrors.From(ServiceBusErrors.ManagementError(status, description, condition), entityPath);
        }, entityPath, cancellationToken);

    public async Task CloseAsync()
    {
        if (_link is { IsClosed: false } link)
        {
            await link.CloseAsync().ConfigureAwait(false);
        }
    }

    private async Task<RequestResponseLink> GetLinkAsync(CancellationToken cancellationToken)
    {
        if (_link is { IsClosed: false } open)
        {
            return open;
        }

        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (_link is { IsClosed: false } again)
            {
                return again;
            }

            var session = await scope.OpenSessionAsync(entityPath, cancellationToken).ConfigureAwait(false);
            _link = await RequestResponseLink.CreateAsync(session, entityPath + ServiceBusAmqpNames.ManagementNodeSuffix, new Dictionary<object, object?>
            {
                [ServiceBusAmqpNames.EntityTypeProperty] = ServiceBusAmqpNames.EntityTypeManagement,
                [ServiceBusAmqpNames.TimeoutProperty] = (uint)scope.Options.RetryOptions.TryTimeout.TotalMilliseconds,
            }, cancellationToken).ConfigureAwait(false);
            return _link;
        }
        finally
        {
            _gate.Release();
        }
    }
}
