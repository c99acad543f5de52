using System.Net;
using System.Text.Json.Nodes;
using System.Text.RegularExpressions;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.Services.Tests.Infrastructure;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// The public services' API reference (<c>ApiReference:Enabled</c>): the OpenAPI document and the Scalar page
/// are served in Development, and elsewhere only when enabled — then anonymously, from the service itself
/// (no CDN), offering the document's bearer scheme, while the API still wants its token.
/// </summary>
[Collection(SystemCollection.Name)]
public sealed partial class ApiReferenceTests(SystemFixture system)
{
    /// <summary>What the reference consists of: the page, its redirect, one of its scripts, and the document.</summary>
    private static readonly string[] ReferencePaths = ["scalar/v1", "scalar", "scalar/scalar.js", "openapi/v1.json"];

    public static TheoryData<string, string?> PublicServicesNotEnabled => new()
    {
        { "gateway", null },
        { "gateway", "false" },
        { "ingestion", null },
        { "ingestion", "false" },
    };

    public static TheoryData<string> PublicServices => ["gateway", "ingestion"];

    [Theory]
    [MemberData(nameof(PublicServicesNotEnabled))]
    public async Task In_production_neither_the_page_nor_the_document_exists_unless_enabled(string service, string? enabled)
    {
        await using var app = await StartAsync(service, enabled, "Production");
        var anonymous = app.ClientAs(null);

        foreach (var path in ReferencePaths)
        {
            // With a valid token: 404. Without one: 401, as for any path the service does not serve.
            using var withToken = await app.Client.GetAsync(path);
            using var withoutToken = await anonymous.GetAsync(path);
            Assert.True(withToken.StatusCode == HttpStatusCode.NotFound, $"{service} {path} with a token: {withToken.StatusCode}");
            Assert.True(withoutToken.StatusCode == HttpStatusCode.Unauthorized, $"{service} {path} without a token: {withoutToken.StatusCode}");
        }

        Assert.Contains("Setting ApiReference:Enabled = False", app.Logs.Messages);
    }

    [Theory]
    [MemberData(nameof(PublicServices))]
    public async Task Enabled_in_production_the_page_and_the_document_are_anonymous_and_the_api_still_wants_a_token(string service)
    {
        await using var app = await StartAsync(service, "true", "Production");
        var anonymous = app.ClientAs(null);

        using var page = await anonymous.GetAsync(ApiReference.PagePath.TrimStart('/'));
        using var noRedirects = new HttpClient(new HttpClientHandler { AllowAutoRedirect = false }) { BaseAddress = app.BaseAddress };
        using var redirect = await noRedirects.GetAsync("scalar");
        using var document = await anonymous.GetAsync("openapi/v1.json");
        using var api = service == "gateway"
            ? await anonymous.GetAsync("api/invoices/owner-0001?year=2026&month=3")
            : await anonymous.PostAsync("api/deliveryrequests", new StringContent("{}", System.Text.Encoding.UTF8, "application/json"));
        using var post = await app.Client.PostAsync(ApiReference.PagePath.TrimStart('/'), new StringContent(string.Empty));

        Assert.Equal(HttpStatusCode.OK, page.StatusCode);
        Assert.Equal("text/html", page.Content.Headers.ContentType?.MediaType);
        Assert.Equal(HttpStatusCode.Redirect, redirect.StatusCode);
        Assert.Equal(HttpStatusCode.OK, document.StatusCode);
        Assert.Equal(HttpStatusCode.Unauthorized, api.StatusCode);
        Assert.Equal(HttpStatusCode.MethodNotAllowed, post.StatusCode);
        Assert.Contains("Setting ApiReference:Enabled = True", app.Logs.Messages);
    }

    [Theory]
    [MemberData(nameof(PublicServices))]
    public async Task In_development_the_page_and_the_document_are_served_without_the_setting(string service)
    {
        await using var app = await StartAsync(service, null, "Development");
        var anonymous = app.ClientAs(null);

        foreach (var path in ReferencePaths)
        {
            using var response = await anonymous.GetAsync(path);
            Assert.True(response.StatusCode == HttpStatusCode.OK, $"{service} {path} in Development: {response.StatusCode}");
        }
    }

