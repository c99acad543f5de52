using System.Globalization;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using System.Text;

namespace DroneDelivery.Benchmarks.CosmosDb;

/// <summary>
/// Builds Cosmos DB gateway requests the way the SDK does (master-key signature, partition key
/// header), so the load generator measures the server rather than the SDK's client-side pipeline.
/// </summary>
internal sealed class SignedRequests(Uri endpoint, string accountKey)
{
    private readonly byte[] _key = Convert.FromBase64String(accountKey);

    public HttpRequestMessage PointRead(string database, string container, string id, string partitionKey)
    {
        var link = $"dbs/{database}/colls/{container}/docs/{id}";
        var request = new HttpRequestMessage(HttpMethod.Get, new Uri(endpoint, link));
        Sign(request, "get", "docs", link);
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-partitionkey", $"[\"{partitionKey}\"]");
        return request;
    }

    public HttpRequestMessage Create(string database, string container, string json, string partitionKey)
    {
        var link = $"dbs/{database}/colls/{container}";
        var request = new HttpRequestMessage(HttpMethod.Post, new Uri(endpoint, link + "/docs"))
        {
            Content = new StringContent(json, Encoding.UTF8, "application/json"),
        };
        Sign(request, "post", "docs", link);
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-partitionkey", $"[\"{partitionKey}\"]");
        return request;
    }

    public HttpRequestMessage Query(string database, string container, string queryJson, string partitionKey)
    {
        var link = $"dbs/{database}/colls/{container}";
        var request = new HttpRequestMessage(HttpMethod.Post, new Uri(endpoint, link + "/docs"))
        {
            Content = new StringContent(queryJson, Encoding.UTF8),
        };
        request.Content.Headers.ContentType = new MediaTypeHeaderValue("application/query+json");
        Sign(request, "post", "docs", link);
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-isquery", "True");
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-partitionkey", $"[\"{partitionKey}\"]");
        request.Headers.TryAddWithoutValidation("x-ms-max-item-count", "1000");
        return request;
    }

    /// <summary>
    /// A query without partition key or range, as the JavaScript SDK sends it first: the gateway serves
    /// it across the physical partitions; <paramref name="continuation"/> is the last page's, or null.
    /// </summary>
    public HttpRequestMessage CrossPartitionQuery(string database, string container, string queryJson, string? continuation, int maxItemCount)
    {
        var link = $"dbs/{database}/colls/{container}";
        var request = new HttpRequestMessage(HttpMethod.Post, new Uri(endpoint, link + "/docs"))
        {
            Content = new StringContent(queryJson, Encoding.UTF8),
        };
        request.Content.Headers.ContentType = new MediaTypeHeaderValue("application/query+json");
        Sign(request, "post", "docs", link);
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-isquery", "True");
        request.Headers.TryAddWithoutValidation("x-ms-documentdb-query-enablecrosspartition", "true");
        request.Headers.TryAddWithoutValidation("x-ms-max-item-count", maxItemCount.ToString(CultureInfo.InvariantCulture));
        if (continuation is not null)
        {
            request.Headers.TryAddWithoutValidation("x-ms-continuation", continuation);
        }

        return request;
    }

    private void Sign(HttpRequestMessage request, string verb, string resourceType, string link)
    {
        var date = DateTime.UtcNow.ToString("r", CultureInfo.InvariantCulture);
        var payload = $"{verb}\n{resourceType}\n{link}\n{date.ToLowerInvariant()}\n\n";
        var signature = Convert.ToBase64String(HMACSHA256.HashData(_key, Encoding.UTF8.GetBytes(payload)));
        request.Headers.TryAddWithoutValidation("authorization", Uri.EscapeDataString($"type=master&ver=1.0&sig={signature}"));
        request.Headers.TryAddWithoutValidation("x-ms-date", date);
        request.Headers.TryAddWithoutValidation("x-ms-version", "2020-07-15");
    }
}
