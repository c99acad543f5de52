using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// Each step overlay (charts/dronedelivery/steps) is a comment-headed, minimal, cumulative diff from
/// the chart defaults, and changes exactly the knobs its header claims — in the values and in the
/// rendered objects (the env var, replica count, emulator config or Redis argument each knob drives).
/// </summary>
public sealed partial class StepOverlayTests
{
    public static TheoryData<string> Steps => Chart.Steps;

    [Fact]
    public void There_is_one_overlay_per_case_study_step()
    {
        Assert.Equal(["A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4", "B5", "B6"], Chart.StepNames);
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void Overlay_opens_with_a_header_naming_the_step_the_change_and_what_to_look_at(string step)
    {
        var header = StepHeader.Read(step);

        Assert.Matches($"^# Step {step} — .+", header.Lines[0]);
        Assert.Contains(header.Lines, l => l.StartsWith("# Change:", StringComparison.Ordinal));
        Assert.Contains(header.Lines, l => l.StartsWith("# Look at:", StringComparison.Ordinal));
        Assert.Contains(header.Lines, l => l.StartsWith("# Knobs:", StringComparison.Ordinal));
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void Overlay_sets_exactly_the_knobs_its_header_claims_each_to_a_non_default_value(string step)
    {
        var header = StepHeader.Read(step);
        var overlay = Overlay(step).Leaves().ToDictionary(l => l.Path, l => l.Value);
        var defaults = Yaml.Parse(File.ReadAllText(Chart.ValuesFile));

        Assert.Equal(header.Knobs.Order(StringComparer.Ordinal), overlay.Keys.Order(StringComparer.Ordinal));
        foreach (var (path, value) in overlay)
        {
            var before = defaults.At(path.Split('.'));
            Assert.True(before?.ToString() != value, $"{step} sets {path} to its default ({value}): not a change");
        }
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void Rendered_objects_change_exactly_where_the_claimed_knobs_act(string step)
    {
        var knobs = StepHeader.Read(step).Knobs;
        var before = Flatten(Chart.Template(Chart.Defaults));
        var after = Flatten(Chart.Template(Chart.Step(step)));
        var changed = before.Keys.Union(after.Keys)
            .Where(k => before.GetValueOrDefault(k) != after.GetValueOrDefault(k))
            .ToList();

        foreach (var change in changed)
        {
            Assert.True(knobs.Any(knob => Explains(knob, change)),
                $"{step} changes {change} ({before.GetValueOrDefault(change)} → {after.GetValueOrDefault(change)}), which none of its knobs ({string.Join(", ", knobs)}) explains");
        }

        foreach (var knob in knobs)
        {
            Assert.True(changed.Any(change => Explains(knob, change)), $"{step} claims {knob} but nothing rendered changes with it");
        }
    }

    [Theory]
    [MemberData(nameof(Steps))]
    public void Each_settings_knob_reaches_its_service_as_the_environment_variable_of_its_key(string step)
    {
        var overlay = Overlay(step);
        var render = Chart.Template(Chart.Step(step));
        foreach (var (path, value) in overlay.Leaves().Where(l => l.Path.Contains(".settings.", StringComparison.Ordinal)))
        {
            var parts = path.Split('.');
            var deployment = render.Get("Deployment", KubernetesName(parts[0]));
            var environment = Render.Environment(deployment.Containers.Single());
            var variable = string.Join("__", parts[2..]);
            Assert.True(environment.TryGetValue(variable, out var rendered), $"{step}: {deployment.Id} has no {variable}");
            Assert.Equal(value, rendered, StringComparer.OrdinalIgnoreCase);
        }
    }

    [Theory]
    [InlineData("A")]
    [InlineData("B")]
    public void Steps_of_a_scenario_are_cumulative(string scenario)
    {
        var steps = Chart.StepNames.Where(s => s.StartsWith(scenario, StringComparison.Ordinal)).ToList();
        for (var i = 1; i < steps.Count; i++)
        {
            var previous = StepHeader.Read(steps[i - 1]).Knobs;
            var current = StepHeader.Read(steps[i]).Knobs;
            Assert.True(previous.IsSubsetOf(current), $"{steps[i]} drops knobs of {steps[i - 1]}: {string.Join(", ", previous.Except(current))}");
            Assert.True(current.Count > previous.Count || i == 0, $"{steps[i]} adds no knob to {steps[i - 1]}");
        }
    }

    [Theory]
    [InlineData("A1")]
    [InlineData("B1")]
    public void Baseline_steps_are_the_chart_defaults(string step)
    {
        // Every leaf of every object, the development issuer's key aside: each render draws its own.
        Assert.Equal(Flatten(Chart.Template(Chart.Defaults)), Flatten(Chart.Template(Chart.Step(step))));
    }

    /// <summary>Whether a knob (values path) accounts for a change at "Kind/name:path" in the render.</summary>
    private static bool Explains(string knob, string change)
    {
        var (id, path) = (change[..change.IndexOf(':', StringComparison.Ordinal)], change[(change.IndexOf(':', StringComparison.Ordinal) + 1)..]);
        var parts = knob.Split('.');
        return parts[0] switch
        {
            "cosmosDb" => id == "ConfigMap/cosmosdb-emulator" || SeedArguments(id, path)
                || (id == "Deployment/cosmosdb-emulator" && path.EndsWith("annotations.checksum/config", StringComparison.Ordinal))
                || (id is "Deployment/package" or "Deployment/dronescheduler" && path.EndsWith("annotations.checksum/cosmosdb", StringComparison.Ordinal)),
            "serviceBus" => id == "ConfigMap/servicebus-emulator"
                || (id == "Deployment/servicebus-emulator" && path.EndsWith("annotations.checksum/config", StringComparison.Ordinal))
                || (id is "Deployment/ingestion" or "Deployment/workflow" && path.EndsWith("annotations.checksum/servicebus", StringComparison.Ordinal))
                || (knob.EndsWith(".maxDeliveryCount", StringComparison.Ordinal) && id == "Deployment/workflow" && path.Contains(".env.Processor__MaxDeliveryCount.", StringComparison.Ordinal)),
            "redis" => id == "Deployment/redis" && path.StartsWith("spec.template.spec.containers.redis.args", StringComparison.Ordinal),
            _ when parts.Length == 2 && parts[1] == "replicas" => id == $"Deployment/{KubernetesName(parts[0])}" && path == "spec.replicas",
            _ when parts.Length > 2 && parts[1] == "settings" =>
                (SeededBy(knob) && SeedArguments(id, path))
                || id == $"Deployment/{KubernetesName(parts[0])}"
                && path.StartsWith($"spec.template.spec.containers.{KubernetesName(parts[0])}.env.{string.Join("__", parts[2..])}.", StringComparison.Ordinal),
            _ => false,
        };
    }

    /// <summary>The overlay's values; a comment-only overlay (a baseline) is an empty map.</summary>
    private static object Overlay(string step) =>
        Yaml.Parse(File.ReadAllText(Chart.StepFile(step))) ?? new Dictionary<object, object?>();

    /// <summary>The seed job's arguments name the containers, partition key, RU/s and fleet it loads.</summary>
    private static bool SeedArguments(string id, string path) =>
        id == "Job/seed" && path.StartsWith("spec.template.spec.containers.seed.args", StringComparison.Ordinal);

    private static bool SeededBy(string knob) => knob is
        "droneScheduler.settings.Utilization.ContainerId" or "droneScheduler.settings.Utilization.PartitionKeyPath"
        or "droneScheduler.settings.Drones.ContainerId" or "droneScheduler.settings.Drones.FleetSize" or "package.settings.Packages.ContainerId";

    private static string KubernetesName(string valuesKey) => valuesKey.ToLowerInvariant();

    /// <summary>
    /// Every leaf of every object as "Kind/name:path" → value (named list items keyed by name), except the
    /// development issuer's signing key: 256 random bits drawn anew by every render (an install keeps its
    /// key through upgrades), never something a step sets.
    /// </summary>
    private static Dictionary<string, string?> Flatten(Render render) =>
        render.Manifests
            .SelectMany(m => Yaml.Leaves(KeyNamedItems(m.Body)).Select(l => ($"{m.Id}:{l.Path}", l.Value)))
            .Where(l => l.Item1 != $"Secret/{Chart.ReleaseName}-development-issuer:stringData.signing-key")
            .ToDictionary(l => l.Item1, l => l.Value);

    private static object? KeyNamedItems(object? node) => node switch
    {
        IDictionary<object, object?> map => map.ToDictionary(kv => kv.Key, kv => KeyNamedItems(kv.Value)),
        IList<object?> list when list.Count > 0 && list.All(i => i is IDictionary<object, object?> m && m.ContainsKey("name")) =>
            list.Cast<IDictionary<object, object?>>().ToDictionary(i => (object)i.Text("name")!, i => KeyNamedItems(i)),
        _ => node,
    };

    /// <summary>The comment header of a step overlay and the knobs it claims.</summary>
    private sealed partial record StepHeader(IReadOnlyList<string> Lines, HashSet<string> Knobs)
    {
        public static StepHeader Read(string step)
        {
            var lines = File.ReadLines(Chart.StepFile(step)).TakeWhile(l => l.StartsWith('#')).ToList();
            Assert.NotEmpty(lines);
            var start = lines.FindIndex(l => l.StartsWith("# Knobs:", StringComparison.Ordinal));
            Assert.True(start >= 0, $"{step} has no '# Knobs:' line");
            var text = string.Join(' ', lines.Skip(start).TakeWhile((l, i) => i == 0 || ContinuationLine().IsMatch(l)).Select(l => l.TrimStart('#').Trim()));
            var list = text["Knobs:".Length..].Trim();
            var knobs = list == "none" ? [] : list.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries).ToHashSet(StringComparer.Ordinal);
            return new StepHeader(lines, knobs);
        }

        [GeneratedRegex(@"^#\s{3,}\S")]
        private static partial Regex ContinuationLine();
    }
}
