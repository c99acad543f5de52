using System.Collections.Concurrent;
using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.Contracts;
using DroneDelivery.LoadDriver.Cli;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using HttpResults = Microsoft.AspNetCore.Http.Results;
using YamlDotNet.RepresentationModel;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// loadtests/AzureLoadTesting: the Azure Load Testing configurations are what the service accepts and set
/// only what the script reads, with the load driver's shapes; and Locust, run here for real against
/// Kestrel servers standing in for the gateway, Ingestion and Entra ID, sends what the system accepts.
/// </summary>
public sealed partial class AzureLoadTestingTests
{
    private static readonly string Folder = Path.GetDirectoryName(LocustRun.Script)!;

    /// <summary>The keys of Azure Load Testing's test configuration (docs: "Configure a load test in YAML").</summary>
    private static readonly HashSet<string> ConfigurationKeys = new(StringComparer.Ordinal)
    {
        "version", "testId", "displayName", "description", "testType", "testPlan", "engineInstances", "configurationFiles",
        "failureCriteria", "autoStop", "properties", "zipArtifacts", "splitAllCSVs", "secrets", "env", "certificates",
        "keyVaultReferenceIdentity", "subnetId", "publicIPDisabled", "appComponents", "referenceIdentities", "regionalLoadTestConfig",
    };

    public static TheoryData<string> Configurations => new("invoice.yaml", "delivery-requests.yaml");

    [Theory]
    [MemberData(nameof(Configurations))]
    public void Each_configuration_is_a_Locust_test_as_Azure_Load_Testing_reads_it(string file)
    {
        var config = Load(file);

        Assert.All(config.Children.Keys.Select(k => k.ToString()), key => Assert.Contains(key, ConfigurationKeys));
        Assert.Equal("v0.1", Text(config, "version"));
        Assert.Matches(TestId(), Text(config, "testId"));
        Assert.Equal("Locust", Text(config, "testType"));
        Assert.True(File.Exists(Path.Combine(Folder, Text(config, "testPlan"))), $"{file}: testPlan {Text(config, "testPlan")} is not beside it");
        Assert.InRange(int.Parse(Text(config, "engineInstances"), System.Globalization.CultureInfo.InvariantCulture), 1, 45);
        Assert.True(Text(config, "description").Length <= 100, $"{file}: description over 100 characters");
        foreach (var criterion in ((YamlSequenceNode)config.Children[new YamlScalarNode("failureCriteria")]).Children)
        {
            Assert.Matches(FailureCriterion(), criterion.ToString());
        }

        var autoStop = (YamlMappingNode)config.Children[new YamlScalarNode("autoStop")];
        Assert.InRange(int.Parse(Text(autoStop, "errorPercentage"), System.Globalization.CultureInfo.InvariantCulture), 0, 100);
        Assert.InRange(int.Parse(Text(autoStop, "timeWindow"), System.Globalization.CultureInfo.InvariantCulture), 1, 3600);
        // What belongs to an environment comes at create time (docs/deploy-aks.md), never in the file.
        Assert.False(config.Children.ContainsKey(new YamlScalarNode("secrets")), $"{file} names a secret");
        Assert.DoesNotContain(Environment(config).Keys, name => name is "LOCUST_HOST" or "DRONEDELIVERY_TOKEN" || name.StartsWith("AZURE_", StringComparison.Ordinal));
    }

    [Theory]
    [MemberData(nameof(Configurations))]
    public void Every_variable_a_configuration_sets_is_one_the_script_reads(string file)
    {
        var read = ScriptSettings().ToHashSet(StringComparer.Ordinal);

        Assert.All(Environment(Load(file)).Keys, name => Assert.Contains(name, read));
    }

    [Fact]
    public void The_configurations_run_the_load_drivers_shapes_of_the_two_scenarios()
    {
        var invoice = Environment(Load("invoice.yaml"));
        var requests = Environment(Load("delivery-requests.yaml"));

        Assert.Equal("invoice", invoice["DRONEDELIVERY_SCENARIO"]);
        Assert.True(CliText.TryParseStep(invoice["DRONEDELIVERY_USERS"], out var users, out var error), error);
        Assert.Equal(new ClosedLoad(1, 40, TimeSpan.FromMinutes(8)), users);
        Assert.Equal("delivery-requests", requests["DRONEDELIVERY_SCENARIO"]);
        Assert.True(CliText.TryParseRate(requests["DRONEDELIVERY_RATE"], out var rate, out error), error);
        Assert.Equal(new OpenLoad(2, 250, TimeSpan.FromMinutes(8)), rate);
        Assert.Equal("1", requests["DRONEDELIVERY_POLL"]);
    }

