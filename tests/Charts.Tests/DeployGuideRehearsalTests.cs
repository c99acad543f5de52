using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LoadDriver.Cli;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The deploy guides work as written: their bash blocks run in order under <c>set -euo pipefail</c> against
/// recording stand-ins (<see cref="GuideRehearsal"/>), the real helm renders and kubeconform validates what each
/// install and upgrade would apply, and the load driver accepts every command line they give it. The variants
/// below put back mistakes the guides once had and show that the rehearsal stops at each.
/// </summary>
public sealed class DeployGuideRehearsalTests
{
    /// <summary>What the AKS guide asks the reader to set before its first block.</summary>
    private static readonly Dictionary<string, string> AksInputs = new() { ["SUBSCRIPTION"] = "rehearsal-subscription" };

    private static readonly Lazy<string> KindGuide = new(() => File.ReadAllText(RepositoryLayout.InRepository("docs", "deploy-kind.md")));

    [Fact]
    public void The_kind_guide_runs_as_written()
    {
        using var run = GuideRehearsal.Run("deploy-kind.md", new Dictionary<string, string>());

        Assert.True(run.ExitCode == 0, run.Describe());
        Assert.Contains("rehearsal: every block ran", run.Output, StringComparison.Ordinal);
        AssertLoadDriverAcceptsEveryCommand(run);
    }

