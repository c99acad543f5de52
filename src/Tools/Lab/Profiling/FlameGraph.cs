using System.Globalization;
using System.Text;
using System.Xml;

namespace DroneDelivery.Lab.Profiling;

/// <summary>A frame's share of a profile's samples: in the frame itself (self) and in it or anything it called (total).</summary>
internal sealed record FrameShare(string Frame, long SelfSamples, long TotalSamples, double SelfPercent, double TotalPercent);

/// <summary>The frames with the most samples in total and the frames with the most samples of their own; as text, one table each.</summary>
internal sealed record FrameRanking(string Title, IReadOnlyList<FrameShare> ByTotal, IReadOnlyList<FrameShare> BySelf)
{
    public override string ToString()
    {
        var text = new StringBuilder();
        text.Append(Title).Append('\n');
        text.Append("\nMost samples in the frame and what it called (total):\n").Append("  total %   self %  frame\n");
        foreach (var frame in ByTotal)
        {
            text.Append(CultureInfo.InvariantCulture, $"{frame.TotalPercent,7:0.0} % {frame.SelfPercent,6:0.0} %  {frame.Frame}\n");
        }

        text.Append("\nMost samples in the frame itself (self):\n").Append("   self %  total %  frame\n");
        foreach (var frame in BySelf)
        {
            text.Append(CultureInfo.InvariantCulture, $"{frame.SelfPercent,7:0.0} % {frame.TotalPercent,6:0.0} %  {frame.Frame}\n");
        }

        return text.ToString();
    }
}

/// <summary>
/// A flame graph of folded stacks: each frame a rectangle as wide as its share of the samples, standing on the frame
/// that called it, the threads' roots at the bottom and the frames that ran at the top; a frame's callees are side
/// by side in the order of their names, so the same stacks draw the same picture whatever order they come in. Frames
/// of this repository's code (<c>DroneDelivery.*</c>) are orange, the framework's (<c>System.*</c>,
/// <c>Microsoft.*</c>) yellow, anything else red and unresolved ones grey.
/// </summary>
internal sealed class FlameGraph
{
    /// <summary>The drawing's width in pixels unless one is asked for: a 1200-pixel-wide page shows it at full size.</summary>
    public const int DefaultWidth = 1200;

    /// <summary>The root every stack stands on: all the samples.</summary>
    public const string RootFrame = "all";

    private const double FrameHeight = 17;
    private const double FontSize = 12;

    /// <summary>The width of a character of the monospace font at <see cref="FontSize"/>, in pixels.</summary>
    private const double CharacterWidth = FontSize * 0.6;

    private const double Margin = 10;
    private const string Background = "#f8f8f4";
    private const double TitleHeight = 52;

    private const string Hint = "Each frame is as wide as its share of the samples and stands on its caller; hover a frame for its samples.";

    /// <summary>Frames narrower than this many pixels are left out, with what they called: nothing could be seen of them.</summary>
    private const double NarrowestFrame = 0.1;

    private readonly Node _root = new(RootFrame);
    private readonly string? _subtitle;

    /// <param name="stacks">The folded stacks; stacks with no samples are left out.</param>
    /// <param name="processName">The process the title names.</param>
    /// <param name="subtitle">A line under the title saying what the samples are (which threads, how long), if any.</param>
    public FlameGraph(IEnumerable<FoldedStack> stacks, string processName, string? subtitle = null)
    {
        ProcessName = processName;
        _subtitle = subtitle;
        foreach (var stack in stacks)
        {
            if (stack.Samples <= 0)
            {
                continue;
            }

            var node = _root;
            node.Total += stack.Samples;
            foreach (var frame in stack.Frames)
            {
                node = node.Child(frame);
                node.Total += stack.Samples;
            }

            node.Self += stack.Samples;
        }

        Depth = DepthOf(_root) - 1;
    }

    public string ProcessName { get; }

    public long TotalSamples => _root.Total;

    /// <summary>The most frames in one stack.</summary>
    public int Depth { get; }

    /// <summary>"CPU profile of NAME: N samples", the drawing's title.</summary>
    public string Title => string.Create(CultureInfo.InvariantCulture, $"CPU profile of {ProcessName}: {TotalSamples:N0} {(TotalSamples == 1 ? "sample" : "samples")}");