    [Fact]
    public async Task Locust_ramps_invoice_users_step_by_step_and_every_request_carries_the_token()
    {
        var requests = new ConcurrentQueue<(string Owner, string? Year, string? Month, string? Authorization)>();
        await using var gateway = await LoopbackServer.StartAsync(app => app.MapGet("/api/invoices/{ownerId}", (string ownerId, HttpContext context) =>
        {
            requests.Enqueue((ownerId, context.Request.Query["year"], context.Request.Query["month"], context.Request.Headers.Authorization));
            return HttpResults.Ok(new { ownerId });
        }));

        var run = await LocustRun.StartAsync(gateway.BaseUri, new Dictionary<string, string>
        {
            ["DRONEDELIVERY_SCENARIO"] = "invoice",
            ["DRONEDELIVERY_USERS"] = "1:3:3s",
            ["DRONEDELIVERY_OWNERS"] = "20",
            ["DRONEDELIVERY_YEAR"] = "2025",
            ["DRONEDELIVERY_MONTHS"] = "2-3",
            ["DRONEDELIVERY_TOKEN"] = "operator-token",
        });

        Assert.True(run.ExitCode == 0, run.Output);
        Assert.Equal(requests.Count, run["GET /api/invoices/{ownerId}"].Requests);
        Assert.Equal(0, run["GET /api/invoices/{ownerId}"].Failures);
        Assert.True(requests.Count > 10, $"only {requests.Count} requests");
        Assert.All(requests, r => Assert.Matches(@"^owner-00(0\d|1\d)$", r.Owner));
        Assert.All(requests, r => Assert.Equal("2025", r.Year));
        Assert.All(requests, r => Assert.Contains(r.Month, new[] { "2", "3" }));
        Assert.All(requests, r => Assert.Equal("Bearer operator-token", r.Authorization));
        // 1 → 3 users over 3 s: one second at each count (a tick late on a busy machine may skip one), then the run ends.
        Assert.Equal(1, run.UserCounts[0]);
        Assert.Equal(3, run.UserCounts[^1]);
        Assert.Equal(run.UserCounts.Order(), run.UserCounts);
    }

    [Fact]
    public async Task Locust_sends_valid_delivery_requests_at_the_ramping_rate_and_follows_each_to_its_delivery()
    {
        var accepted = new ConcurrentDictionary<string, int>(StringComparer.Ordinal);
        var invalid = new ConcurrentQueue<string>();
        await using var ingestion = await LoopbackServer.StartAsync(app =>
        {
            app.MapPost("/api/deliveryrequests", async (HttpContext context) =>
            {
                var request = await JsonSerializer.DeserializeAsync<DeliveryRequest>(context.Request.Body, ContractJson.Options);
                var errors = new FieldErrors();
                if (request?.Validate(errors) is null)
                {
                    invalid.Enqueue(JsonSerializer.Serialize(request, ContractJson.Options));
                    return HttpResults.BadRequest();
                }

                var id = Guid.NewGuid().ToString("N");
                accepted[id] = 0;
                return HttpResults.Accepted($"/api/deliveries/{id}/status");
            });
            // The workflow has not created the delivery at the first poll; it has by the second.
            app.MapGet("/api/deliveries/{id}/status", (string id) =>
                accepted.AddOrUpdate(id, _ => int.MaxValue, (_, polls) => polls + 1) is >= 2 and < int.MaxValue ? HttpResults.Ok(new { stage = "Created" }) : HttpResults.NotFound());
        });

        var run = await LocustRun.StartAsync(ingestion.BaseUri, new Dictionary<string, string>
        {
            ["DRONEDELIVERY_SCENARIO"] = "delivery-requests",
            ["DRONEDELIVERY_RATE"] = "2:6:4s",
            ["DRONEDELIVERY_POLL"] = "1",
            ["DRONEDELIVERY_POLL_MAX_WAIT"] = "5s",
            ["DRONEDELIVERY_TOKEN"] = "operator-token",
        });

        Assert.True(run.ExitCode == 0, run.Output);
        Assert.Empty(invalid);
        // 2 → 6 requests/s over 4 s: about 16 arrivals, one user per request/s; then none while the last complete.
        Assert.InRange(accepted.Count, 12, 20);
        Assert.Equal(2, run.UserCounts[0]);
        Assert.InRange(run.UserCounts[^2], 5, 6);
        Assert.Equal(run.UserCounts.Take(run.UserCounts.Count - 1).Order(), run.UserCounts.Take(run.UserCounts.Count - 1));
        Assert.Equal(0, run.UserCounts[^1]);
        Assert.Equal(accepted.Count, run["POST /api/deliveryrequests"].Requests);
        Assert.Equal(accepted.Count, run["delivery completed"].Requests);
        Assert.Equal(0, run["delivery completed"].Failures);
    }

