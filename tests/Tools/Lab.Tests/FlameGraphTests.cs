using System.Globalization;
using System.Xml.Linq;
using DroneDelivery.Lab.Profiling;

namespace DroneDelivery.Lab.Tests;

/// <summary>The flame graph and the top frames of hand-made folded stacks.</summary>
public sealed class FlameGraphTests
{
    private static readonly XNamespace Svg = "http://www.w3.org/2000/svg";

    /// <summary>100 samples: Main 100 (A 40: B 30, C 10; D 60), of which D's own 60 and B's and C's.</summary>
    private static readonly string[] Sample =
    [
        "Program.Main;Work.A;Work.B 30",
        "Program.Main;Work.A;Work.C 10",
        "Program.Main;Work.D 60",
    ];

    [Fact]
    public void Each_frame_is_as_wide_as_its_share_of_the_samples()
    {
        var frames = Frames(Graph(Sample).ToSvg(1200));

        var all = frames[FlameGraph.RootFrame];
        Assert.Equal(1180, all.Width, 3); // the width less a margin of 10 pixels each side
        Assert.Equal(all.Width, frames["Program.Main"].Width, 3);
        Assert.Equal(all.Width * 0.4, frames["Work.A"].Width, 3);
        Assert.Equal(all.Width * 0.6, frames["Work.D"].Width, 3);
        Assert.Equal(frames["Work.C"].Width * 3, frames["Work.B"].Width, 3);
        Assert.Equal(frames["Work.A"].Width, frames["Work.B"].Width + frames["Work.C"].Width, 3);
    }

    [Fact]
    public void A_frame_stands_on_its_caller_within_its_callers_width_and_callees_are_side_by_side_by_name()
    {
        var frames = Frames(Graph(Sample).ToSvg());

        AssertStandsOn(frames["Program.Main"], frames[FlameGraph.RootFrame]);
        AssertStandsOn(frames["Work.A"], frames["Program.Main"]);
        AssertStandsOn(frames["Work.D"], frames["Program.Main"]);
        AssertStandsOn(frames["Work.B"], frames["Work.A"]);
        AssertStandsOn(frames["Work.C"], frames["Work.A"]);
        Assert.Equal(frames["Work.A"].X + frames["Work.A"].Width, frames["Work.D"].X, 3);
        Assert.Equal(frames["Work.B"].X + frames["Work.B"].Width, frames["Work.C"].X, 3);
        Assert.Equal(3, Graph(Sample).Depth);
    }

    [Fact]
    public void The_same_stacks_in_any_order_draw_the_same_document()
    {
        var first = Graph(Sample).ToSvg();

        Assert.Equal(first, Graph(Sample).ToSvg());
        Assert.Equal(first, Graph([.. Sample.Reverse()]).ToSvg());
        Assert.Equal(first, Graph([Sample[2], "Program.Main;Work.A;Work.B 20", Sample[1], "Program.Main;Work.A;Work.B 10"]).ToSvg());
    }

    [Fact]
    public void The_document_is_svg_with_a_title_naming_the_process_and_the_samples_and_a_tooltip_per_frame()
    {
        var svg = XDocument.Parse(Graph(Sample).ToSvg());

        Assert.Equal(Svg + "svg", svg.Root!.Name);
        Assert.Equal("1200", svg.Root.Attribute("width")!.Value);
        Assert.Contains(svg.Descendants(Svg + "text"), t => t.Value == "CPU profile of delivery-1: 100 samples");
        var tooltips = svg.Descendants(Svg + "title").Select(t => t.Value).ToList();
        Assert.Equal(6, tooltips.Count);
        Assert.Contains("Work.A — 40 samples, 40 % (self 0, 0 %)", tooltips);
        Assert.Contains("Work.D — 60 samples, 60 % (self 60, 60 %)", tooltips);
        Assert.Contains("all — 100 samples, 100 % (self 0, 0 %)", tooltips);
    }

