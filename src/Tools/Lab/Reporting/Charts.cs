using System.Text.Json.Nodes;
using DroneDelivery.Lab.Measurement;

namespace DroneDelivery.Lab.Reporting;

/// <summary>A line of a chart and the axis it belongs to (0 = left, 1 = right).</summary>
internal sealed record Line(Series Series, int Axis = 0, bool Area = false, bool Dashed = false, bool Step = false);

/// <summary>ECharts option objects for the report's kinds of chart.</summary>
internal static class Charts
{
    private static readonly string[] Palette = ["#2f6fdf", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0b7285", "#e67700", "#5c940d", "#862e9c", "#495057"];

    /// <summary>Lines over time (seconds since the load started), one or two y axes, optional horizontal reference lines.</summary>
    public static ChartSpec TimeSeries(
        string fileName,
        string title,
        IReadOnlyList<Line> lines,
        string leftAxis,
        string? rightAxis = null,
        IReadOnlyList<(string Label, double Value)>? references = null)
    {
        var yAxes = new JsonArray(Axis(leftAxis));
        if (rightAxis is not null)
        {
            yAxes.Add(Axis(rightAxis));
        }

        var series = new JsonArray();
        for (var i = 0; i < lines.Count; i++)
        {
            var line = lines[i];
            var item = new JsonObject
            {
                ["name"] = line.Series.Name,
                ["type"] = "line",
                ["yAxisIndex"] = line.Axis,
                ["showSymbol"] = false,
                ["step"] = line.Step ? "end" : false,
                ["lineStyle"] = new JsonObject { ["width"] = 2, ["type"] = line.Dashed ? "dashed" : "solid" },
                ["itemStyle"] = new JsonObject { ["color"] = Palette[i % Palette.Length] },
                ["data"] = Points(line.Series.Points),
            };
            if (line.Area)
            {
                item["areaStyle"] = new JsonObject { ["opacity"] = 0.15 };
            }

            if (i == 0 && references is { Count: > 0 })
            {
                item["markLine"] = new JsonObject
                {
                    ["symbol"] = "none",
                    ["lineStyle"] = new JsonObject { ["color"] = "#d00000", ["type"] = "dashed", ["width"] = 2 },
                    ["label"] = new JsonObject { ["formatter"] = "{b}", ["position"] = "insideEndTop" },
                    ["data"] = new JsonArray([.. references.Select(r => (JsonNode)new JsonObject { ["name"] = r.Label, ["yAxis"] = r.Value })]),
                };
            }

            series.Add(item);
        }

        return new ChartSpec(fileName, title, new JsonObject
        {
            ["title"] = Title(title),
            ["legend"] = new JsonObject { ["bottom"] = 0, ["type"] = "scroll" },
            ["grid"] = new JsonObject { ["left"] = 70, ["right"] = rightAxis is null ? 30 : 70, ["top"] = 60, ["bottom"] = 70 },
            ["xAxis"] = new JsonObject { ["type"] = "value", ["name"] = "seconds", ["nameLocation"] = "middle", ["nameGap"] = 28, ["min"] = 0 },
            ["yAxis"] = yAxes,
            ["series"] = series,
        });
    }

    /// <summary>Bars per category (e.g. per step), one bar per series.</summary>
    public static ChartSpec Bars(string fileName, string title, IReadOnlyList<string> categories, IReadOnlyList<(string Name, IReadOnlyList<double?> Values)> bars, string axis)
    {
        var series = new JsonArray();
        for (var i = 0; i < bars.Count; i++)
        {
            series.Add(new JsonObject
            {
                ["name"] = bars[i].Name,
                ["type"] = "bar",
                ["itemStyle"] = new JsonObject { ["color"] = Palette[i % Palette.Length] },
                ["label"] = new JsonObject { ["show"] = true, ["position"] = "top" },
                ["data"] = new JsonArray([.. bars[i].Values.Select(v => v is null ? null : (JsonNode)JsonValue.Create(Math.Round(v.Value, 1)))]),
            });
        }

        return new ChartSpec(fileName, title, new JsonObject
        {
            ["title"] = Title(title),
            ["legend"] = new JsonObject { ["bottom"] = 0 },
            ["grid"] = new JsonObject { ["left"] = 70, ["right"] = 30, ["top"] = 60, ["bottom"] = 60 },
            ["xAxis"] = new JsonObject { ["type"] = "category", ["data"] = new JsonArray([.. categories.Select(c => (JsonNode)JsonValue.Create(c)!)]) },
            ["yAxis"] = Axis(axis),
            ["series"] = series,
        });
    }

    private static JsonObject Title(string text) => new()
    {
        ["text"] = text,
        ["left"] = "center",
        ["textStyle"] = new JsonObject { ["fontSize"] = 15 },
    };

    private static JsonObject Axis(string name) => new()
    {
        ["type"] = "value",
        ["name"] = name,
        ["nameTextStyle"] = new JsonObject { ["fontWeight"] = "bold" },
    };

    private static JsonArray Points(IReadOnlyList<TimePoint> points) =>
        new([.. points.Select(p => (JsonNode)new JsonArray(Math.Round(p.Second, 2), Math.Round(p.Value, 3)))]);
}