    [Fact]
    public async Task Locust_gets_the_client_apps_token_once_with_client_credentials_and_sends_it()
    {
        var tokenRequests = new ConcurrentQueue<IFormCollection>();
        var authorizations = new ConcurrentQueue<string?>();
        await using var server = await LoopbackServer.StartAsync(app =>
        {
            app.MapPost("/{tenant}/oauth2/v2.0/token", async (string tenant, HttpContext context) =>
            {
                var form = await context.Request.ReadFormAsync();
                tokenRequests.Enqueue(form);
                return tenant == "tenant-1" ? HttpResults.Json(new { access_token = "entra-token", expires_in = 3599, token_type = "Bearer" }) : HttpResults.NotFound();
            });
            app.MapGet("/api/invoices/{ownerId}", (HttpContext context) =>
            {
                authorizations.Enqueue(context.Request.Headers.Authorization);
                return HttpResults.Ok();
            });
        });

        var run = await LocustRun.StartAsync(server.BaseUri, ClientCredentials(server.BaseUri));

        Assert.True(run.ExitCode == 0, run.Output);
        var token = Assert.Single(tokenRequests);
        Assert.Equal("client_credentials", token["grant_type"]);
        Assert.Equal("client-1", token["client_id"]);
        Assert.Equal("secret-1", token["client_secret"]);
        Assert.Equal("api://dronedelivery-api/.default", token["scope"]);
        Assert.NotEmpty(authorizations);
        Assert.All(authorizations, a => Assert.Equal("Bearer entra-token", a));
    }

    [Fact]
    public async Task A_refused_client_secret_stops_the_run_before_any_load()
    {
        var invoices = 0;
        await using var server = await LoopbackServer.StartAsync(app =>
        {
            app.MapPost("/{tenant}/oauth2/v2.0/token", () => HttpResults.Json(new { error = "invalid_client" }, statusCode: 401));
            app.MapGet("/api/invoices/{ownerId}", () =>
            {
                Interlocked.Increment(ref invoices);
                return HttpResults.Ok();
            });
        });

        var run = await LocustRun.StartAsync(server.BaseUri, ClientCredentials(server.BaseUri));

        Assert.NotEqual(0, run.ExitCode);
        Assert.Equal(0, invoices);
        Assert.Contains("invalid_client", run.Output, StringComparison.Ordinal);
    }

    private static Dictionary<string, string> ClientCredentials(Uri authority) => new()
    {
        ["DRONEDELIVERY_SCENARIO"] = "invoice",
        ["DRONEDELIVERY_USERS"] = "2:2:2s",
        ["DRONEDELIVERY_TOKEN_SCOPE"] = "api://dronedelivery-api/.default",
        ["AZURE_TENANT_ID"] = "tenant-1",
        ["AZURE_CLIENT_ID"] = "client-1",
        ["AZURE_CLIENT_SECRET"] = "secret-1",
        ["AZURE_AUTHORITY_HOST"] = authority.AbsoluteUri,
    };

    private static YamlMappingNode Load(string file)
    {
        var stream = new YamlStream();
        using var reader = new StringReader(File.ReadAllText(Path.Combine(Folder, file)));
        stream.Load(reader);
        return (YamlMappingNode)stream.Documents.Single().RootNode;
    }

    private static string Text(YamlMappingNode node, string key) =>
        node.Children.TryGetValue(new YamlScalarNode(key), out var value) ? value.ToString() : throw new InvalidOperationException($"no '{key}'");

    private static Dictionary<string, string> Environment(YamlMappingNode config) =>
        ((YamlSequenceNode)config.Children[new YamlScalarNode("env")]).Children.Cast<YamlMappingNode>()
            .ToDictionary(e => Text(e, "name"), e => Text(e, "value"), StringComparer.Ordinal);

    /// <summary>The variables the script reads: every <c>setting("NAME"</c> in it.</summary>
    private static IEnumerable<string> ScriptSettings() =>
        ScriptSetting().Matches(File.ReadAllText(LocustRun.Script)).Select(m => m.Groups[1].Value).Distinct();

    [GeneratedRegex(@"^[a-z0-9_-]{2,50}$")]
    private static partial Regex TestId();

    // Azure Load Testing's client metrics: [request: ]aggregate(metric) condition value.
    [GeneratedRegex(@"^([^:]+: ?)?(avg|min|max|p50|p90|p95|p99|percentage|count)\((response_time_ms|latency|error|requests_per_sec|requests)\) ?[<>] ?\d+(\.\d+)?$")]
    private static partial Regex FailureCriterion();

    [GeneratedRegex(@"setting\(""([A-Z_]+)""")]
    private static partial Regex ScriptSetting();
}