    [Fact]
    public void A_subtitle_says_what_the_samples_are_under_the_title()
    {
        var svg = XDocument.Parse(new FlameGraph(Sample.Select(FoldedStack.Parse), "delivery-1", "pid 42, 3.0 s: threads running managed code").ToSvg());

        var lines = svg.Descendants(Svg + "text").Take(3).Select(t => t.Value).ToList();
        Assert.Equal("CPU profile of delivery-1: 100 samples", lines[0]);
        Assert.Equal("pid 42, 3.0 s: threads running managed code", lines[1]);
        Assert.StartsWith("Each frame is as wide as its share of the samples", lines[2], StringComparison.Ordinal);
    }

    [Fact]
    public void Method_names_with_angle_brackets_and_ampersands_are_escaped()
    {
        var graph = new FlameGraph(
            [new FoldedStack(["Program.<Main>$", "Work.<>c.<Run>b__0_0", "Generic`1[System.__Canon].A&B"], 5)],
            "worker <1> & co");

        var text = graph.ToSvg();

        Assert.Contains("&lt;Main&gt;$", text, StringComparison.Ordinal);
        Assert.Contains("A&amp;B", text, StringComparison.Ordinal);
        var svg = XDocument.Parse(text);
        Assert.Contains(svg.Descendants(Svg + "title"), t => t.Value.StartsWith("Work.<>c.<Run>b__0_0 — 5 samples", StringComparison.Ordinal));
        Assert.Contains(svg.Descendants(Svg + "text"), t => t.Value == "Generic`1[System.__Canon].A&B");
        Assert.Contains(svg.Descendants(Svg + "text"), t => t.Value == "CPU profile of worker <1> & co: 5 samples");
    }

    [Fact]
    public void Characters_xml_cannot_hold_are_replaced()
    {
        var svg = XDocument.Parse(new FlameGraph([new FoldedStack(["Bad\u0001Name", "Lone\ud800Surrogate"], 1)], "p").ToSvg());

        Assert.Contains(svg.Descendants(Svg + "text"), t => t.Value == "Bad?Name");
        Assert.Contains(svg.Descendants(Svg + "text"), t => t.Value == "Lone?Surrogate");
    }

    [Fact]
    public void A_label_that_does_not_fit_loses_its_namespace_then_its_beginning()
    {
        const string name = "System.Threading.Tasks.Task.ExecuteWithThreadLocal";
        const string generic = "System.Text.Json.Serialization.JsonConverter`1[System.__Canon].TryWrite";

        Assert.Equal(name, FlameGraph.Label(name, 1000));
        Assert.Equal("Task.ExecuteWithThreadLocal", FlameGraph.Label(name, 250));
        Assert.Equal("..ExecuteWithThreadLocal", FlameGraph.Label(name, 180));
        Assert.Equal("JsonConverter`1[System.__Canon].TryWrite", FlameGraph.Label(generic, 320));
        Assert.Null(FlameGraph.Label(name, 20));
    }

    [Fact]
    public void Every_label_fits_its_frame()
    {
        var svg = XDocument.Parse(Graph([
            "System.Threading.Tasks.Task.ExecuteWithThreadLocal;System.Threading.ExecutionContext.RunInternal 3",
            "System.Threading.Tasks.Task.ExecuteWithThreadLocal;DroneDelivery.Delivery.Service.DeliveryRepository.GetAsync 7",
            "Program.Main 90",
        ]).ToSvg(1200));

        var labelled = svg.Descendants(Svg + "g").Where(g => g.Element(Svg + "text") is not null).ToList();
        Assert.Equal(5, labelled.Count);
        foreach (var group in labelled)
        {
            var width = double.Parse(group.Element(Svg + "rect")!.Attribute("width")!.Value, CultureInfo.InvariantCulture);
            var label = group.Element(Svg + "text")!.Value;
            Assert.True(label.Length * 12 * 0.6 <= width - 6, $"'{label}' does not fit {width} pixels.");
        }
    }

