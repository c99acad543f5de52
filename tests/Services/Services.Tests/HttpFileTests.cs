using System.Net;
using System.Text;
using System.Text.Json;
using DroneDelivery.Contracts;
using DroneDelivery.LocalProcesses;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Services.Tests.HttpFiles;
using DroneDelivery.Services.Tests.Infrastructure;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// The <c>.http</c> files under <c>docs/api/</c> against the running public services: every route the gateway
/// and Ingestion map (their endpoint data sources, less health, metrics and the API reference) has a request,
/// every request targets a route with its method, and every request, sent with a real address and a token of
/// the test issuer, succeeds.
/// </summary>
[Collection(SystemCollection.Name)]
public sealed class HttpFileTests(SystemFixture system)
{
    /// <summary>The files, by the public service whose address variable they use.</summary>
    private static readonly string[] Services = ["gateway", "ingestion"];

    private IReadOnlyList<ServiceRoute> Routes =>
    [
        .. HttpFileCoverage.ApiRoutes("gateway", system.Gateway.Services),
        .. HttpFileCoverage.ApiRoutes("ingestion", system.Ingestion.Services),
    ];

    [Fact]
    public void The_running_services_map_the_routes_of_their_api_documents()
    {
        // The checker's list of routes is the API: the same operations as the OpenAPI documents.
        var documented = Services.SelectMany(service =>
            JsonDocument.Parse(File.ReadAllText(RepositoryLayout.InRepository("docs", "api", service + ".json"))).RootElement.GetProperty("paths").EnumerateObject()
                .SelectMany(path => path.Value.EnumerateObject().Select(operation => new ServiceRoute(service, operation.Name.ToUpperInvariant(), path.Name))));

        Assert.Equal(documented.Select(r => r.ToString()).Order(StringComparer.Ordinal), Routes.Select(r => r.ToString()).Order(StringComparer.Ordinal));
    }

    [Fact]
    public void Every_route_has_a_request_and_every_request_targets_a_route()
    {
        var files = Load();

        Assert.Equal(5, Routes.Count);
        Assert.Empty(HttpFileCoverage.Problems(files, Routes));
    }

    [Fact]
    public void Without_one_of_its_requests_or_with_a_misspelt_path_the_files_fail_the_check()
    {
        var files = Load();
        var ingestion = files.Single(f => f.Path.EndsWith("ingestion.http", StringComparison.Ordinal));
        var text = File.ReadAllText(RepositoryLayout.InRepository(ingestion.Path.Split('/'))).ReplaceLineEndings("\n");
        var cancel = text.IndexOf("### CancelDeliveryRequest", StringComparison.Ordinal);
        Assert.True(cancel > 0, "docs/api/ingestion.http has no CancelDeliveryRequest");

        var removed = HttpFileCoverage.Problems([files[0], HttpFile.Parse(ingestion.Path, text[..cancel])], Routes);
        var misspelt = HttpFileCoverage.Problems([files[0], HttpFile.Parse(ingestion.Path, text.Replace("/api/deliveryrequests\n", "/api/deliveryrequest\n", StringComparison.Ordinal))], Routes);

        Assert.Equal(["No request of the .http files calls DELETE /api/deliveryrequests/{id} (ingestion)"], removed);
        Assert.Contains(misspelt, p => p.Contains("POST /api/deliveryrequest is no route of ingestion", StringComparison.Ordinal));
        Assert.Contains("No request of the .http files calls POST /api/deliveryrequests (ingestion)", misspelt);
    }

    [Fact]
    public async Task Every_request_sent_to_the_running_services_with_a_real_token_succeeds()
    {
        // The owner's own token (its scopes, not an application's roles): the files' owner must be the body's.
        var owner = DevelopmentCaller.ForOwner(NewId());
        var given = new Dictionary<string, string>
        {
            ["gateway"] = system.Gateway.BaseAddress.ToString().TrimEnd('/'),
            ["ingestion"] = system.Ingestion.BaseAddress.ToString().TrimEnd('/'),
            ["token"] = system.Ingestion.Issuer!.Issue(owner),
            ["owner"] = owner.Owner!,
        };
        var files = Load();
        var requests = files.SelectMany(f => f.Requests.Select(r => (File: f, Request: r))).ToList();
        Assert.All(files, f => Assert.All(given.Keys.Where(k => k != "gateway" && k != "ingestion"), k => Assert.True(f.Variables.ContainsKey(k), $"{f.Path} defines no @{k}")));
        using var client = new HttpClient { Timeout = TimeSpan.FromSeconds(60) };

        // First what needs no delivery: the request that creates one answers its id.
        foreach (var (file, request) in requests.Where(r => !NamesDelivery(r.Request)))
        {
            var (status, body) = await SendAsync(client, file, request, given);
            if (JsonDocument.Parse(body.Length > 0 ? body : "{}").RootElement is { ValueKind: JsonValueKind.Object } json && json.TryGetProperty("deliveryId", out var id))
            {
                given["deliveryId"] = id.GetString()!;
            }
        }

        Assert.True(given.ContainsKey("deliveryId"), "No request of the .http files answered a deliveryId (RequestDelivery's 202).");
        await system.Delivery.WaitForStatusAsync(given["deliveryId"], s => s.Stage == DeliveryStage.Created);

        // Then what names that delivery: reads before changes, each in file order.
        foreach (var (file, request) in requests.Where(r => NamesDelivery(r.Request)).OrderBy(r => r.Request.Method == "GET" ? 0 : 1))
        {
            await SendAsync(client, file, request, given);
        }
    }

    private static bool NamesDelivery(HttpFileRequest request) =>
        request.Texts.SelectMany(HttpFile.References).Contains("deliveryId", StringComparer.Ordinal);

    /// <summary>Sends one request with the variables substituted; it must succeed (2xx).</summary>
    private static async Task<(HttpStatusCode Status, string Body)> SendAsync(HttpClient client, HttpFile file, HttpFileRequest request, IReadOnlyDictionary<string, string> given)
    {
        var problems = new List<string>();
        var now = DateTimeOffset.UtcNow;
        using var message = new HttpRequestMessage(new HttpMethod(request.Method), file.Substitute(request.Url, given, now, problems, request.Where));
        var contentType = "application/json";
        foreach (var (name, value) in request.Headers)
        {
            var text = file.Substitute(value, given, now, problems, request.Where);
            if (name.Equals("Content-Type", StringComparison.OrdinalIgnoreCase))
            {
                contentType = text;
            }
            else
            {
                Assert.True(message.Headers.TryAddWithoutValidation(name, text), $"{request.Where}: the header {name} cannot be sent");
            }
        }

        if (request.Body is { } body)
        {
            message.Content = new StringContent(file.Substitute(body, given, now, problems, request.Where), Encoding.UTF8);
            message.Content.Headers.ContentType = System.Net.Http.Headers.MediaTypeHeaderValue.Parse(contentType);
        }

        Assert.Empty(problems);
        using var response = await client.SendAsync(message);
        var answer = await response.Content.ReadAsStringAsync();
        Assert.True(response.IsSuccessStatusCode, $"{request.Where}: {request.Method} {message.RequestUri} answered {(int)response.StatusCode} {answer}");
        return (response.StatusCode, answer);
    }

    private static List<HttpFile> Load() =>
        [.. Services.Select(service =>
        {
            var path = $"docs/api/{service}.http";
            return HttpFile.Parse(path, File.ReadAllText(RepositoryLayout.InRepository("docs", "api", service + ".http")));
        })];
}