    /// <summary>
    /// The <paramref name="count"/> frames with the most samples in total (in them or in what they called) and the
    /// <paramref name="count"/> with the most samples of their own. A frame is counted once per stack however often it
    /// recurs in it; ties go to the frame with more self samples, then by name.
    /// </summary>
    public FrameRanking TopFrames(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        var totals = new Dictionary<string, (long Self, long Total)>(StringComparer.Ordinal);
        var onStack = new HashSet<string>(StringComparer.Ordinal);
        Visit(_root);

        var shares = totals.Select(t => new FrameShare(t.Key, t.Value.Self, t.Value.Total, Percent(t.Value.Self), Percent(t.Value.Total))).ToList();
        return new FrameRanking(
            Title,
            [.. shares.OrderByDescending(s => s.TotalSamples).ThenByDescending(s => s.SelfSamples).ThenBy(s => s.Frame, StringComparer.Ordinal).Take(count)],
            [.. shares.Where(s => s.SelfSamples > 0).OrderByDescending(s => s.SelfSamples).ThenByDescending(s => s.TotalSamples).ThenBy(s => s.Frame, StringComparer.Ordinal).Take(count)]);

        void Visit(Node node)
        {
            foreach (var child in node.Children.Values)
            {
                var outermost = onStack.Add(child.Name);
                var known = totals.GetValueOrDefault(child.Name);
                totals[child.Name] = (known.Self + child.Self, known.Total + (outermost ? child.Total : 0));
                Visit(child);
                if (outermost)
                {
                    onStack.Remove(child.Name);
                }
            }
        }
    }

    /// <summary>The flame graph as an SVG document <paramref name="width"/> pixels wide.</summary>
    public string ToSvg(int width = DefaultWidth)
    {
        using var stream = new MemoryStream();
        WriteSvg(stream, width);
        return Encoding.UTF8.GetString(stream.ToArray());
    }

    /// <summary>Writes <see cref="ToSvg"/> to <paramref name="path"/>, creating its directory.</summary>
    public void WriteSvg(string path, int width = DefaultWidth)
    {
        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
        using var file = File.Create(path);
        WriteSvg(file, width);
    }

    private void WriteSvg(Stream stream, int width)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(width, 200);
        var levels = TotalSamples == 0 ? 0 : Depth + 1;
        var titleHeight = TitleHeight + (_subtitle is null ? 0 : FontSize + 4);
        var height = titleHeight + (levels * FrameHeight) + Margin + FrameHeight;
        var settings = new XmlWriterSettings { Indent = true, IndentChars = " ", Encoding = new UTF8Encoding(false), NewLineChars = "\n" };
        using var svg = XmlWriter.Create(stream, settings);
        svg.WriteStartDocument();
        svg.WriteStartElement("svg", "http://www.w3.org/2000/svg");
        svg.WriteAttributeString("version", "1.1");
        svg.WriteAttributeString("width", Number(width));
        svg.WriteAttributeString("height", Number(height));
        svg.WriteAttributeString("viewBox", $"0 0 {Number(width)} {Number(height)}");
        svg.WriteAttributeString("font-family", "DejaVu Sans Mono, Menlo, Consolas, monospace");
        svg.WriteAttributeString("font-size", Number(FontSize));

        Element(svg, "rect", ("x", "0"), ("y", "0"), ("width", Number(width)), ("height", Number(height)), ("fill", Background));
        Text(svg, Title, width / 2.0, 22, ("text-anchor", "middle"), ("font-size", Number(FontSize + 5)));
        var line = 40.0;
        foreach (var text in new[] { _subtitle, Hint }.OfType<string>())
        {
            Text(svg, text, width / 2.0, line, ("text-anchor", "middle"), ("fill", "#555555"));
            line += FontSize + 4;
        }

        if (TotalSamples == 0)
        {
            Text(svg, "No samples.", width / 2.0, titleHeight + FrameHeight, ("text-anchor", "middle"));
        }
        else
        {
            var scale = (width - (2 * Margin)) / TotalSamples;
            var bottom = titleHeight + (Depth * FrameHeight);
            Draw(svg, _root, Margin, bottom, scale);
        }