    [Fact]
    public void Frames_too_narrow_to_see_are_left_out_with_their_callees()
    {
        var svg = XDocument.Parse(new FlameGraph(
            [new FoldedStack(["Main", "Rare", "RareCallee"], 1), new FoldedStack(["Main", "Common"], 1_000_000)], "p").ToSvg(1200));

        var titles = svg.Descendants(Svg + "title").Select(t => t.Value).ToList();
        Assert.Contains(titles, t => t.StartsWith("Common", StringComparison.Ordinal));
        Assert.DoesNotContain(titles, t => t.StartsWith("Rare", StringComparison.Ordinal));
    }

    [Fact]
    public void No_samples_draw_a_document_that_says_so()
    {
        var graph = new FlameGraph([], "idle");
        var svg = XDocument.Parse(graph.ToSvg());

        Assert.Equal(0, graph.TotalSamples);
        Assert.Contains(svg.Descendants(Svg + "text"), t => t.Value == "No samples.");
        Assert.Empty(graph.TopFrames(5).ByTotal);
    }

    [Fact]
    public void Top_frames_rank_by_total_and_by_self_samples_and_count_a_recursive_frame_once_per_stack()
    {
        var graph = Graph([.. Sample, "Program.Main;Work.R;Work.R;Work.R 50"]);

        var top = graph.TopFrames(3);

        Assert.Equal(["Program.Main", "Work.D", "Work.R"], top.ByTotal.Select(f => f.Frame));
        Assert.Equal(["Work.D", "Work.R", "Work.B"], top.BySelf.Select(f => f.Frame));
        var recursive = top.ByTotal.Single(f => f.Frame == "Work.R");
        Assert.Equal(50, recursive.TotalSamples);
        Assert.Equal(50, recursive.SelfSamples);
        Assert.Equal(100 * 50 / 150.0, recursive.TotalPercent, 6);
        var main = top.ByTotal[0];
        Assert.Equal((0, 150, 0.0, 100.0), (main.SelfSamples, main.TotalSamples, main.SelfPercent, main.TotalPercent));
    }

    [Fact]
    public void Top_frames_as_text_are_rows_of_percentages_and_frames()
    {
        var text = Graph(Sample).TopFrames(2).ToString();

        Assert.Equal(
            """
            CPU profile of delivery-1: 100 samples

            Most samples in the frame and what it called (total):
              total %   self %  frame
              100.0 %    0.0 %  Program.Main
               60.0 %   60.0 %  Work.D

            Most samples in the frame itself (self):
               self %  total %  frame
               60.0 %   60.0 %  Work.D
               30.0 %   30.0 %  Work.B

            """.ReplaceLineEndings("\n"),
            text);
    }

    [Fact]
    public void Folded_stack_text_reads_back_to_the_same_stack()
    {
        var stack = FoldedStack.Parse("Program.Main;Work.A;Work.B 30");

        Assert.Equal(["Program.Main", "Work.A", "Work.B"], stack.Frames);
        Assert.Equal(30, stack.Samples);
        Assert.Equal("Program.Main;Work.A;Work.B 30", stack.ToString());
        Assert.Throws<FormatException>(() => FoldedStack.Parse("Program.Main;Work.A"));
    }

    private static FlameGraph Graph(IEnumerable<string> folded) => new(folded.Select(FoldedStack.Parse), "delivery-1");

    private static void AssertStandsOn(Frame callee, Frame caller)
    {
        Assert.Equal(caller.Y - 17, callee.Y, 3);
        Assert.InRange(callee.X, caller.X - 0.01, caller.X + caller.Width);
        Assert.InRange(callee.X + callee.Width, caller.X, caller.X + caller.Width + 0.01);
    }

    /// <summary>Each drawn frame's rectangle, by the name its tooltip starts with.</summary>
    private static Dictionary<string, Frame> Frames(string svg) =>
        XDocument.Parse(svg).Descendants(Svg + "g").ToDictionary(
            g => g.Element(Svg + "title")!.Value.Split(" — ")[0],
            g =>
            {
                var rect = g.Element(Svg + "rect")!;
                double Value(string name) => double.Parse(rect.Attribute(name)!.Value, CultureInfo.InvariantCulture);
                return new Frame(Value("x"), Value("y"), Value("width"));
            });

    private sealed record Frame(double X, double Y, double Width);
}
