using System.Globalization;
using System.Net;
using System.Text;
using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Reporting;

/// <summary>
/// A trace drawn as a waterfall (SVG): one row per span, parent before its children, each bar where and as long as the
/// span ran on a shared time axis. Bars are coloured by service; a failed span is red, a throttled Cosmos DB call
/// (a 429 the SDK retries) red with a dashed outline — the gap after one is its retry wait.
/// </summary>
internal static class Waterfall
{
    private const int Width = 1100;
    private const int LabelWidth = 420;
    private const int RowHeight = 18;
    private const int Top = 48;

    /// <summary>More rows than this are cut, with a note: a trace of hundreds of spans is read in the dashboard.</summary>
    internal const int MaxRows = 120;

    private static readonly string[] Palette = ["#2f6fdf", "#e8590c", "#2b8a3e", "#7048e8", "#0b7285", "#e67700", "#5c940d", "#862e9c", "#495057"];

    public static string ToSvg(Trace trace, string title)
    {
        static string E(string text) => WebUtility.HtmlEncode(text);
        static string N(double value) => value.ToString("0.#", CultureInfo.InvariantCulture);
        var rows = trace.InTreeOrder();
        var shown = rows.Take(MaxRows).ToList();
        var total = Math.Max(trace.DurationMs, 0.001);
        var services = rows.Select(r => r.Span.Service).Distinct().Order(StringComparer.Ordinal).ToList();
        var plot = Width - LabelWidth - 70;
        var height = Top + (shown.Count * RowHeight) + (rows.Count > shown.Count ? 40 : 24);
        var svg = new StringBuilder();
        svg.Append(CultureInfo.InvariantCulture, $"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{Width}\" height=\"{height}\" font-family=\"system-ui,sans-serif\" font-size=\"11\">");
        svg.Append(CultureInfo.InvariantCulture, $"<rect width=\"{Width}\" height=\"{height}\" fill=\"#fff\"/>");
        svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Width / 2}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">{E(title)}</text>");
        svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Width / 2}\" y=\"34\" text-anchor=\"middle\" fill=\"#555\">{E($"{rows.Count} spans, {N(total)} ms, {services.Count} services ({string.Join(", ", services)})")}</text>");
        for (var tick = 0; tick <= 4; tick++)
        {
            var x = LabelWidth + (plot * tick / 4.0);
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{N(x)}\" y1=\"{Top - 4}\" x2=\"{N(x)}\" y2=\"{Top + (shown.Count * RowHeight)}\" stroke=\"#eee\"/>");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{N(x)}\" y=\"{Top - 6}\" text-anchor=\"middle\" fill=\"#777\">{N(total * tick / 4)} ms</text>");
        }

        for (var i = 0; i < shown.Count; i++)
        {
            var (span, depth) = shown[i];
            var y = Top + (i * RowHeight);
            var x = LabelWidth + (plot * span.StartMs / total);
            var w = Math.Max(1, plot * span.DurationMs / total);
            var colour = span.Failed || span.Throttled ? "#d00000" : Palette[services.IndexOf(span.Service) % Palette.Length];
            var label = $"{span.Service}: {span.Name}";
            var indent = Math.Min(depth, 12) * 10;
            var fits = (LabelWidth - 8 - indent) / 6;
            svg.Append("<g>");
            svg.Append(CultureInfo.InvariantCulture, $"<title>{E($"{label} — starts at {N(span.StartMs)} ms, lasts {N(span.DurationMs)} ms{(span.Throttled ? ", throttled (429)" : string.Empty)}{(span.Failed ? ", failed" : string.Empty)}")}</title>");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{4 + indent}\" y=\"{y + 13}\">{E(label.Length > fits ? label[..Math.Max(1, fits - 1)] + "…" : label)}</text>");
            svg.Append(CultureInfo.InvariantCulture, $"<rect x=\"{N(x)}\" y=\"{y + 3}\" width=\"{N(w)}\" height=\"{RowHeight - 6}\" fill=\"{colour}\"{(span.Throttled ? " stroke=\"#000\" stroke-dasharray=\"3 2\"" : string.Empty)}/>");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{N(Math.Min(x + w + 3, Width - 60))}\" y=\"{y + 13}\" fill=\"#333\">{N(span.DurationMs)} ms</text>");
            svg.Append("</g>");
        }

        if (rows.Count > shown.Count)
        {
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"4\" y=\"{Top + (shown.Count * RowHeight) + 20}\" fill=\"#777\">{rows.Count - shown.Count} more spans: open the trace in the dashboard (--dashboard).</text>");
        }

        svg.Append("</svg>");
        return svg.ToString();
    }
}