        svg.WriteEndElement();
        svg.WriteEndDocument();
    }

    private void Draw(XmlWriter svg, Node node, double x, double y, double scale)
    {
        var width = node.Total * scale;
        svg.WriteStartElement("g");
        svg.WriteElementString(
            "title",
            Printable(string.Create(CultureInfo.InvariantCulture, $"{node.Name} — {node.Total:N0} {(node.Total == 1 ? "sample" : "samples")}, {Percent(node.Total):0.##} % (self {node.Self:N0}, {Percent(node.Self):0.##} %)")));
        Element(
            svg,
            "rect",
            ("x", Number(x)),
            ("y", Number(y)),
            ("width", Number(width)),
            ("height", Number(FrameHeight - 1)),
            ("rx", "2"),
            ("fill", Colour(node.Name, node == _root)),
            ("stroke", Background),
            ("stroke-width", "0.5"));
        if (Label(node.Name, width) is { } label)
        {
            Text(svg, label, x + 3, y + FrameHeight - 5);
        }

        svg.WriteEndElement();

        var childX = x;
        foreach (var child in node.Children.Values.OrderBy(c => c.Name, StringComparer.Ordinal))
        {
            if (child.Total * scale >= NarrowestFrame)
            {
                Draw(svg, child, childX, y - FrameHeight, scale);
            }

            childX += child.Total * scale;
        }
    }

    /// <summary>
    /// The frame's name as it fits in <paramref name="width"/> pixels: whole; else without its namespace
    /// (<c>Type.Method</c>); else the end of that after "..", since the method's name is at the end; null when not
    /// even three characters fit.
    /// </summary>
    internal static string? Label(string name, double width)
    {
        var fits = (int)Math.Floor((width - 6) / CharacterWidth);
        if (fits < 3)
        {
            return null;
        }

        var printable = Printable(name);
        if (printable.Length <= fits)
        {
            return printable;
        }

        var shorter = WithoutNamespace(printable);
        return shorter.Length <= fits ? shorter : ".." + shorter[^(fits - 2)..];
    }

    /// <summary>
    /// <c>Type.Method</c> of <c>Namespace.Type.Method</c>: from the last but one dot outside the brackets of generic
    /// arguments (<c>List`1[System.String].Add</c> keeps its argument's namespace).
    /// </summary>
    private static string WithoutNamespace(string name)
    {
        var dots = 0;
        var depth = 0;
        for (var i = name.Length - 1; i > 0; i--)
        {
            depth += name[i] switch { ']' => 1, '[' => -1, _ => 0 };
            if (depth == 0 && name[i] == '.' && ++dots == 2)
            {
                return name[(i + 1)..];
            }
        }

        return name;
    }

    /// <summary>
    /// A colour per kind of frame, its shade from a hash of the name that is the same in every process, so that a
    /// frame keeps its colour from one drawing to the next and neighbours differ.
    /// </summary>
    private static string Colour(string name, bool root)
    {
        if (root || name == "?" || name.Contains('!', StringComparison.Ordinal))
        {
            return "#c8c8c8";
        }

        var hash = 2166136261u;
        foreach (var character in name)
        {
            hash = (hash ^ character) * 16777619u;
        }

        // Two independent shades from the hash, so that neighbours of one kind differ in hue and in brightness.
        var hue = (int)(hash % 50);
        var light = (int)((hash / 50) % 30);
        var (red, green, blue) = name switch
        {
            _ when name.StartsWith("DroneDelivery.", StringComparison.Ordinal) => (250 - light, 120 + hue, 30 + light),
            _ when name.StartsWith("System.", StringComparison.Ordinal) || name.StartsWith("Microsoft.", StringComparison.Ordinal) => (235 - light, 180 + hue, 50 + light),
            _ => (225 - light, 70 + hue, 60 + light),
        };
        return string.Create(CultureInfo.InvariantCulture, $"#{red:x2}{green:x2}{blue:x2}");
    }

    private double Percent(long samples) => TotalSamples == 0 ? 0 : 100.0 * samples / TotalSamples;

    private static int DepthOf(Node node) => 1 + node.Children.Values.Select(DepthOf).DefaultIfEmpty(0).Max();

    private static void Text(XmlWriter svg, string text, double x, double y, params (string Name, string Value)[] attributes)
    {
        svg.WriteStartElement("text");
        svg.WriteAttributeString("x", Number(x));
        svg.WriteAttributeString("y", Number(y));
        foreach (var (name, value) in attributes)
        {
            svg.WriteAttributeString(name, value);
        }

        svg.WriteString(Printable(text));
        svg.WriteEndElement();
    }

    private static void Element(XmlWriter svg, string element, params (string Name, string Value)[] attributes)
    {
        svg.WriteStartElement(element);
        foreach (var (name, value) in attributes)
        {
            svg.WriteAttributeString(name, value);
        }

        svg.WriteEndElement();
    }

    private static string Number(double value) => value.ToString("0.##", CultureInfo.InvariantCulture);

    /// <summary>The text with every character XML cannot hold (control characters, lone surrogates) as '?'.</summary>
    private static string Printable(string text)
    {
        var printable = new StringBuilder(text.Length);
        for (var i = 0; i < text.Length; i++)
        {
            if (i + 1 < text.Length && XmlConvert.IsXmlSurrogatePair(text[i + 1], text[i]))
            {
                printable.Append(text, i, 2);
                i++;
            }
            else
            {
                printable.Append(XmlConvert.IsXmlChar(text[i]) ? text[i] : '?');
            }
        }

        return printable.ToString();
    }

    private sealed class Node(string name)
    {
        public string Name { get; } = name;

        public long Total { get; set; }

        public long Self { get; set; }

        public Dictionary<string, Node> Children { get; } = new(StringComparer.Ordinal);

        public Node Child(string frame)
        {
            if (!Children.TryGetValue(frame, out var child))
            {
                child = new Node(frame);
                Children[frame] = child;
            }

            return child;
        }
    }
}
