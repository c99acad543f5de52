using System.Xml.Linq;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// A step's trace: an A1 invoice recorded from the Aspire dashboard's telemetry API (<c>Recorded/A1/trace.json</c>,
/// OTLP JSON), read into spans, ordered as a waterfall's rows and drawn.
/// </summary>
public sealed class TraceWaterfallTests
{
    private static Trace RecordedA1() =>
        Assert.Single(Traces.Parse(File.ReadAllText(RepositoryLayout.InRepository("tests", "Tools", "Lab.Tests", "Recorded", "A1", "trace.json"))));

    [Fact]
    public void The_recorded_A1_invoice_is_one_trace_rooted_at_the_gateway_with_DroneSchedulers_nine_queries_in_series()
    {
        var trace = RecordedA1();

        Assert.Equal(49, trace.Spans.Count);
        Assert.Equal(("gateway", "GET /api/invoices/{ownerId}"), (trace.Root!.Service, trace.Root.Name));
        Assert.Equal(0, trace.Root.StartMs);
        Assert.InRange(trace.DurationMs, 780, 790);
        var queries = trace.Spans.Where(s => s is { Service: "dronescheduler", Name: "query utilization" }).OrderBy(s => s.StartMs).ToList();
        Assert.Equal(9, queries.Count);
        // In series: each query starts once the one before it has ended.
        Assert.All(queries.Zip(queries.Skip(1)), pair => Assert.True(pair.Second.StartMs >= pair.First.StartMs + pair.First.DurationMs - 0.5, $"{pair.First} then {pair.Second}"));
    }

    [Fact]
    public void The_waterfalls_rows_put_each_span_under_its_parent_in_start_order()
    {
        var rows = RecordedA1().InTreeOrder();

        Assert.Equal(49, rows.Count);
        Assert.Equal((0, "GET /api/invoices/{ownerId}"), (rows[0].Depth, rows[0].Span.Name));
        var ids = new Dictionary<string, int>();
        for (var i = 0; i < rows.Count; i++)
        {
            ids[rows[i].Span.SpanId] = i;
            if (rows[i].Depth > 0)
            {
                Assert.True(ids.TryGetValue(rows[i].Span.ParentId, out var parent) && parent < i && rows[parent].Depth == rows[i].Depth - 1, rows[i].Span.ToString());
            }
        }
    }

    [Fact]
    public void The_waterfall_is_an_SVG_with_a_bar_per_span_and_marks_a_throttled_call()
    {
        var trace = RecordedA1();
        var throttled = trace with { Spans = [.. trace.Spans.Select((s, i) => i == 5 ? s with { Attributes = new Dictionary<string, string> { ["cosmos_emulator.throttled"] = "true" } } : s)] };

        var svg = XDocument.Parse(Waterfall.ToSvg(throttled, "A1: a <representative> slow request"));

        XNamespace ns = "http://www.w3.org/2000/svg";
        var bars = svg.Descendants(ns + "g").Select(g => g.Element(ns + "rect")).ToList();
        Assert.Equal(49, bars.Count);
        Assert.Single(bars, b => (string?)b!.Attribute("stroke-dasharray") is not null);
        Assert.Contains(svg.Descendants(ns + "text"), t => t.Value == "A1: a <representative> slow request");
        Assert.Contains(svg.Descendants(ns + "title"), t => t.Value.StartsWith("dronescheduler: query utilization — starts at", StringComparison.Ordinal));
    }

    [Fact]
    public void The_representative_request_is_the_90th_percentile_of_the_traced_ones()
    {
        var traces = Enumerable.Range(1, 20)
            .Select(ms => new Trace($"t{ms}", [new TraceSpan("gateway", "GET /api/invoices/{ownerId}", $"s{ms}", string.Empty, 0, ms, false)]))
            .Reverse()
            .ToList();

        Assert.Equal("t19", Traces.Representative(traces)!.TraceId);
        Assert.Null(Traces.Representative([]));
    }
}