    [Theory]
    [MemberData(nameof(PublicServices))]
    public async Task The_page_loads_everything_from_the_service_and_offers_the_documents_bearer_scheme(string service)
    {
        var app = service == "gateway" ? system.Gateway : system.Ingestion;
        var anonymous = app.ClientAs(null);
        var pageUri = new Uri(app.BaseAddress, ApiReference.PagePath.TrimStart('/'));

        var html = await anonymous.GetStringAsync(pageUri);
        var document = JsonNode.Parse(await anonymous.GetStringAsync("openapi/v1.json"))!;

        // Offline: no absolute URL at all (no CDN, no web fonts), and every script the page names is the service's.
        Assert.DoesNotContain("://", html);
        var scripts = Script().Matches(html).Select(m => m.Groups["src"].Value).ToList();
        Assert.NotEmpty(scripts);
        foreach (var script in scripts)
        {
            using var response = await anonymous.GetAsync(new Uri(pageUri, script));
            Assert.True(response.StatusCode == HttpStatusCode.OK, $"{script}: {response.StatusCode}");
            Assert.Equal("text/javascript", response.Content.Headers.ContentType?.MediaType);
            Assert.True((await response.Content.ReadAsByteArrayAsync()).Length > 0, $"{script} is empty");
        }

        // The configuration the page starts Scalar with: the document's own bearer scheme, preferred and the only
        // one offered; no web fonts, no telemetry, no proxy the requests and their tokens would pass through.
        var configuration = JsonNode.Parse(Configuration().Match(html).Groups["json"].Value)!;
        Assert.NotNull(document["components"]!["securitySchemes"]![EdgeSecurityExtensions.SecuritySchemeName]);
        Assert.Equal(EdgeSecurityExtensions.SecuritySchemeName, configuration["authentication"]!["preferredSecurityScheme"]![0]!.GetValue<string>());
        Assert.Equal([EdgeSecurityExtensions.SecuritySchemeName], configuration["authentication"]!["allowedSecuritySchemes"]!.AsArray().Select(n => n!.GetValue<string>()));
        Assert.False(configuration["withDefaultFonts"]!.GetValue<bool>());
        Assert.False(configuration["telemetry"]!.GetValue<bool>());
        Assert.Null(configuration["proxyUrl"]);
        var source = configuration["sources"]!.AsArray().Single()!["url"]!.GetValue<string>();
        Assert.Equal("openapi/v1.json", source);
    }

    [Theory]
    [InlineData("ApiReference:Enabled", "yes", "'ApiReference:Enabled'")]
    [InlineData("ApiReference:Enable", "true", "Enable")]
    public Task A_bad_api_reference_setting_stops_the_service_naming_it(string key, string value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Gateway, new() { [key] = value }, expected);

    /// <summary>A public service of the tests' own, in <paramref name="environment"/>, with <c>ApiReference:Enabled</c> when given.</summary>
    private async Task<ServiceApp> StartAsync(string service, string? enabled, string environment)
    {
        var settings = new Dictionary<string, string?>();
        if (enabled is not null)
        {
            settings[SystemFixture.ApiReferenceEnabled] = enabled;
        }

        if (service == "ingestion")
        {
            settings["ServiceBus:ConnectionString"] = system.ServiceBus.ConnectionString;
            settings["ServiceBus:QueueName"] = SystemFixture.MainQueue;
            settings["Backends:Delivery:BaseAddress"] = system.Delivery.BaseAddress.ToString();
        }

        return await ServiceApp.StartAsync(service == "gateway" ? Definitions.Gateway : Definitions.Ingestion, settings, environment: environment);
    }

    [GeneratedRegex("""<script[^>]*\ssrc="(?<src>[^"]+)"[^>]*>""")]
    private static partial Regex Script();

    [GeneratedRegex(@"initialize\(\s*'[^']*',\s*(?:true|false),\s*(?<json>\{.*\}),\s*'[^']*'\s*\)", RegexOptions.Singleline)]
    private static partial Regex Configuration();
}