    [Fact]
    public void The_AKS_guide_runs_as_written_and_again_after_its_clean_up()
    {
        // The second walk-through starts where the first one's clean-up left Azure: a redeployment after a
        // resource group's deletion meets what soft delete keeps (a Key Vault of the same name).
        using var first = GuideRehearsal.Run("deploy-aks.md", AksInputs);
        Assert.True(first.ExitCode == 0, first.Describe());
        Assert.Contains("rehearsal: every block ran", first.Output, StringComparison.Ordinal);
        AssertLoadDriverAcceptsEveryCommand(first);
        AssertEverySnippetRendersWithTheGuidesValues(first, "deploy-aks.md", "aks.yaml");

        using var again = GuideRehearsal.Run("deploy-aks.md", AksInputs, first.StateDirectory);

        Assert.True(again.ExitCode == 0, again.Describe());
        Assert.Contains("rehearsal: every block ran", again.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void A_variable_used_before_the_guide_defines_it_stops_the_rehearsal()
    {
        var guide = KindGuide.Value.Replace(
            "helm upgrade --install dronedelivery charts/dronedelivery --namespace dronedelivery \\\n  -f k8s/kind/values-kind.yaml",
            "helm upgrade --install dronedelivery charts/dronedelivery --namespace dronedelivery \\\n  -f k8s/kind/values-kind.yaml --set ingress.host=\"$HOST\"",
            StringComparison.Ordinal);
        Assert.NotEqual(KindGuide.Value, guide);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.NotEqual(0, run.ExitCode);
        Assert.Contains("HOST: unbound variable", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void An_upgrade_that_drops_a_setting_an_earlier_one_made_stops_the_rehearsal()
    {
        // The Ingress set with --set … --reuse-values, then a step upgrade with only the values files: helm drops it.
        var guide = Insert(KindGuide.Value, "## 6. A first load test", """
            ```bash
            helm upgrade dronedelivery charts/dronedelivery --namespace dronedelivery --reuse-values \
              --set ingress.enabled=true --set ingress.className=nginx --set ingress.host=dronedelivery.localtest.me
            ```
            """);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.NotEqual(0, run.ExitCode);
        Assert.Contains("this upgrade loses settings an earlier install made", run.Output, StringComparison.Ordinal);
        Assert.Contains("ingress.enabled", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void Reading_the_log_of_a_job_that_deleted_itself_stops_the_rehearsal()
    {
        // The seed job is a hook that deletes itself once it succeeded: after `helm upgrade --install --wait` it is gone.
        var guide = Insert(KindGuide.Value, "## 6. A first load test", """
            ```bash
            kubectl -n dronedelivery logs job/seed
            ```
            """);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.NotEqual(0, run.ExitCode);
        Assert.Contains("jobs \"seed\" not found", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void A_shell_function_named_like_a_command_stops_the_rehearsal()
    {
        var guide = Insert(KindGuide.Value, "## 6. A first load test", """
            ```bash
            id() { echo "$1"; }
            ```
            """);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.Equal(97, run.ExitCode);
        Assert.Contains("defines the shell function id, which hides the command", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void A_command_the_stand_ins_do_not_know_stops_the_rehearsal()
    {
        var guide = Insert(KindGuide.Value, "## 6. A first load test", """
            ```bash
            kubectl -n dronedelivery scale deploy/gateway --replicas 5
            ```
            """);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.NotEqual(0, run.ExitCode);
        Assert.Contains("the kubectl stand-in does not know", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void A_value_the_chart_schema_refuses_stops_the_rehearsal()
    {
        var guide = KindGuide.Value.Replace(
            "-f k8s/kind/values-kind.yaml --wait --timeout 10m",
            "-f k8s/kind/values-kind.yaml --set gateway.replicas=0 --wait --timeout 10m",
            StringComparison.Ordinal);
        Assert.NotEqual(KindGuide.Value, guide);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.NotEqual(0, run.ExitCode);
        Assert.Contains("values don't meet the specifications of the schema", run.Output, StringComparison.Ordinal);
    }

    [Fact]
    public void An_OTLP_endpoint_at_a_port_the_dashboard_s_Service_lacks_stops_the_rehearsal() =>
        AssertStops(
            KindGuide.Value.Replace(":18889 \\\n", ":4317 \\\n", StringComparison.Ordinal),
            "telemetry.otlpEndpoint http://aspire-dashboard.dronedelivery:4317: Service aspire-dashboard has no port 4317");

    [Fact]
    public void Applying_the_dashboard_before_its_image_is_loaded_stops_the_rehearsal() =>
        AssertStops(
            Insert(KindGuide.Value, "## 3. Build the images", """
                ```bash
                kubectl apply -f k8s/namespace.yaml
                kubectl -n dronedelivery apply -f k8s/observability/aspire-dashboard.yaml
                ```
                """),
            "k8s/observability/aspire-dashboard.yaml runs dronedelivery/aspire-dashboard:");

    /// <summary>A variant of the kind guide stops the rehearsal with <paramref name="message"/>.</summary>
    private static void AssertStops(string guide, string message)
    {
        Assert.NotEqual(KindGuide.Value, guide);

        using var run = GuideRehearsal.RunText(guide, new Dictionary<string, string>());

        Assert.NotEqual(0, run.ExitCode);
        Assert.Contains(message, run.Output, StringComparison.Ordinal);
    }

    /// <summary>
    /// The guide's <c>```yaml</c> blocks are what to add to the values file it wrote: each one, on top of that file
    /// as the rehearsal left it, renders with the chart and passes kubeconform.
    /// </summary>
    private static void AssertEverySnippetRendersWithTheGuidesValues(GuideRun run, string guide, string valuesFile)
    {
        var snippets = System.Text.RegularExpressions.Regex.Matches(File.ReadAllText(RepositoryLayout.InRepository("docs", guide)), @"```yaml\n(.*?)```", System.Text.RegularExpressions.RegexOptions.Singleline)
            .Select(m => m.Groups[1].Value).ToList();
        Assert.NotEmpty(snippets);
        var values = Path.Combine(run.Workspace, valuesFile);
        Assert.True(File.Exists(values), $"the guide wrote no {valuesFile}");
        foreach (var snippet in snippets)
        {
            var file = Path.Combine(run.Workspace, "snippet.yaml");
            File.WriteAllText(file, snippet);

            var render = Chart.TemplateRaw(["-f", values, "-f", file]);

            Assert.True(render.ExitCode == 0, $"{valuesFile} with\n{snippet}\ndoes not render: {render.Describe()}");
            var valid = Kubeconform.Validate(render.StandardOutput);
            Assert.True(valid.ExitCode == 0, $"{valuesFile} with\n{snippet}\n: {valid.Describe()}");
        }
    }

    /// <summary>Every load-driver command line the guide ran parses with the load driver's own command line.</summary>
    private static void AssertLoadDriverAcceptsEveryCommand(GuideRun run)
    {
        var commands = run.DotnetRuns("src/Tools/LoadDriver").ToList();
        Assert.NotEmpty(commands);
        foreach (var arguments in commands)
        {
            var parse = LoadDriverCommand.Build(new CliConsole(TextWriter.Null, TextWriter.Null, IsTerminal: false)).Parse(arguments);
            Assert.True(parse.Errors.Count == 0, $"the load driver refuses [{string.Join(' ', arguments)}]: {string.Join("; ", parse.Errors.Select(e => e.Message))}");
        }
    }

    /// <summary>The guide with <paramref name="block"/> inserted before the section <paramref name="heading"/>.</summary>
    private static string Insert(string guide, string heading, string block)
    {
        var at = guide.IndexOf(heading, StringComparison.Ordinal);
        Assert.True(at >= 0, $"the guide has no section '{heading}'");
        return guide[..at] + block + "\n\n" + guide[at..];
    }
}
