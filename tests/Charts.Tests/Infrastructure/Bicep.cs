using System.Collections.Concurrent;
using System.Text.Json;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>infra/'s Bicep files compiled to ARM JSON with the real Bicep CLI, once per file and test run.</summary>
public static class Bicep
{
    public static string Infra { get; } = RepositoryLayout.InRepository("infra");

    /// <summary>
    /// One build per file, shared by every test: the Bicep CLI starts slowly, and a build reports the
    /// linter's findings as warnings too (what <c>bicep lint</c> would print), so the build alone proves both.
    /// </summary>
    private static readonly ConcurrentDictionary<string, Lazy<ToolResult>> Builds = new(StringComparer.Ordinal);

    /// <summary>The build of <paramref name="file"/> (relative to infra/): <c>bicep build</c>, or <c>build-params</c> for a .bicepparam.</summary>
    public static ToolResult Build(string file) =>
        Builds.GetOrAdd(file, f => new(() => ExternalTool.Run(
            ExternalTool.Bicep, [f.EndsWith(".bicepparam", StringComparison.Ordinal) ? "build-params" : "build", f, "--stdout"], Infra))).Value;

    /// <summary>The ARM template <paramref name="file"/> compiles to; the build must succeed.</summary>
    public static JsonElement Compile(string file)
    {
        var result = Build(file);
        Assert.True(result.ExitCode == 0, result.Describe());
        return JsonDocument.Parse(result.StandardOutput).RootElement.Clone();
    }

    /// <summary>A template's resources, whether ARM lists them as an array or (language version 2) by symbolic name.</summary>
    public static IEnumerable<JsonElement> Resources(JsonElement arm)
    {
        var resources = arm.GetProperty("resources");
        return resources.ValueKind == JsonValueKind.Array
            ? resources.EnumerateArray().ToList()
            : resources.EnumerateObject().Select(r => r.Value).ToList();
    }
}
