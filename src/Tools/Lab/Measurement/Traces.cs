using System.Globalization;
using System.Text.Json;

namespace DroneDelivery.Lab.Measurement;

/// <summary>One span of a trace as the dashboard holds it: who, what, when, and whether it failed.</summary>
internal sealed record TraceSpan(string Service, string Name, string SpanId, string ParentId, double StartMs, double DurationMs, bool Failed)
{
    /// <summary>Attributes that say what a Cosmos DB emulator span did: its RU, its partitions, a throttle.</summary>
    public IReadOnlyDictionary<string, string> Attributes { get; init; } = new Dictionary<string, string>(StringComparer.Ordinal);

    public bool Throttled => Attributes.TryGetValue("cosmos_emulator.throttled", out var value) && value == "true"
        || Attributes.TryGetValue("http.response.status_code", out var status) && status == "429";
}

/// <summary>One trace: its spans, times in ms from the earliest span's start.</summary>
internal sealed record Trace(string TraceId, IReadOnlyList<TraceSpan> Spans)
{
    /// <summary>When the earliest span started.</summary>
    public DateTimeOffset StartedAt { get; init; }

    public TraceSpan? Root => Roots().FirstOrDefault();

    public double DurationMs => Spans.Count == 0 ? 0 : Spans.Max(s => s.StartMs + s.DurationMs);

    /// <summary>The spans parent first, each one's children by start time: the waterfall's rows, with their depth.</summary>
    public IReadOnlyList<(TraceSpan Span, int Depth)> InTreeOrder()
    {
        var rows = new List<(TraceSpan, int)>();
        var children = Spans.ToLookup(s => s.ParentId);
        void Visit(TraceSpan span, int depth)
        {
            rows.Add((span, depth));
            foreach (var child in children[span.SpanId].OrderBy(c => c.StartMs).ThenBy(c => c.Name, StringComparer.Ordinal))
            {
                Visit(child, depth + 1);
            }
        }

        foreach (var root in Roots().OrderBy(s => s.StartMs))
        {
            Visit(root, 0);
        }

        return rows;
    }

    /// <summary>The spans without a parent in this trace: the root, and any whose parent the dashboard did not receive.</summary>
    private IEnumerable<TraceSpan> Roots()
    {
        var ids = Spans.Select(s => s.SpanId).ToHashSet(StringComparer.Ordinal);
        return Spans.Where(s => s.ParentId.Length == 0 || !ids.Contains(s.ParentId));
    }
}

/// <summary>
/// Traces from the Aspire dashboard's telemetry API (OTLP JSON) — the lab keeps no spans of its own — and the choice
/// of the one to draw for a step.
/// </summary>
internal static class Traces
{
    /// <summary>How many of the newest traces a step's reading asks the dashboard for.</summary>
    internal const int Newest = 2000;

    /// <summary>Longer than the exporters' batch interval (5 s): a trace that ended this long ago has all its spans in the dashboard.</summary>
    public static readonly TimeSpan ExportDelay = TimeSpan.FromSeconds(7);

    /// <summary>The traces whose root span is named <paramref name="rootName"/> and that ran between <paramref name="from"/> and <paramref name="until"/>.</summary>
    public static async Task<IReadOnlyList<Trace>> ReadAsync(HttpClient http, Uri dashboard, string rootName, DateTimeOffset from, DateTimeOffset until, CancellationToken cancellationToken)
    {
        var json = await http.GetStringAsync(new Uri(dashboard, $"api/telemetry/traces?limit={Newest.ToString(CultureInfo.InvariantCulture)}"), cancellationToken).ConfigureAwait(false);
        return [.. Parse(json).Where(t => t.Root is { } root && root.Name == rootName && t.StartedAt >= from && t.StartedAt.AddMilliseconds(t.DurationMs) <= until)];
    }

    /// <summary>
    /// The step's representative slow request: the trace at the 90th percentile of the traces' durations (from the first span to the last: for a delivery request, its wait in the queue too) — slow enough
    /// to show where the time goes when it goes wrong, common enough not to be a one-off.
    /// </summary>
    public static Trace? Representative(IReadOnlyList<Trace> traces)
    {
        if (traces.Count == 0)
        {
            return null;
        }

        var ordered = traces.OrderBy(t => t.DurationMs).ToList();
        return ordered[(int)Math.Min(ordered.Count - 1, Math.Floor(0.9 * ordered.Count))];
    }

    /// <summary>Parses the dashboard's OTLP JSON into traces, each with times relative to its earliest span.</summary>
    internal static IReadOnlyList<Trace> Parse(string json)
    {
        using var document = JsonDocument.Parse(json);
        var spans = new List<(string TraceId, long StartNanos, long EndNanos, TraceSpan Span)>();
        foreach (var resource in document.RootElement.GetProperty("data").GetProperty("resourceSpans").EnumerateArray())
        {
            var service = resource.GetProperty("resource").GetProperty("attributes").EnumerateArray()
                .Where(a => a.GetProperty("key").GetString() == "service.name")
                .Select(a => a.GetProperty("value").GetProperty("stringValue").GetString())
                .FirstOrDefault() ?? "?";
            foreach (var scope in resource.GetProperty("scopeSpans").EnumerateArray())
            {
                foreach (var span in scope.GetProperty("spans").EnumerateArray())
                {
                    var start = long.Parse(span.GetProperty("startTimeUnixNano").GetString()!, CultureInfo.InvariantCulture);
                    var end = long.Parse(span.GetProperty("endTimeUnixNano").GetString()!, CultureInfo.InvariantCulture);
                    var failed = span.TryGetProperty("status", out var status) && status.TryGetProperty("code", out var code) && code.ValueKind == JsonValueKind.Number && code.GetInt32() == 2;
                    spans.Add((span.GetProperty("traceId").GetString()!, start, end, new TraceSpan(
                        service,
                        span.GetProperty("name").GetString() ?? "?",
                        span.GetProperty("spanId").GetString()!,
                        span.TryGetProperty("parentSpanId", out var parent) ? parent.GetString() ?? string.Empty : string.Empty,
                        0,
                        (end - start) / 1e6,
                        failed)
                    {
                        Attributes = Attributes(span),
                    }));
                }
            }
        }

        return [.. spans.GroupBy(s => s.TraceId).Select(g =>
        {
            var origin = g.Min(s => s.StartNanos);
            return new Trace(g.Key, [.. g.Select(s => s.Span with { StartMs = (s.StartNanos - origin) / 1e6 })])
            {
                StartedAt = DateTimeOffset.FromUnixTimeMilliseconds(origin / 1_000_000),
            };
        })];
    }

    private static Dictionary<string, string> Attributes(JsonElement span)
    {
        var attributes = new Dictionary<string, string>(StringComparer.Ordinal);
        if (span.TryGetProperty("attributes", out var list))
        {
            foreach (var attribute in list.EnumerateArray())
            {
                // OTLP JSON wraps each value in its type: {"stringValue": "…"}, {"boolValue": true}, {"doubleValue": 1.5}.
                var value = attribute.GetProperty("value").EnumerateObject().FirstOrDefault().Value;
                attributes[attribute.GetProperty("key").GetString()!] = value.ValueKind switch
                {
                    JsonValueKind.True => "true",
                    JsonValueKind.False => "false",
                    JsonValueKind.Undefined or JsonValueKind.Null => string.Empty,
                    _ => value.ToString(),
                };
            }
        }

        return attributes;
    }
}
