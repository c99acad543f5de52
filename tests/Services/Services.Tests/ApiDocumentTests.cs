using System.Net;
using System.Text.Encodings.Web;
using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.LocalProcesses;
using DroneDelivery.Services.Tests.Infrastructure;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// Each service's running OpenAPI document equals the one checked in under <c>docs/api/</c>, so an API
/// change shows in review. Set <see cref="WriteVariable"/> to 1 to write the running documents there instead.
/// </summary>
[Collection(SystemCollection.Name)]
public sealed class ApiDocumentTests(SystemFixture system)
{
    public const string WriteVariable = "DRONEDELIVERY_WRITE_API_DOCS";

    private static readonly JsonSerializerOptions Indented = new() { WriteIndented = true, Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    [Theory]
    [InlineData("gateway")]
    [InlineData("ingestion")]
    [InlineData("delivery")]
    [InlineData("package")]
    [InlineData("dronescheduler")]
    public async Task A_service_publishes_the_checked_in_openapi_document(string service)
    {
        var response = await Service(service).Client.GetAsync("openapi/v1.json");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        var running = JsonNode.Parse(await response.Content.ReadAsStringAsync())!;
        var path = RepositoryLayout.InRepository("docs", "api", service + ".json");

        if (Environment.GetEnvironmentVariable(WriteVariable) == "1")
        {
            Directory.CreateDirectory(Path.GetDirectoryName(path)!);
            await File.WriteAllTextAsync(path, running.ToJsonString(Indented) + "\n");
        }

        var checkedIn = File.Exists(path) ? JsonNode.Parse(await File.ReadAllTextAsync(path)) : null;
        Assert.True(
            JsonNode.DeepEquals(checkedIn, running),
            $"docs/api/{service}.json is missing or differs from the running {service}'s /openapi/v1.json. If the API change is intended, " +
            $"regenerate with `{WriteVariable}=1 dotnet test tests/Services/Services.Tests --filter FullyQualifiedName~ApiDocumentTests`, review the diff and commit it.");
    }

    [Theory]
    [InlineData("gateway")]
    [InlineData("ingestion")]
    [InlineData("delivery")]
    [InlineData("package")]
    [InlineData("dronescheduler")]
    public async Task The_openapi_document_is_read_only_names_no_server_and_leaves_out_the_operational_endpoints(string service)
    {
        var client = Service(service).Client;
        using var request = new HttpRequestMessage(HttpMethod.Get, "openapi/v1.json");
        request.Headers.Host = "attacker.example";

        var response = await client.SendAsync(request);
        var post = await client.PostAsync("openapi/v1.json", new StringContent("{}"));
        var other = await client.GetAsync("openapi/v2.json");

        var document = await response.Content.ReadAsStringAsync();
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.DoesNotContain("attacker.example", document);
        Assert.Null(JsonNode.Parse(document)!["servers"]);
        var paths = JsonNode.Parse(document)!["paths"]!.AsObject().Select(p => p.Key).ToList();
        Assert.NotEmpty(paths);
        Assert.All(paths, p => Assert.StartsWith("/api/", p));
        Assert.Equal(HttpStatusCode.MethodNotAllowed, post.StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, other.StatusCode);
    }

    [Fact]
    public async Task Workflow_serves_no_api_and_so_no_openapi_document()
    {
        var response = await system.Workflow.Client.GetAsync("openapi/v1.json");

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    private ServiceApp Service(string name) => name switch
    {
        "gateway" => system.Gateway,
        "ingestion" => system.Ingestion,
        "delivery" => system.Delivery,
        "package" => system.Package,
        "dronescheduler" => system.DroneScheduler,
        _ => throw new ArgumentOutOfRangeException(nameof(name), name, null),
    };
}
