using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LoadDriver.Cli;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The load driver runs in the cluster as the chart's Helm test Jobs: created only by <c>helm test</c>, with
/// arguments the real command line accepts, tokens the public services accept, and a way through the
/// NetworkPolicies to the gateway and Ingestion.
/// </summary>
public sealed class LoadTestJobTests
{
    public static TheoryData<string> LoadTestValueSets => new(Chart.KindLoadTests.Name, Chart.AzureLoadTests.Name);

    private static readonly string[] Jobs = ["load-invoice", "load-delivery-requests"];

    [Fact]
    public void Without_the_value_there_are_no_load_Jobs()
    {
        Assert.DoesNotContain(Chart.Template(Chart.Defaults).OfKind("Job"), j => Jobs.Contains(j.Name));
        Assert.DoesNotContain(Chart.Template(Chart.Defaults).OfKind("NetworkPolicy"), p => p.Name == "load-test");
    }

    [Theory]
    [MemberData(nameof(LoadTestValueSets))]
    public void Each_scenario_is_a_test_hook_that_runs_once_and_keeps_its_log_until_the_next_run(string valueSet)
    {
        var render = Chart.Template(Chart.ValueSet(valueSet));

        foreach (var name in Jobs)
        {
            var job = render.Get("Job", name);
            Assert.Equal("test", job.Body.Text("metadata", "annotations", "helm.sh/hook"));
            Assert.Equal("before-hook-creation", job.Body.Text("metadata", "annotations", "helm.sh/hook-delete-policy"));
            Assert.Equal("0", job.Body.Text("spec", "backoffLimit"));
            Assert.Equal("Never", job.PodSpec.Text("restartPolicy"));
        }
    }

    [Theory]
    [MemberData(nameof(LoadTestValueSets))]
    public void The_load_driver_accepts_each_Jobs_arguments(string valueSet)
    {
        foreach (var name in Jobs)
        {
            var arguments = Arguments(Chart.Template(Chart.ValueSet(valueSet)), name);

            var parse = LoadDriverCommand.Build(new CliConsole(TextWriter.Null, TextWriter.Null, IsTerminal: false)).Parse(arguments);

            Assert.True(parse.Errors.Count == 0, $"{name}: {string.Join("; ", parse.Errors.Select(e => e.Message))} in [{string.Join(' ', arguments)}]");
        }
    }

    [Fact]
    public void The_Jobs_load_the_case_studies_shapes_and_the_seeded_owners_and_months()
    {
        var render = Chart.Template(Chart.KindLoadTests);

        var invoice = Arguments(render, "load-invoice");
        var requests = Arguments(render, "load-delivery-requests");

        Assert.Equal("1:40:8m", After(invoice, "--step"));
        Assert.Equal("2025", After(invoice, "--year"));
        Assert.Equal("1", After(invoice, "--months"));
        Assert.Equal("100", After(invoice, "--owners"));
        Assert.Equal("2:250:8m", After(requests, "--rate"));
        Assert.Contains("--poll", requests);
        var spread = Chart.Template(Chart.KindLoadTests.With("three months", "--set", "seed.firstMonth=2025-11", "--set", "seed.months=3"));
        Assert.Equal("11-12", After(Arguments(spread, "load-invoice"), "--months"));
    }

    [Fact]
    public void The_Jobs_and_the_Azure_Load_Testing_configurations_load_the_same_shapes()
    {
        var render = Chart.Template(Chart.KindLoadTests);
        string Setting(string file, string name) =>
            Yaml.Parse(File.ReadAllText(DroneDelivery.LocalProcesses.RepositoryLayout.InRepository("loadtests", "AzureLoadTesting", file)))
                .List("env").OfType<IDictionary<object, object?>>().Single(e => e.Text("name") == name).Text("value")!;

        Assert.Equal(Setting("invoice.yaml", "DRONEDELIVERY_USERS"), After(Arguments(render, "load-invoice"), "--step"));
        Assert.Equal(Setting("delivery-requests.yaml", "DRONEDELIVERY_RATE"), After(Arguments(render, "load-delivery-requests"), "--rate"));
    }

