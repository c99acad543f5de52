using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// <c>&lt;gateway|ingestion&gt;.settings.ApiReference.Enabled</c> becomes that public service's
/// <c>ApiReference__Enabled</c> (the OpenAPI document and the API reference page): off by default, on for the
/// service whose value says so, and nothing but a boolean is accepted.
/// </summary>
public sealed class ApiReferenceValuesTests
{
    private static IReadOnlyDictionary<string, string> Environment(Render render, string service) =>
        Render.Environment(render.Get("Deployment", service).Containers.Single());

    [Fact]
    public void By_default_neither_public_service_serves_its_api_reference_and_the_internal_ones_have_no_such_setting()
    {
        var render = Chart.Template(Chart.Defaults);

        Assert.Equal("false", Environment(render, "gateway")["ApiReference__Enabled"]);
        Assert.Equal("false", Environment(render, "ingestion")["ApiReference__Enabled"]);
        foreach (var service in new[] { "workflow", "delivery", "package", "dronescheduler" })
        {
            Assert.DoesNotContain(Environment(render, service).Keys, key => key.StartsWith("ApiReference__", StringComparison.Ordinal));
        }
    }

    [Theory]
    [InlineData("gateway", "ingestion")]
    [InlineData("ingestion", "gateway")]
    public void The_value_enables_the_api_reference_of_its_service_only(string service, string other)
    {
        var render = Chart.Template(Chart.Defaults.With($"{service} api reference", "--set", $"{service}.settings.ApiReference.Enabled=true"));

        Assert.Equal("true", Environment(render, service)["ApiReference__Enabled"]);
        Assert.Equal("false", Environment(render, other)["ApiReference__Enabled"]);
    }

    [Theory]
    [InlineData("--set-string", "gateway.settings.ApiReference.Enabled=yes", "/gateway/settings/ApiReference/Enabled", "boolean")]
    [InlineData("--set", "ingestion.settings.ApiReference.Enable=true", "/ingestion/settings/ApiReference", "Enable")]
    [InlineData("--set", "workflow.settings.ApiReference.Enabled=true", "/workflow/settings", "ApiReference")]
    public void Schema_refuses_anything_but_a_boolean_on_a_public_service(string option, string assignment, string where, string why)
    {
        var error = Chart.TemplateError(option, assignment);

        Assert.Contains($"at '{where}'", error);
        Assert.Contains(why, error);
    }
}
