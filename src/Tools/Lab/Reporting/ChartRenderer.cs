using System.Text.Json;
using System.Text.Json.Nodes;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Reporting;

/// <summary>A chart to render: an Apache ECharts option object and the SVG file it becomes.</summary>
internal sealed record ChartSpec(string FileName, string Title, JsonObject Option, int Width = 900, int Height = 420);

/// <summary>
/// Renders charts to SVG with Apache ECharts' server-side renderer in Node.js
/// (<c>src/Tools/Lab/charts/render.mjs</c>; <c>.ci/setup</c> installs its one npm package).
/// </summary>
internal static class ChartRenderer
{
    private static readonly JsonSerializerOptions Json = new() { WriteIndented = false };

    public static string ScriptDirectory => RepositoryLayout.InRepository("src", "Tools", "Lab", "charts");

    /// <summary>Writes every chart into <paramref name="directory"/> and returns the files written.</summary>
    /// <exception cref="InvalidOperationException">Node.js or the renderer's packages are missing, or a chart failed.</exception>
    public static async Task<IReadOnlyList<string>> RenderAsync(IReadOnlyList<ChartSpec> charts, string directory, CancellationToken cancellationToken)
    {
        if (charts.Count == 0)
        {
            return [];
        }

        if (!Directory.Exists(Path.Combine(ScriptDirectory, "node_modules", "echarts")))
        {
            throw new InvalidOperationException(
                $"The chart renderer's packages are not installed. Run .ci/setup (or: cd {ScriptDirectory} && npm ci).");
        }

        // The renderer runs in its own folder: a relative --output must not be read from there.
        directory = Path.GetFullPath(directory);
        Directory.CreateDirectory(directory);
        var specsFile = Path.Combine(directory, "charts.json");
        var specs = new JsonArray([.. charts.Select(chart => (JsonNode)new JsonObject
        {
            ["file"] = Path.Combine(directory, chart.FileName),
            ["width"] = chart.Width,
            ["height"] = chart.Height,
            ["option"] = chart.Option.DeepClone(),
        })]);
        await File.WriteAllTextAsync(specsFile, specs.ToJsonString(Json), cancellationToken).ConfigureAwait(false);

        var renderer = await LocalProcess.StartAsync(
            new LocalProcessSpec
            {
                Name = "chart-renderer",
                FileName = "node",
                Arguments = [Path.Combine(ScriptDirectory, "render.mjs"), specsFile],
                WorkingDirectory = ScriptDirectory,
            },
            cancellationToken).ConfigureAwait(false);

        await using (renderer.ConfigureAwait(false))
        {
            var exitCode = await renderer.Exited.WaitAsync(TimeSpan.FromMinutes(2), cancellationToken).ConfigureAwait(false);
            if (exitCode == 127)
            {
                throw new InvalidOperationException("Node.js is needed to render the report's charts (node was not found). Run .ci/setup.");
            }

            if (exitCode != 0)
            {
                throw new InvalidOperationException(
                    $"Rendering the charts failed (exit code {exitCode}):{Environment.NewLine}{string.Join(Environment.NewLine, renderer.RecentOutput)}");
            }
        }

        File.Delete(specsFile);
        return [.. charts.Select(chart => Path.Combine(directory, chart.FileName))];
    }
}