    [Fact]
    public void With_the_development_issuer_each_owners_tokens_are_minted_from_the_key_the_services_trust()
    {
        var render = Chart.Template(Chart.KindLoadTests);
        var gateway = Render.Environment(render.Get("Deployment", "gateway").Containers.Single());

        foreach (var name in Jobs)
        {
            var job = render.Get("Job", name);
            var arguments = Arguments(render, name);
            var keyFile = After(arguments, "--signing-key-file")!;
            var mount = job.Containers.Single().List("volumeMounts").OfType<IDictionary<object, object?>>()
                .Single(m => keyFile.StartsWith(m.Text("mountPath") + "/", StringComparison.Ordinal));
            var volume = job.PodSpec.List("volumes").OfType<IDictionary<object, object?>>().Single(v => v.Text("name") == mount.Text("name"));
            var item = volume.List("secret", "items").OfType<IDictionary<object, object?>>().Single();

            Assert.Equal(gateway["Authentication__SigningKeys__0"], $"secret:{volume.Text("secret", "secretName")}/{item.Text("key")}");
            Assert.Equal(Path.GetFileName(keyFile), item.Text("path"));
            Assert.Equal(gateway["Authentication__Issuer"], After(arguments, "--issuer"));
            Assert.Equal(gateway["Authentication__Audience"], After(arguments, "--audience"));
        }
    }

    [Fact]
    public void With_Entra_ID_the_Jobs_use_the_client_apps_credentials_for_the_APIs_scope()
    {
        var render = Chart.Template(Chart.AzureLoadTests);

        foreach (var name in Jobs)
        {
            var environment = Render.Environment(render.Get("Job", name).Containers.Single());

            Assert.Equal("api://00000000-0000-0000-0000-0000000000c1/.default", After(Arguments(render, name), "--token-scope"));
            Assert.Equal("00000000-0000-0000-0000-000000000001", environment["AZURE_TENANT_ID"]);
            Assert.Equal("00000000-0000-0000-0000-0000000000d1", environment["AZURE_CLIENT_ID"]);
            Assert.Equal("secret:dronedelivery-load-client/client-secret", environment["AZURE_CLIENT_SECRET"]);
        }
    }

    [Fact]
    public void With_Entra_ID_the_chart_refuses_load_Jobs_without_a_client_app()
    {
        var error = Chart.TemplateError([.. Chart.AzureEverythingOn.Arguments, "--set", "loadTest.enabled=true"]);

        Assert.Contains("loadTest with auth.mode entraId needs loadTest.entraId.clientId and loadTest.entraId.clientSecret.name", error);
    }

    [Theory]
    [MemberData(nameof(LoadTestValueSets))]
    public void The_Jobs_target_the_public_Services_and_the_NetworkPolicies_let_them_through(string valueSet)
    {
        var render = Chart.Template(Chart.ValueSet(valueSet));
        var policy = render.Get("NetworkPolicy", "load-test");
        var egressTo = policy.Body.List("spec", "egress").OfType<IDictionary<object, object?>>()
            .SelectMany(rule => rule.List("to").OfType<IDictionary<object, object?>>())
            .Select(peer => peer.Text("podSelector", "matchLabels", "app.kubernetes.io/name"))
            .ToList();
        var podLabels = render.Get("Job", "load-invoice").Body.Map("spec", "template", "metadata", "labels")!;

        Assert.All(policy.Body.Map("spec", "podSelector", "matchLabels")!, selector => Assert.Equal(selector.Value, podLabels[selector.Key]));
        foreach (var (job, option, service) in new[] { ("load-invoice", "--target", "gateway"), ("load-delivery-requests", "--target", "ingestion"), ("load-delivery-requests", "--status-base", "gateway") })
        {
            Assert.Equal($"http://{service}", After(Arguments(render, job), option));
            Assert.Contains(render.Get("Service", service).Body.List("spec", "ports").OfType<IDictionary<object, object?>>(), p => p.Text("port") == "80");
            Assert.Contains(service, egressTo);

            // The service's own policy admits the load pods, whether its public port is open to all or only to the ingress.
            var from = render.Get("NetworkPolicy", service).Body.List("spec", "ingress").OfType<IDictionary<object, object?>>().First().List("from").OfType<IDictionary<object, object?>>().ToList();
            Assert.True(from.Count == 0 || from.Any(peer => peer.Map("podSelector", "matchLabels") is { } labels && labels.All(l => Equals(podLabels[l.Key], l.Value))),
                $"{valueSet}: {service}'s NetworkPolicy does not admit the load Jobs");
        }
    }

    private static List<string> Arguments(Render render, string job) =>
        render.Get("Job", job).Containers.Single().List("args").Select(a => a?.ToString() ?? string.Empty).ToList();

    private static string? After(List<string> arguments, string option) =>
        arguments.IndexOf(option) is var i and >= 0 && i + 1 < arguments.Count ? arguments[i + 1] : null;
}
