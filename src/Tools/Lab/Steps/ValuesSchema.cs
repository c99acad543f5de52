using System.Text.Json;
using Json.Schema;

namespace DroneDelivery.Lab.Steps;

/// <summary>One way a values tree breaks the chart's schema: where (a JSON pointer, as helm prints it) and which rule.</summary>
internal sealed record SchemaViolation(string Location, string Keyword, string Message)
{
    public override string ToString() => $"at '{Location}': {Keyword}: {Message}";
}

/// <summary>
/// The chart's <c>values.schema.json</c> (JSON Schema draft 2020-12), applied to a step's values
/// before anything starts, as <c>helm install</c> applies it: on the coalesced values, converted to JSON.
/// </summary>
internal sealed class ValuesSchema
{
    private readonly JsonSchema? _schema;

    private ValuesSchema(JsonSchema? schema) => _schema = schema;

    /// <summary>The chart's schema; a chart without one accepts any values, as helm does.</summary>
    public static ValuesSchema Load(string chartDirectory)
    {
        var path = Path.Combine(chartDirectory, "values.schema.json");
        if (!File.Exists(path))
        {
            return new ValuesSchema(null);
        }

        // Each load registers the schema under its URI; a fresh registry per load lets the same file load twice.
        var options = new BuildOptions { SchemaRegistry = new SchemaRegistry() };
        return new ValuesSchema(JsonSchema.FromText(File.ReadAllText(path), options, new Uri(Path.GetFullPath(path))));
    }

    /// <summary>Every violation, most specific first, or none when the values meet the schema.</summary>
    public IReadOnlyList<SchemaViolation> Validate(ValuesTree values)
    {
        if (_schema is null)
        {
            return [];
        }

        using var document = JsonDocument.Parse(values.ToJson().ToJsonString());
        var results = _schema.Evaluate(document.RootElement, new EvaluationOptions { OutputFormat = OutputFormat.Hierarchical });
        if (results.IsValid)
        {
            return [];
        }

        var violations = new List<SchemaViolation>();
        Collect(results, violations);

        // anyOf and friends report the failure of their branches as well: keep the leaves, drop the summaries.
        var summaries = new HashSet<string>(StringComparer.Ordinal) { "anyOf", "oneOf", "allOf", "$ref", "properties", "items" };
        var leaves = violations.Where(v => !summaries.Contains(v.Keyword)).ToList();
        return [.. (leaves.Count > 0 ? leaves : violations).Distinct().OrderBy(v => v.Location, StringComparer.Ordinal)];
    }

    /// <summary>The errors of a failed evaluation node and of its failed children only (a branch of a passing anyOf, or the subschema of a 'not', fails without fault).</summary>
    private static void Collect(EvaluationResults node, List<SchemaViolation> into)
    {
        var location = node.InstanceLocation.ToString();
        foreach (var (keyword, message) in node.Errors ?? new Dictionary<string, string>())
        {
            // A property that additionalProperties: false refuses fails the 'false' schema at the
            // property itself; say so in the words of the rule, at the object that refuses it.
            if (node.EvaluationPath.ToString().Contains("/additionalProperties", StringComparison.Ordinal) && keyword.Length == 0)
            {
                var slash = location.LastIndexOf('/');
                into.Add(new SchemaViolation(slash > 0 ? location[..slash] : "/", "additionalProperties", $"'{Unescape(location[(slash + 1)..])}' not allowed"));
                continue;
            }

            into.Add(new SchemaViolation(location.Length == 0 ? "/" : location, keyword, message));
        }

        var failedChildren = (node.Details ?? []).Where(d => !d.IsValid).ToList();
        foreach (var child in failedChildren)
        {
            Collect(child, into);
        }

        // 'not' fails without a message of its own, and its subschema's node says valid (it matched):
        // name the rule from where it sits in the schema.
        if (node.Errors is not { Count: > 0 } && failedChildren.Count == 0)
        {
            var keyword = (node.Details ?? []).Any(d => d.IsValid && d.EvaluationPath.ToString().EndsWith("/not", StringComparison.Ordinal))
                ? "not"
                : node.EvaluationPath.ToString().Split('/')[^1];
            into.Add(new SchemaViolation(location.Length == 0 ? "/" : location, keyword, keyword == "not" ? "the value is one the schema excludes" : "failed"));
        }
    }

    private static string Unescape(string segment) => segment.Replace("~1", "/", StringComparison.Ordinal).Replace("~0", "~", StringComparison.Ordinal);
}
