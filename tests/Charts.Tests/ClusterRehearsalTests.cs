using System.Collections.Concurrent;
using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// A cluster rehearsal for each way docs/deploy-kind.md installs the chart (kind values, alone and
/// with each step): every Deployment starts as its image would, with what the render gives it, and
/// its probes pass. A Secret key, a Service port, an environment variable, a config file or a probe
/// path that is wrong in the render fails here as it would fail a pod.
/// </summary>
public sealed class ClusterRehearsalTests
{
    public static TheoryData<string> KindInstalls => new(["kind", .. Chart.StepNames.Select(s => $"kind, step {s}")]);

    /// <summary>
    /// The outcome of each rehearsal, by what a rehearsal can tell apart: installs that render the same
    /// pods (B3 is B2 with more replicas) are rehearsed once, since a rehearsal runs one replica each.
    /// </summary>
    private static readonly ConcurrentDictionary<string, Lazy<Task<(string[] Pods, string?[] Failures)>>> Outcomes = new(StringComparer.Ordinal);

    [Theory]
    [MemberData(nameof(KindInstalls))]
    public async Task Every_Deployment_starts_with_its_rendered_settings_and_passes_its_probes(string install)
    {
        var values = install == "kind" ? Chart.Kind : Chart.Kind.With(install, "-f", Chart.StepFile(install["kind, step ".Length..]));
        var render = Chart.Template(values);

        var (pods, failures) = await Outcomes.GetOrAdd(Rehearsal.Equivalence(render), _ => new(() => RehearseAsync(render))).Value;

        Assert.Equal(render.OfKind("Deployment").Select(d => d.Name).Order(StringComparer.Ordinal), pods.Order(StringComparer.Ordinal));
        Assert.True(failures.All(f => f is null), string.Join("\n\n", failures.Where(f => f is not null)));
    }

    [Fact]
    public void Only_renders_that_differ_in_replica_counts_or_the_random_signing_key_share_a_rehearsal()
    {
        var b2 = Chart.Template(Chart.Kind.With("kind, step B2", "-f", Chart.StepFile("B2")));
        var b3 = Chart.Template(Chart.Kind.With("kind, step B3", "-f", Chart.StepFile("B3")));
        var b4 = Chart.Template(Chart.Kind.With("kind, step B4", "-f", Chart.StepFile("B4")));

        Assert.NotEqual(b2.Text, b3.Text);
        Assert.Equal(Rehearsal.Equivalence(b2), Rehearsal.Equivalence(b3));
        Assert.NotEqual(Rehearsal.Equivalence(b2), Rehearsal.Equivalence(b4));
    }

    private static async Task<(string[] Pods, string?[] Failures)> RehearseAsync(Render render)
    {
        await using var rehearsal = await Rehearsal.StartAsync(render);
        var failures = await Task.WhenAll(rehearsal.Pods.Select(Rehearsal.ProbeAsync));
        return ([.. rehearsal.Pods.Select(p => p.Name)], failures);
    }

    [Fact]
    public async Task Services_reach_each_other_through_the_rendered_addresses()
    {
        // The gateway's readiness says nothing about its backends, so prove the routing itself: the
        // addresses the gateway is given lead to the pods of those Services.
        var render = Chart.Template(Chart.Kind);
        await using var rehearsal = await Rehearsal.StartAsync(render);
        Assert.All(await Task.WhenAll(rehearsal.Pods.Select(Rehearsal.ProbeAsync)), f => Assert.Null(f));

        var gateway = rehearsal.Pods.Single(p => p.Name == "gateway");
        foreach (var backend in new[] { "delivery", "package", "dronescheduler" })
        {
            var key = gateway.Environment.Keys.Single(k => k.StartsWith("Backends__", StringComparison.Ordinal) && k.EndsWith("__BaseAddress", StringComparison.Ordinal)
                && string.Equals(k.Split("__")[1], backend, StringComparison.OrdinalIgnoreCase));
            var pod = rehearsal.Pods.Single(p => p.Name == backend);
            Assert.Equal(new Uri($"http://127.0.0.1:{pod.LocalPorts.Single().Value}/"), new Uri(gateway.Environment[key]));
            using var http = new HttpClient();
            Assert.True((await http.GetAsync(new Uri(new Uri(gateway.Environment[key]), "/health/live"))).IsSuccessStatusCode);
        }
    }
}
