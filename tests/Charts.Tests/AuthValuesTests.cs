using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The auth values become the public services' Authentication settings (and only theirs): a development
/// issuer with a generated key in a Secret on kind, Microsoft Entra ID on AKS; bad values are refused at install.
/// </summary>
public sealed class AuthValuesTests
{
    private static IReadOnlyDictionary<string, string> Environment(Render render, string service) =>
        Render.Environment(render.Get("Deployment", service).Containers.Single());

    [Fact]
    public void By_default_the_public_services_trust_a_development_issuer_whose_key_the_chart_generates()
    {
        var render = Chart.Template(Chart.Defaults);
        var secret = render.Get("Secret", $"{Chart.ReleaseName}-development-issuer");
        var key = Convert.FromBase64String(secret.Body.Text("stringData", "signing-key")!);

        Assert.Equal(32, key.Length);
        foreach (var service in new[] { "gateway", "ingestion" })
        {
            var environment = Environment(render, service);
            Assert.Equal("DevelopmentIssuer", environment["Authentication__Mode"]);
            Assert.Equal("dronedelivery", environment["Authentication__Audience"]);
            Assert.Equal("dronedelivery-development", environment["Authentication__Issuer"]);
            Assert.Equal($"secret:{Chart.ReleaseName}-development-issuer/signing-key", environment["Authentication__SigningKeys__0"]);
            Assert.Equal($"secret?:{Chart.ReleaseName}-development-issuer/previous-signing-key", environment["Authentication__SigningKeys__1"]);
        }

        foreach (var service in new[] { "workflow", "delivery", "package", "dronescheduler" })
        {
            Assert.DoesNotContain(Environment(render, service).Keys, key => key.StartsWith("Authentication__", StringComparison.Ordinal));
        }
    }

    [Fact]
    public void A_secret_of_your_own_replaces_the_generated_one()
    {
        var render = Chart.Template(Chart.Defaults.With("own issuer secret", "--set", "auth.developmentIssuer.existingSecret=my-issuer"));

        Assert.DoesNotContain(render.OfKind("Secret"), s => s.Name.EndsWith("development-issuer", StringComparison.Ordinal));
        Assert.Equal("secret:my-issuer/signing-key", Environment(render, "gateway")["Authentication__SigningKeys__0"]);
    }

    [Fact]
    public void On_aks_the_public_services_trust_the_tenants_entra_id_and_may_reach_it()
    {
        var render = Chart.Template(Chart.Azure);
        var environment = Environment(render, "gateway");

        Assert.Equal("EntraId", environment["Authentication__Mode"]);
        Assert.Equal("https://login.microsoftonline.com/00000000-0000-0000-0000-000000000001/v2.0", environment["Authentication__Authority"]);
        Assert.Equal("00000000-0000-0000-0000-0000000000c1", environment["Authentication__ClientId"]);
        Assert.DoesNotContain(environment.Keys, key => key.StartsWith("Authentication__SigningKeys", StringComparison.Ordinal));
        Assert.DoesNotContain(render.OfKind("Secret"), s => s.Name.EndsWith("development-issuer", StringComparison.Ordinal));
    }

    [Fact]
    public void The_public_services_get_external_egress_for_the_issuers_keys_only_when_the_issuer_is_outside()
    {
        var kind = Chart.Template(Chart.Defaults);
        var entra = Chart.Template(Chart.Defaults.With("entra on kind",
            "--set", "auth.mode=entraId", "--set", "auth.entraId.tenantId=contoso.onmicrosoft.com", "--set", "auth.entraId.clientId=00000000-0000-0000-0000-0000000000c1"));

        static bool External(Render render, string service) =>
            render.Get("NetworkPolicy", service).Body.List("spec", "egress").Any(rule => rule.List("to").Any(peer => peer.Map("ipBlock") is not null));

        Assert.False(External(kind, "gateway"));
        Assert.True(External(entra, "gateway"));
        Assert.True(External(entra, "ingestion"));
        Assert.False(External(entra, "delivery"));
    }

