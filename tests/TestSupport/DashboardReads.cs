using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.LocalProcesses;
using Xunit;

namespace DroneDelivery.TestSupport;

/// <summary>What the chart's Grafana dashboards read: each metric their PromQL names, with the labels it groups by.</summary>
internal static partial class DashboardReads
{
    private static readonly string Dashboards = RepositoryLayout.InRepository("charts", "dronedelivery", "dashboards");

    /// <summary>Metrics whose name starts with <paramref name="prefix"/>, each with the labels of the <c>by (…)</c> clauses of the expressions that read it.</summary>
    public static IReadOnlyDictionary<string, IReadOnlySet<string>> Of(string prefix)
    {
        var reads = new Dictionary<string, HashSet<string>>(StringComparer.Ordinal);
        foreach (var file in Directory.EnumerateFiles(Dashboards, "*.json"))
        {
            foreach (var expr in Expressions(JsonDocument.Parse(File.ReadAllText(file)).RootElement))
            {
                var labels = ByClause().Matches(expr).SelectMany(m => m.Groups[1].Value.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries));
                foreach (var name in MetricName().Matches(expr).Select(m => m.Value).Where(n => n.StartsWith(prefix, StringComparison.Ordinal)))
                {
                    var set = reads.TryGetValue(name, out var existing) ? existing : reads[name] = new HashSet<string>(StringComparer.Ordinal);
                    set.UnionWith(labels.Where(l => l != "le"));
                }
            }
        }

        Assert.NotEmpty(reads);
        return reads.ToDictionary(r => r.Key, r => (IReadOnlySet<string>)r.Value, StringComparer.Ordinal);
    }

    private static IEnumerable<string> Expressions(JsonElement element) => element.ValueKind switch
    {
        JsonValueKind.Object => element.EnumerateObject().SelectMany(p =>
            p.Name == "expr" && p.Value.ValueKind == JsonValueKind.String ? [p.Value.GetString()!] : Expressions(p.Value)),
        JsonValueKind.Array => element.EnumerateArray().SelectMany(Expressions),
        _ => [],
    };

    [GeneratedRegex(@"\bby\s*\(([^)]*)\)")]
    private static partial Regex ByClause();

    [GeneratedRegex(@"[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*[{\[])")]
    private static partial Regex MetricName();
}
