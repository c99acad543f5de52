using System.Text.Json;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalSystem;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The Bicep templates in infra/ compile and lint clean with the real Bicep CLI, so
/// <c>az deployment group create</c> gets past compilation before it creates anything.
/// </summary>
public sealed class InfrastructureTests
{
    private static readonly string Infra = RepositoryLayout.InRepository("infra");

    public static TheoryData<string> BicepFiles()
    {
        var files = new TheoryData<string>();
        foreach (var file in Directory.EnumerateFiles(Infra, "*.bicep*", SearchOption.AllDirectories).Order(StringComparer.Ordinal))
        {
            files.Add(Path.GetRelativePath(Infra, file));
        }

        return files;
    }

    [Theory]
    [MemberData(nameof(BicepFiles))]
    public void Every_template_and_parameter_file_compiles_without_errors_or_warnings(string file)
    {
        var command = file.EndsWith(".bicepparam", StringComparison.Ordinal) ? "build-params" : "build";

        var result = ExternalTool.Run(ExternalTool.Bicep, [command, file, "--stdout"], Infra);

        Assert.True(result.ExitCode == 0, result.Describe());
        Assert.DoesNotContain(": Warning ", result.StandardError, StringComparison.Ordinal);
        Assert.DoesNotContain(": Error ", result.StandardError, StringComparison.Ordinal);
    }

    [Theory]
    [MemberData(nameof(BicepFiles))]
    public void Every_template_and_parameter_file_passes_the_linter(string file)
    {
        var result = ExternalTool.Run(ExternalTool.Bicep, ["lint", file], Infra);

        Assert.True(result.ExitCode == 0, result.Describe());
        Assert.DoesNotContain(": Warning ", result.StandardError + result.StandardOutput, StringComparison.Ordinal);
        Assert.DoesNotContain(": Error ", result.StandardError + result.StandardOutput, StringComparison.Ordinal);
    }

    [Fact]
    public void Cosmos_role_assignments_are_written_one_at_a_time()
    {
        // The account serialises role-assignment writes; parallel ones fail a first deployment.
        var arm = Compile("modules/cosmos.bicep");

        var assignments = arm.GetProperty("resources").EnumerateArray()
            .Single(r => r.GetProperty("type").GetString() == "Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments");
        var copy = assignments.GetProperty("copy");
        Assert.Equal("serial", copy.GetProperty("mode").GetString());
        Assert.Equal(1, copy.GetProperty("batchSize").GetInt32());
    }

    [Fact]
    public void The_deployment_outputs_a_workload_identity_client_id_for_every_service_account()
    {
        var arm = Compile("main.bicep");

        // The output is keyed by service name from the identities module's per-service list.
        var clientIds = arm.GetProperty("outputs").GetProperty("clientIds");
        Assert.Equal("object", clientIds.GetProperty("type").GetString());
        Assert.Contains("serviceIdentities", clientIds.GetProperty("value").GetString(), StringComparison.Ordinal);
        var services = Compile("modules/identities.bicep").GetProperty("parameters").GetProperty("services")
            .GetProperty("defaultValue").EnumerateArray().Select(s => s.GetString()).ToList();
        Assert.Equal(["gateway", "ingestion", "workflow", "delivery", "package", "dronescheduler"], services);
    }

    private static JsonElement Compile(string file)
    {
        var result = ExternalTool.Run(ExternalTool.Bicep, ["build", file, "--stdout"], Infra);
        Assert.True(result.ExitCode == 0, result.Describe());
        return JsonDocument.Parse(result.StandardOutput).RootElement.Clone();
    }
}
