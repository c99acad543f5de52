using System.Diagnostics;
using System.Globalization;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>
/// Sits in the HttpClient the Cosmos SDK uses (Gateway mode) and makes every HTTP call a dependency
/// span and a counted, timed call — including each 429 and its retry, and each partition of a fan-out
/// query — attributed to the current <see cref="CosmosOperation"/>.
/// </summary>
public sealed class CosmosCallHandler(string databaseId) : DelegatingHandler
{
    protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
    {
        var call = CosmosCall.Classify(request);
        var operation = CosmosOperation.Current;
        using var activity = CosmosTelemetry.Source.StartActivity(
            call.Container is null ? call.Kind : $"{call.Kind} {call.Container}", ActivityKind.Client);
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag("db.system.name", "cosmosdb");
            activity.SetTag("db.namespace", databaseId);
            activity.SetTag("db.operation.name", call.Kind);
            activity.SetTag("db.collection.name", call.Container);
            activity.SetTag("server.address", request.RequestUri?.Host);
            activity.SetTag("server.port", request.RequestUri?.Port);
            if (request.Headers.TryGetValues("x-ms-documentdb-partitionkeyrangeid", out var ranges))
            {
                activity.SetTag(CosmosTelemetry.PartitionKeyRangeAttribute, ranges.FirstOrDefault());
            }
        }

        if (call.IsData)
        {
            operation?.CountCall();
        }

        var started = Stopwatch.GetTimestamp();
        var status = "error";
        try
        {
            var response = await base.SendAsync(request, cancellationToken).ConfigureAwait(false);
            status = ((int)response.StatusCode).ToString(CultureInfo.InvariantCulture);
            if (activity is { IsAllDataRequested: true })
            {
                activity.SetTag("http.response.status_code", (int)response.StatusCode);
                if (Header(response, "x-ms-request-charge") is { } charge
                    && double.TryParse(charge, NumberStyles.Float, CultureInfo.InvariantCulture, out var ru))
                {
                    activity.SetTag(CosmosTelemetry.RequestChargeAttribute, ru);
                }

                if (Header(response, "x-ms-substatus") is { } subStatus)
                {
                    activity.SetTag(CosmosTelemetry.SubStatusCodeAttribute, subStatus);
                }

                if (activity.GetTagItem(CosmosTelemetry.PartitionKeyRangeAttribute) is null
                    && Header(response, "x-ms-documentdb-partitionkeyrangeid") is { } range)
                {
                    activity.SetTag(CosmosTelemetry.PartitionKeyRangeAttribute, range);
                }

                if ((int)response.StatusCode >= 400 && response.StatusCode != System.Net.HttpStatusCode.NotModified)
                {
                    activity.SetStatus(ActivityStatusCode.Error, $"HTTP {(int)response.StatusCode}");
                }
            }

            return response;
        }
        catch (Exception e) when (activity is not null)
        {
            activity.SetStatus(ActivityStatusCode.Error, e.Message);
            activity.SetTag("error.type", e.GetType().FullName);
            throw;
        }
        finally
        {
            // The container tells apart the hops of a service that uses several (a metadata call has none).
            var tags = new TagList
            {
                { "db.collection.name", call.Container ?? "none" },
                { "db.operation.name", call.Kind },
                { "http.response.status_code", status },
            };
            CosmosTelemetry.CallDurations.Record(Stopwatch.GetElapsedTime(started).TotalSeconds, tags);
            tags.Add("operation", operation?.Name ?? "none");
            CosmosTelemetry.CallCounter.Add(1, tags);
        }
    }

    private static string? Header(HttpResponseMessage response, string name) =>
        response.Headers.TryGetValues(name, out var values) ? values.FirstOrDefault() : null;
}

/// <summary>What one HTTP call of the Cosmos SDK does, read from its method, path and headers.</summary>
public readonly record struct CosmosCall(string Kind, string? Container, bool IsData)
{
    /// <summary>
    /// Kinds: <c>query</c>, <c>query_plan</c>, <c>read_feed</c>, <c>create_item</c>, <c>upsert_item</c>,
    /// <c>read_item</c>, <c>replace_item</c>, <c>delete_item</c>, <c>patch_item</c> (data calls except
    /// query_plan), and metadata: <c>read_account</c>, <c>read_partition_key_ranges</c>, <c>*_database</c>,
    /// <c>*_container</c>, <c>*_throughput</c>.
    /// </summary>
    public static CosmosCall Classify(HttpRequestMessage request)
    {
        var path = request.RequestUri?.AbsolutePath.Trim('/') ?? string.Empty;
        var segments = path.Length == 0 ? [] : path.Split('/');
        var container = segments.Length >= 4 && segments[2] == "colls" ? Uri.UnescapeDataString(segments[3]) : null;
        if (segments.Length == 0)
        {
            return new CosmosCall("read_account", null, false);
        }

        // Resource paths alternate type/id: an odd count addresses a feed, an even count one resource.
        var isFeed = segments.Length % 2 == 1;
        var type = isFeed ? segments[^1] : segments[^2];
        var method = request.Method.Method;
        return type switch
        {
            "docs" when isFeed && method == "POST" && Flag(request, "x-ms-cosmos-is-query-plan-request") => new("query_plan", container, false),
            "docs" when isFeed && method == "POST" && (Flag(request, "x-ms-documentdb-isquery") || IsQueryContent(request)) => new("query", container, true),
            "docs" when isFeed && method == "POST" && Flag(request, "x-ms-documentdb-is-upsert") => new("upsert_item", container, true),
            "docs" when isFeed && method == "POST" => new("create_item", container, true),
            "docs" when isFeed => new("read_feed", container, true),
            "docs" => new(method switch
            {
                "GET" => "read_item",
                "PUT" => "replace_item",
                "DELETE" => "delete_item",
                "PATCH" => "patch_item",
                _ => method.ToLowerInvariant() + "_item",
            }, container, true),
            "pkranges" => new("read_partition_key_ranges", container, false),
            "colls" => new(Verb(method, isFeed) + "_container", container, false),
            "dbs" => new(Verb(method, isFeed) + "_database", null, false),
            "offers" => new(method == "PUT" ? "replace_throughput" : "read_throughput", null, false),
            _ => new(method.ToLowerInvariant() + "_" + type, container, false),
        };
    }

    private static string Verb(string method, bool isFeed) => method switch
    {
        "POST" when isFeed => "create",
        "GET" when isFeed => "list",
        "GET" => "read",
        "PUT" => "replace",
        "DELETE" => "delete",
        _ => method.ToLowerInvariant(),
    };

    private static bool Flag(HttpRequestMessage request, string header) =>
        request.Headers.TryGetValues(header, out var values) && values.Any(v => string.Equals(v, "true", StringComparison.OrdinalIgnoreCase));

    private static bool IsQueryContent(HttpRequestMessage request) =>
        request.Content?.Headers.ContentType?.MediaType == "application/query+json";
}