    [Fact]
    public void Delivery_is_internal_reached_only_by_its_callers()
    {
        var render = Chart.Template(Chart.EverythingOn);
        var delivery = render.Get("NetworkPolicy", "delivery");
        var ingestion = render.Get("NetworkPolicy", "ingestion");

        var sources = delivery.Body.List("spec", "ingress").SelectMany(rule => rule.List("from")).ToList();
        Assert.DoesNotContain(sources, peer => peer.Map("namespaceSelector") is not null && peer.Map("podSelector") is null
            && peer.Text("namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") != "monitoring");
        Assert.Equal(
            ["gateway", "ingestion", "workflow"],
            sources.Select(peer => peer.Text("podSelector", "matchLabels", "app.kubernetes.io/name")).OfType<string>().Order(StringComparer.Ordinal));
        Assert.Contains(ingestion.Body.List("spec", "egress"), rule => rule.List("to").Any(peer => peer.Text("podSelector", "matchLabels", "app.kubernetes.io/name") == "delivery"));
        Assert.Equal("http://delivery/", Environment(render, "ingestion")["Backends__Delivery__BaseAddress"]);
    }

    [Fact]
    public void Cors_origins_become_one_variable_each()
    {
        var render = Chart.Template(Chart.Defaults.With("cors", "--set", "gateway.settings.Cors.AllowedOrigins={https://app.example.com,https://admin.example.com:8443}"));
        var environment = Environment(render, "gateway");

        Assert.Equal("https://app.example.com", environment["Cors__AllowedOrigins__0"]);
        Assert.Equal("https://admin.example.com:8443", environment["Cors__AllowedOrigins__1"]);
        Assert.DoesNotContain(Environment(render, "ingestion").Keys, key => key.StartsWith("Cors__", StringComparison.Ordinal));
    }

    [Theory]
    [InlineData("auth.mode=basic", "/auth/mode", "value must be one of")]
    [InlineData("auth.audience=", "/auth/audience", "minLength")]
    [InlineData("auth.authority=http://login.example.com/", "/auth/authority", "does not match pattern")]
    [InlineData("auth.ownerClaim=owner id", "/auth/ownerClaim", "does not match pattern")]
    [InlineData("auth.clockSkew=1m", "/auth/clockSkew", "does not match pattern")]
    [InlineData("auth.entraId.clientId=my-api", "/auth/entraId/clientId", "does not match pattern")]
    [InlineData("auth.entraId.clientId=api-00000000-0000-0000-0000-0000000000c1", "/auth/entraId/clientId", "does not match pattern")]
    [InlineData("auth.mode=entraId", "/auth/entraId/clientId", "does not match pattern")]
    [InlineData("auth.mode=openIdConnect", "/auth/authority", "minLength")]
    [InlineData("gateway.settings.RateLimiting.PermitLimit=0", "/gateway/settings/RateLimiting/PermitLimit", "minimum")]
    [InlineData("ingestion.settings.RateLimiting.Window=1s", "/ingestion/settings/RateLimiting/Window", "does not match pattern")]
    [InlineData("gateway.settings.Cors.AllowedOrigins[0]=https://app.example.com/path", "/gateway/settings/Cors/AllowedOrigins/0", "does not match pattern")]
    [InlineData("gateway.settings.Cors.AllowedOrigins[0]=*", "/gateway/settings/Cors/AllowedOrigins/0", "does not match pattern")]
    [InlineData("commonSettings.Hosting.MaxRequestHeadersTotalSize=100", "/commonSettings/Hosting/MaxRequestHeadersTotalSize", "minimum")]
    public void Schema_refuses_a_bad_auth_or_edge_value_naming_it(string assignment, string where, string why)
    {
        var error = Chart.TemplateError("--set", assignment);

        Assert.Contains($"at '{where}'", error);
        Assert.Contains(why, error);
    }

    [Fact]
    public void Entra_id_without_a_tenant_is_refused_naming_the_values()
    {
        var error = Chart.TemplateError("--set", "auth.mode=entraId", "--set", "auth.entraId.clientId=00000000-0000-0000-0000-0000000000c1");

        Assert.Contains("auth.mode entraId needs auth.entraId.tenantId (or azure.tenantId, or auth.authority)", error);
    }
}
