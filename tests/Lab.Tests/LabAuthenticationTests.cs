using DroneDelivery.Access;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The lab gives the public services the Authentication settings the chart renders for
/// <c>auth.mode: developmentIssuer</c> — the same names, the chart's values — with a key of its own.
/// </summary>
public sealed class LabAuthenticationTests
{
    [Fact]
    public void The_public_services_get_the_development_issuers_settings_from_the_charts_auth_values()
    {
        var step = StepCatalog.Load()["A1"];
        var issuer = LocalDeployment.IssuerFor(step);

        var environment = LocalDeployment.AuthenticationEnvironment(issuer, step);

        Assert.Equal(
            ["Authentication__Audience", "Authentication__ClockSkew", "Authentication__Issuer", "Authentication__Mode", "Authentication__OwnerClaim", "Authentication__SigningKeys__0"],
            environment.Keys.Order(StringComparer.Ordinal));
        Assert.Equal("DevelopmentIssuer", environment["Authentication__Mode"]);
        Assert.Equal(step.Setting("auth.audience"), environment["Authentication__Audience"]);
        Assert.Equal(step.Setting("auth.developmentIssuer.issuer"), environment["Authentication__Issuer"]);
        Assert.Equal(step.Setting("auth.ownerClaim"), environment["Authentication__OwnerClaim"]);
        Assert.Equal(step.Setting("auth.clockSkew"), environment["Authentication__ClockSkew"]);
        Assert.Equal(DevelopmentIssuer.KeyBytes, Convert.FromBase64String(environment["Authentication__SigningKeys__0"]).Length);
    }

    [Fact]
    public void Each_run_has_a_key_of_its_own()
    {
        var step = StepCatalog.Load()["B1"];

        Assert.NotEqual(LocalDeployment.IssuerFor(step).SigningKey, LocalDeployment.IssuerFor(step).SigningKey);
    }
}
