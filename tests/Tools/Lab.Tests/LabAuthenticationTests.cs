using DroneDelivery.Security.Tokens;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The lab gives the public services the Authentication settings the chart renders for
/// <c>auth.mode: developmentIssuer</c> — the same names, the chart's values — with a key of its own,
/// and the backends none (the chart tests hold the whole environment to helm's render).
/// </summary>
public sealed class LabAuthenticationTests
{
    [Theory]
    [InlineData("gateway")]
    [InlineData("ingestion")]
    public void The_public_services_get_the_development_issuers_settings_from_the_charts_auth_values(string service)
    {
        var step = StepCatalog.Load()["A1"];
        var issuer = LocalDeployment.IssuerFor(step);

        var environment = Authentication(step, ServiceKind.All.Single(s => s.ValuesKey == service), issuer);

        Assert.Equal(
            ["Authentication__Audience", "Authentication__ClockSkew", "Authentication__Issuer", "Authentication__Mode", "Authentication__OwnerClaim", "Authentication__SigningKeys__0"],
            environment.Keys.Order(StringComparer.Ordinal));
        Assert.Equal("DevelopmentIssuer", environment["Authentication__Mode"]);
        Assert.Equal(step.Setting("auth.audience"), environment["Authentication__Audience"]);
        Assert.Equal(step.Setting("auth.developmentIssuer.issuer"), environment["Authentication__Issuer"]);
        Assert.Equal(step.Setting("auth.ownerClaim"), environment["Authentication__OwnerClaim"]);
        Assert.Equal(step.Setting("auth.clockSkew"), environment["Authentication__ClockSkew"]);
        Assert.Equal(issuer.SigningKey, environment["Authentication__SigningKeys__0"]);
        Assert.Equal(DevelopmentIssuer.KeyBytes, Convert.FromBase64String(environment["Authentication__SigningKeys__0"]).Length);
    }

    [Theory]
    [InlineData("workflow")]
    [InlineData("delivery")]
    [InlineData("package")]
    [InlineData("droneScheduler")]
    public void The_internal_services_get_no_Authentication_settings(string service)
    {
        var step = StepCatalog.Load()["A1"];

        Assert.Empty(Authentication(step, ServiceKind.All.Single(s => s.ValuesKey == service), LocalDeployment.IssuerFor(step)));
    }

    [Fact]
    public void Each_run_has_a_key_of_its_own()
    {
        var step = StepCatalog.Load()["B1"];

        Assert.NotEqual(LocalDeployment.IssuerFor(step).SigningKey, LocalDeployment.IssuerFor(step).SigningKey);
    }

    private static Dictionary<string, string> Authentication(Step step, ServiceKind service, DevelopmentIssuer issuer) =>
        ServiceEnvironment.Render(step.Values, service, new ServiceWiring(backend => $"http://127.0.0.1/{backend.Name}/", "cosmos", "servicebus", "redis", [issuer.SigningKey]))
            .Where(e => e.Key.StartsWith("Authentication__", StringComparison.Ordinal))
            .ToDictionary(e => e.Key, e => e.Value, StringComparer.Ordinal);
}
