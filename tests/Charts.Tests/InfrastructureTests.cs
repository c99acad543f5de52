using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

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
    public void Every_template_and_parameter_file_compiles_and_passes_the_linter_without_errors_or_warnings(string file)
    {
        var result = Build(file);

        Assert.True(result.ExitCode == 0, result.Describe());
        Assert.DoesNotContain(": Warning ", result.StandardError, StringComparison.Ordinal);
        Assert.DoesNotContain(": Error ", result.StandardError, StringComparison.Ordinal);
    }

    [Fact]
    public void A_build_reports_the_linters_findings()
    {
        // What the test above rests on: a build runs the linter. An unused parameter is a linter rule, not a compile error.
        var directory = Directory.CreateTempSubdirectory("bicep-lint-").FullName;
        try
        {
            File.WriteAllText(Path.Combine(directory, "unused.bicep"), "param unusedThing string = 'x'\noutput o string = 'y'\n");

            var result = ExternalTool.Run(ExternalTool.Bicep, ["build", "unused.bicep", "--stdout"], directory);

            Assert.True(result.ExitCode == 0, result.Describe());
            Assert.Contains(": Warning no-unused-params: ", result.StandardError, StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }

    [Fact]
    public void Cosmos_role_assignments_are_written_one_at_a_time()
    {
        // The account serialises role-assignment writes; parallel ones fail a first deployment.
        var arm = Compile("modules/cosmos.bicep");

        var assignments = Resources(arm)
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

    [Fact]
    public void AKS_picks_its_default_Kubernetes_version_unless_one_is_given()
    {
        // A pinned minor version drops out of AKS support within about a year; an empty one is left
        // out of the request, so AKS uses its default for a new cluster and keeps an existing one's.
        foreach (var file in new[] { "main.bicep", "modules/aks.bicep" })
        {
            var parameter = Compile(file).GetProperty("parameters").GetProperty("kubernetesVersion");
            Assert.True(parameter.GetProperty("defaultValue").GetString() == "", $"{file} pins kubernetesVersion {parameter.GetProperty("defaultValue")}");
        }

        var cluster = Resources(Compile("modules/aks.bicep")).Single(r => r.GetProperty("type").GetString() == "Microsoft.ContainerService/managedClusters");
        var properties = cluster.GetProperty("properties");
        Assert.True(properties.ValueKind == JsonValueKind.String, $"the cluster's properties always carry kubernetesVersion: {properties}");
        Assert.Contains("if(empty(parameters('kubernetesVersion')), createObject(), createObject('kubernetesVersion', parameters('kubernetesVersion')))",
            properties.GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Both_node_pools_take_the_availability_zones_given_and_none_by_default()
    {
        // The chart spreads pods over topology.kubernetes.io/zone: without zones on the pools that spread does nothing.
        var main = Compile("main.bicep");
        Assert.Equal("array", main.GetProperty("parameters").GetProperty("availabilityZones").GetProperty("type").GetString());
        Assert.Equal(0, main.GetProperty("parameters").GetProperty("availabilityZones").GetProperty("defaultValue").GetArrayLength());
        var aksModule = Resources(main).Single(r => r.GetProperty("type").GetString() == "Microsoft.Resources/deployments" && r.GetProperty("name").GetString() == "aks");
        Assert.Equal("[parameters('availabilityZones')]", aksModule.GetProperty("properties").GetProperty("parameters").GetProperty("availabilityZones").GetProperty("value").GetString());

        var cluster = Resources(Compile("modules/aks.bicep")).Single(r => r.GetProperty("type").GetString() == "Microsoft.ContainerService/managedClusters");
        var properties = cluster.GetProperty("properties").GetString()!;
        const string zonesWhenGiven = "if(empty(parameters('availabilityZones')), createObject(), createObject('availabilityZones', parameters('availabilityZones')))";
        Assert.Equal(2, properties.Split(zonesWhenGiven).Length - 1);
    }

    [Fact]
    public void The_APIs_app_roles_are_the_roles_the_services_accept_for_applications()
    {
        // docs/deploy-aks.md registers the API with these roles; the client app of the load tests is granted them.
        using var roles = JsonDocument.Parse(File.ReadAllText(Path.Combine(Infra, "entra", "api-app-roles.json")));

        var declared = roles.RootElement.EnumerateArray().ToList();

        Assert.Equal(DroneDelivery.Security.Tokens.ApiAccess.Roles.All.Order(StringComparer.Ordinal), declared.Select(r => r.GetProperty("value").GetString()!).Order(StringComparer.Ordinal));
        Assert.All(declared, r => Assert.Equal(["Application"], r.GetProperty("allowedMemberTypes").EnumerateArray().Select(m => m.GetString())));
        Assert.All(declared, r => Assert.True(r.GetProperty("isEnabled").GetBoolean()));
        Assert.All(declared, r => Assert.True(Guid.TryParse(r.GetProperty("id").GetString(), out _)));
        Assert.Equal(declared.Count, declared.Select(r => r.GetProperty("id").GetString()).Distinct().Count());
    }

    private static IEnumerable<JsonElement> Resources(JsonElement arm) => Bicep.Resources(arm);

    private static ToolResult Build(string file) => Bicep.Build(file);

    private static JsonElement Compile(string file) => Bicep.Compile(file);
}

/// <summary>
/// Replaying the case-study steps on Azure (infra/steps.json, applied by infra/deploy-step.sh):
/// each deployment carries every earlier change of its scenario, and each one is a change Azure accepts.
/// </summary>
public sealed partial class InfrastructureStepTests
{
    private static readonly string Infra = RepositoryLayout.InRepository("infra");

    private static readonly JsonElement Steps = JsonDocument.Parse(File.ReadAllText(Path.Combine(Infra, "steps.json"))).RootElement.Clone();

    public static TheoryData<string> Scenarios() => new(Steps.GetProperty("scenarios").EnumerateObject().Select(s => s.Name));

    [Theory]
    [MemberData(nameof(Scenarios))]
    public void Every_redis_change_on_the_way_through_a_scenario_is_one_Azure_allows(string scenario)
    {
        var deployments = Deployments(scenario).ToList();

        var previous = Baseline();
        foreach (var (step, parameters) in deployments)
        {
            var (fromSku, fromSize) = (previous["redisSku"], int.Parse(previous["redisCapacity"], System.Globalization.CultureInfo.InvariantCulture));
            var (toSku, toSize) = (parameters["redisSku"], int.Parse(parameters["redisCapacity"], System.Globalization.CultureInfo.InvariantCulture));

            var refusal = RedisChangeRefusal(fromSku, fromSize, toSku, toSize);
            Assert.True(refusal is null, $"{step}: {fromSku} {fromSize} → {toSku} {toSize}: {refusal}");
            previous = parameters;
        }
    }

    [Theory]
    [InlineData("Basic", 1, "Basic", 0, "down to C0")]
    [InlineData("Standard", 2, "Standard", 0, "down to C0")]
    [InlineData("Basic", 1, "Premium", 1, "through Standard")]
    [InlineData("Basic", 0, "Premium", 1, "through Standard")]
    [InlineData("Standard", 0, "Basic", 0, "back to Basic")]
    [InlineData("Premium", 1, "Basic", 1, "back to Basic")]
    [InlineData("Premium", 1, "Standard", 1, "down to Standard")]
    [InlineData("Basic", 0, "Standard", 1, "tier and size at once")]
    [InlineData("Standard", 1, "Premium", 0, "P1–P5")]
    [InlineData("Basic", 6, "Basic", 7, "C0–C6")]
    [InlineData("Basic", 0, "Basic", 0, null)]
    [InlineData("Basic", 0, "Standard", 0, null)]
    [InlineData("Standard", 0, "Standard", 1, null)]
    [InlineData("Standard", 3, "Standard", 1, null)]
    [InlineData("Standard", 1, "Premium", 1, null)]
    [InlineData("Premium", 3, "Premium", 1, null)]
    public void Redis_transition_rules_are_Azure_Cache_for_Redis_rules(string fromSku, int fromSize, string toSku, int toSize, string? refusal)
    {
        var actual = RedisChangeRefusal(fromSku, fromSize, toSku, toSize);

        if (refusal is null)
        {
            Assert.Null(actual);
        }
        else
        {
            Assert.NotNull(actual);
            Assert.Contains(refusal, actual, StringComparison.Ordinal);
        }
    }

    /// <summary>
    /// Why Azure Cache for Redis refuses to move a cache from one tier and size to another, or null if
    /// it allows the move. Basic and Standard come in C0–C6, Premium in P1–P5; tier and size change in
    /// separate operations; Basic goes to Premium only through Standard; Standard and Premium never go
    /// back to Basic, nor Premium to Standard; no cache scales down to C0 from a larger size.
    /// </summary>
    private static string? RedisChangeRefusal(string fromSku, int fromSize, string toSku, int toSize)
    {
        if (toSku == "Premium" ? toSize is < 1 or > 5 : toSize is < 0 or > 6)
        {
            return toSku == "Premium" ? "Premium comes in P1–P5" : $"{toSku} comes in C0–C6";
        }

        if (Tier(toSku) < Tier(fromSku))
        {
            return toSku == "Basic" ? $"a {fromSku} cache cannot go back to Basic" : "a Premium cache cannot go down to Standard";
        }

        if (fromSku == "Basic" && toSku == "Premium")
        {
            return "Basic cannot move to Premium directly: go through Standard";
        }

        if (fromSku != toSku && fromSize != toSize)
        {
            return "a move cannot change tier and size at once";
        }

        if (toSize == 0 && fromSize > 0)
        {
            return "a cache cannot scale down to C0 from a larger size";
        }

        return null;
    }

    [Theory]
    [MemberData(nameof(Scenarios))]
    public void A_later_step_keeps_every_change_of_the_earlier_ones(string scenario)
    {
        var changed = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (step, parameters) in Deployments(scenario))
        {
            foreach (var (key, value) in changed)
            {
                Assert.True(parameters[key] == value || StageChanges(scenario, step).Any(s => s.ContainsKey(key)), $"{step} undoes {key}={value}");
            }

            foreach (var stage in StageChanges(scenario, step))
            {
                foreach (var (key, value) in stage)
                {
                    changed[key] = value;
                }
            }
        }

        Assert.NotEmpty(changed);
    }

    [Fact]
    public void Every_step_parameter_is_a_parameter_of_the_template()
    {
        var declared = ParameterDeclaration().Matches(File.ReadAllText(Path.Combine(Infra, "main.bicep"))).Select(m => m.Groups[1].Value).ToHashSet(StringComparer.Ordinal);
        var used = Steps.GetProperty("scenarios").EnumerateObject()
            .SelectMany(s => s.Value.EnumerateArray())
            .SelectMany(step => step.GetProperty("stages").EnumerateArray())
            .SelectMany(stage => stage.EnumerateObject().Select(p => p.Name))
            .Distinct()
            .ToList();

        Assert.NotEmpty(used);
        Assert.All(used, name => Assert.Contains(name, declared));
    }

    [Theory]
    [InlineData("A4")]
    [InlineData("B2")]
    [InlineData("B6")]
    public void The_deploy_script_runs_one_deployment_per_stage_with_the_cumulative_parameters(string step)
    {
        var scenario = step[..1];
        var deployments = Deployments(scenario).Where(d => d.Step == step).ToList();

        var result = ExternalTool.Run("bash", [Path.Combine(Infra, "deploy-step.sh"), step], Infra, new Dictionary<string, string> { ["DRY_RUN"] = "1" });

        Assert.True(result.ExitCode == 0, result.Describe());
        var lines = result.StandardOutput.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(deployments.Count, lines.Length);
        foreach (var (line, deployment) in lines.Zip(deployments))
        {
            foreach (var key in ChangedBy(scenario, step))
            {
                Assert.Contains($" -p {key}={deployment.Parameters[key]}", line + " ", StringComparison.Ordinal);
            }
        }
    }

    [Theory]
    [InlineData("lockDuration", "queueLockDuration")]
    [InlineData("maxDeliveryCount", "queueMaxDeliveryCount")]
    public void The_queue_on_Azure_matches_the_queue_the_chart_gives_the_emulator_at_every_step(string chartKey, string azureParameter)
    {
        // The chart configures the emulator's queue (and the workflow's delivery count); on Azure the
        // same queue is a parameter of main.bicep. The two must not drift apart at any step.
        var templateDefault = TemplateDefault(azureParameter);
        foreach (var (step, parameters) in Deployments("B"))
        {
            var values = Yaml.Merge(Yaml.Parse(File.ReadAllText(Chart.ValuesFile)), Yaml.Parse(File.ReadAllText(Chart.StepFile(step))) ?? new Dictionary<object, object?>());
            var chart = values.Text("serviceBus", "queues", "deliveryrequests", chartKey);
            var azure = parameters.TryGetValue(azureParameter, out var value) ? value : templateDefault;

            Assert.True(chart == azure, $"{step}: the chart's {chartKey} is {chart}, the Azure queue's {azureParameter} is {azure}");
        }
    }

    [Theory]
    [InlineData("B2 -p kubernetesVersion=1.34", "-g dronedelivery -n dronedelivery", "-p kubernetesVersion=1.34")]
    [InlineData("B6 my-group my-deployment --parameters kubernetesVersion=1.34 userNodeVmSize=Standard_D4s_v5", "-g my-group -n my-deployment", "--parameters kubernetesVersion=1.34 userNodeVmSize=Standard_D4s_v5")]
    [InlineData("A2 my-group -- --what-if", "-g my-group -n dronedelivery", "--what-if")]
    public void The_deploy_script_passes_further_arguments_to_every_deployment_after_the_step_parameters(string arguments, string target, string forwarded)
    {
        var words = arguments.Split(' ');
        var step = words[0];
        var deployments = Deployments(step[..1]).Where(d => d.Step == step).ToList();

        var result = ExternalTool.Run("bash", [Path.Combine(Infra, "deploy-step.sh"), .. words], Infra, new Dictionary<string, string> { ["DRY_RUN"] = "1" });

        Assert.True(result.ExitCode == 0, result.Describe());
        var lines = result.StandardOutput.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        Assert.Equal(deployments.Count, lines.Length);
        Assert.All(lines, line =>
        {
            Assert.StartsWith($"az deployment group create {target} -f main.bicep -p main.bicepparam", line, StringComparison.Ordinal);
            Assert.EndsWith($" {forwarded}", line, StringComparison.Ordinal);
        });
    }

    [Fact]
    public void The_README_loads_step_A4s_container_on_Azure_with_the_seed_command_not_the_seed_job()
    {
        // On Azure the chart's seed job does not run (it loads only the emulator).
        var row = File.ReadAllLines(Path.Combine(Infra, "README.md")).Single(line => line.StartsWith("| A4 |", StringComparison.Ordinal));

        Assert.DoesNotContain("run the seed job", row, StringComparison.Ordinal);
        Assert.Contains("seed --load-only", row, StringComparison.Ordinal);
        Assert.Contains("--account-endpoint", row, StringComparison.Ordinal);
        Assert.Contains("--container utilization-by-owner --partition-key-path /ownerId", row, StringComparison.Ordinal);
    }

    public static TheoryData<string, string> StepsAfterTheOtherScenario()
    {
        var data = new TheoryData<string, string>();
        var scenarios = Steps.GetProperty("scenarios").EnumerateObject().Select(s => s.Name).ToList();
        foreach (var scenario in scenarios)
        {
            foreach (var other in scenarios.Where(o => o != scenario))
            {
                foreach (var before in Deployments(other).Select(d => d.Step).Distinct())
                {
                    foreach (var step in Deployments(scenario).Select(d => d.Step).Distinct())
                    {
                        data.Add(before, step);
                    }
                }
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(StepsAfterTheOtherScenario))]
    public void A_step_replayed_after_the_other_scenario_keeps_that_scenarios_changes_and_Azure_allows_it(string before, string step)
    {
        // The resource group as the other scenario's step left it, in `az deployment group show` form.
        var deployed = Deployments(before[..1]).Last(d => d.Step == before).Parameters;
        var file = Path.GetTempFileName();
        File.WriteAllText(file, JsonSerializer.Serialize(deployed.ToDictionary(p => p.Key, p => new { type = "String", value = p.Value })));
        try
        {
            var result = ExternalTool.Run("bash", [Path.Combine(Infra, "deploy-step.sh"), step], Infra, new Dictionary<string, string> { ["DRY_RUN"] = "1", ["DEPLOYED_PARAMETERS"] = file });

            Assert.True(result.ExitCode == 0, result.Describe());
            var previous = deployed;
            foreach (var line in result.StandardOutput.Split('\n', StringSplitOptions.RemoveEmptyEntries))
            {
                var parameters = new Dictionary<string, string>(Baseline(), StringComparer.Ordinal);
                foreach (Match pair in CommandParameter().Matches(line))
                {
                    parameters[pair.Groups[1].Value] = pair.Groups[2].Value;
                }

                foreach (var key in Steps.GetProperty("scenarios").GetProperty(before[..1]).EnumerateArray()
                    .SelectMany(s => s.GetProperty("stages").EnumerateArray()).SelectMany(stage => stage.EnumerateObject().Select(p => p.Name)))
                {
                    Assert.True(parameters[key] == deployed[key], $"{step} after {before} sets {key}={parameters[key]}, undoing {deployed[key]}");
                }

                var refusal = RedisChangeRefusal(previous["redisSku"], int.Parse(previous["redisCapacity"], CultureInfo.InvariantCulture), parameters["redisSku"], int.Parse(parameters["redisCapacity"], CultureInfo.InvariantCulture));
                Assert.True(refusal is null, $"{step} after {before}: {refusal}");
                previous = parameters;
            }
        }
        finally
        {
            File.Delete(file);
        }
    }

    [Fact]
    public void The_deploy_script_refuses_an_unknown_step_by_name()
    {
        var result = ExternalTool.Run("bash", [Path.Combine(Infra, "deploy-step.sh"), "A9"], Infra, new Dictionary<string, string> { ["DRY_RUN"] = "1" });

        Assert.Equal(2, result.ExitCode);
        Assert.Contains("unknown step 'A9'", result.StandardError, StringComparison.Ordinal);
    }

    /// <summary>The parameters of every deployment of a scenario, in order: baseline + all changes so far.</summary>
    private static IEnumerable<(string Step, Dictionary<string, string> Parameters)> Deployments(string scenario)
    {
        var current = Baseline();
        foreach (var step in Steps.GetProperty("scenarios").GetProperty(scenario).EnumerateArray())
        {
            var name = step.GetProperty("step").GetString()!;
            var stages = StageChanges(scenario, name);
            if (stages.Count == 0)
            {
                yield return (name, new Dictionary<string, string>(current, StringComparer.Ordinal));
            }

            foreach (var stage in stages)
            {
                foreach (var (key, value) in stage)
                {
                    current[key] = value;
                }

                yield return (name, new Dictionary<string, string>(current, StringComparer.Ordinal));
            }
        }
    }

    private static List<Dictionary<string, string>> StageChanges(string scenario, string step) =>
        Steps.GetProperty("scenarios").GetProperty(scenario).EnumerateArray()
            .Single(s => s.GetProperty("step").GetString() == step)
            .GetProperty("stages").EnumerateArray()
            .Select(stage => stage.EnumerateObject().ToDictionary(p => p.Name, p => p.Value.ValueKind == JsonValueKind.String ? p.Value.GetString()! : p.Value.GetRawText(), StringComparer.Ordinal))
            .ToList();

    /// <summary>Keys changed by this step or an earlier one of the scenario.</summary>
    private static HashSet<string> ChangedBy(string scenario, string step)
    {
        var keys = new HashSet<string>(StringComparer.Ordinal);
        foreach (var s in Steps.GetProperty("scenarios").GetProperty(scenario).EnumerateArray())
        {
            var name = s.GetProperty("step").GetString()!;
            foreach (var stage in StageChanges(scenario, name))
            {
                keys.UnionWith(stage.Keys);
            }

            if (name == step)
            {
                break;
            }
        }

        return keys;
    }

    private static Dictionary<string, string> Baseline() =>
        File.ReadAllLines(Path.Combine(Infra, "main.bicepparam"))
            .Select(line => ParameterValue().Match(line))
            .Where(m => m.Success)
            .ToDictionary(m => m.Groups[1].Value, m => m.Groups[2].Value.Trim('\''), StringComparer.Ordinal);

    private static string TemplateDefault(string parameter) =>
        System.Text.RegularExpressions.Regex.Match(File.ReadAllText(Path.Combine(Infra, "main.bicep")), $@"(?m)^param\s+{parameter}\s+\w+\s*=\s*'?([^'\r\n]+?)'?\s*$").Groups[1].Value;

    private static int Tier(string sku) => sku switch { "Basic" => 0, "Standard" => 1, "Premium" => 2, _ => throw new ArgumentException($"unknown Redis SKU {sku}") };

    [System.Text.RegularExpressions.GeneratedRegex(@"^param\s+(\w+)\s*=\s*(.+?)\s*$")]
    private static partial System.Text.RegularExpressions.Regex ParameterValue();

    [GeneratedRegex(@" -p (\w+)=(\S+)")]
    private static partial Regex CommandParameter();

    [System.Text.RegularExpressions.GeneratedRegex(@"(?m)^param\s+(\w+)\s")]
    private static partial System.Text.RegularExpressions.Regex ParameterDeclaration();
}
