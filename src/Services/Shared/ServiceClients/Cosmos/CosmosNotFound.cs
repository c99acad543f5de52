using System.Net;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>
/// Tells a missing item (the caller's 404) from a missing container or database (a deployment fault,
/// which must not read as "not found").
/// </summary>
public static class CosmosNotFound
{
    /// <summary>Cosmos DB's substatus for "owner resource does not exist": the container or database is missing.</summary>
    public const int OwnerResourceNotFound = 1003;

    /// <summary>
    /// True when <paramref name="error"/> is a 404 for the item itself. A 404 without the owner-resource
    /// substatus is confirmed by reading the container (one metadata call, on not-found answers only).
    /// </summary>
    public static async Task<bool> IsMissingItemAsync(this Container container, CosmosException error, CancellationToken cancellationToken)
    {
        if (error.StatusCode != HttpStatusCode.NotFound || error.SubStatusCode == OwnerResourceNotFound)
        {
            return false;
        }

        try
        {
            await container.ReadContainerAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
            return true;
        }
        catch (CosmosException e) when (e.StatusCode == HttpStatusCode.NotFound)
        {
            return false;
        }
    }
}
