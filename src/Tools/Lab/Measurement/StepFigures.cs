using System.Globalization;
using System.Text.Json;
using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.Lab.Measurement;

/// <summary>One figure of a step, as tables compare it (e.g. "p99 latency", "ms", 146).</summary>
internal sealed record Figure(string Name, string Unit, double Value)
{
    public string Formatted => Format(Value);

    public static string Format(double value) =>
        Math.Abs(value) >= 100 || value == Math.Floor(value)
            ? value.ToString("#,0", CultureInfo.InvariantCulture)
            : value.ToString(Math.Abs(value) >= 10 ? "0.0" : "0.00", CultureInfo.InvariantCulture);
}

/// <summary>Every figure of a step by name: what a what-if section and the compare command put side by side.</summary>
internal static class StepFigures
{
    public static IReadOnlyList<Figure> Of(StepResult result)
    {
        var figures = new List<Figure>
        {
            new("throughput", "successful req/s", result.Throughput),
            new("average latency", "ms", result.AverageLatencyMs),
            new("p50 latency", "ms", result.PercentileMs(50)),
            new("p99 latency", "ms", result.PercentileMs(99)),
            new("successful requests", "requests", result.Load.Totals.Successes),
            new("failed requests", "requests", result.Load.Totals.Errors),
        };
        if (result.Load.Completion is { } completion && completion.Latency.TotalCount > 0)
        {
            figures.Add(new("end-to-end completion p50", "ms", completion.Latency.GetValueAtPercentile(50) / 1000.0));
            figures.Add(new("end-to-end completion p99", "ms", completion.Latency.GetValueAtPercentile(99) / 1000.0));
        }

        if (result.Cosmos is { } cosmos)
        {
            figures.Add(new("Cosmos DB 429s", "requests", cosmos.ThrottledRequests));
            figures.Add(new("RU per operation", "RU", cosmos.RequestUnitsPerOperation));
            figures.Add(new("Cosmos DB calls per operation", "calls", cosmos.CallsPerOperation));
            figures.Add(new("utilization queries", "operations", cosmos.Operations));
        }

        if (result.Pipeline is { } pipeline)
        {
            figures.Add(new("incoming messages", "messages", pipeline.Incoming));
            figures.Add(new("outgoing deliveries", "deliveries", pipeline.Outgoing));
            figures.Add(new("outgoing ÷ incoming", "×", pipeline.Outgoing / (double)Math.Max(1, pipeline.Incoming)));
            figures.Add(new("completed", "messages", pipeline.Completed));
            figures.Add(new("completed during the load", "messages", pipeline.CompletedDuringLoad(result.Load.LoadDuration)));
            figures.Add(new("peak completions", "per second", pipeline.MaxCompletionsPerSecond));
            figures.Add(new("abandoned", "messages", pipeline.Abandoned));
            figures.Add(new("dead-lettered", "messages", pipeline.DeadLettered));
            figures.Add(new("lock-lost settlements", "settlements", pipeline.LockLost));
            figures.Add(new("Redis out-of-memory errors", "errors", pipeline.RedisOutOfMemoryErrors));
            figures.Add(new("left in the queue", "messages", pipeline.ActiveAtEnd));
            if (pipeline.MeanProcessSeconds is { } process)
            {
                figures.Add(new("workflow time per message", "ms", process * 1000));
            }
        }

        foreach (var cpu in result.Cpu)
        {
            figures.Add(new($"CPU {cpu.Component}", "% of a core, average", cpu.AveragePercent));
        }

        figures.Add(new("model scale", "×", result.Scale));
        figures.Add(new("system CPU at its busiest 5 s", "cores", result.SystemCpuPeakCores));
        figures.Add(new("longest machine stall", "s", result.LongestStallSeconds));
        return figures;
    }
}

/// <summary>
/// A step's per-second series by name: from the load driver (throughput, errors, p99) and from the
/// system (Service Bus, Cosmos DB, CPU). A run keeps the system's in <c>steps/&lt;id&gt;/metrics.json</c>
/// beside the load driver's files, so a later comparison can overlay them.
/// </summary>
internal sealed record StepSeries(IReadOnlyList<Series> Items)
{
    public const string FileName = "metrics.json";

    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { WriteIndented = false };

    public Series? this[string name] => Items.FirstOrDefault(s => s.Name == name);

    public static StepSeries Of(StepResult result) => new([.. Load(result.Load.TimeSeries), .. System(result)]);

    /// <summary>The series of a step's directory in a report: <c>load/result.json</c> and <c>metrics.json</c>.</summary>
    public static StepSeries Read(string stepDirectory)
    {
        var load = Path.Combine(stepDirectory, "load", LoadReport.JsonFileName);
        var metrics = Path.Combine(stepDirectory, FileName);
        return new(
        [
            .. File.Exists(load) ? Load(LoadReport.ReadJson(load).TimeSeries) : [],
            .. File.Exists(metrics) ? JsonSerializer.Deserialize<List<Series>>(File.ReadAllText(metrics), Json) ?? [] : [],
        ]);
    }

    /// <summary>Writes the system's series (the load driver writes its own) into a step's directory.</summary>
    public static void WriteSystem(StepResult result, string stepDirectory)
    {
        Directory.CreateDirectory(stepDirectory);
        File.WriteAllText(Path.Combine(stepDirectory, FileName), JsonSerializer.Serialize(System(result), Json));
    }

    private static IEnumerable<Series> Load(IReadOnlyList<SecondSample> seconds)
    {
        yield return new("successful requests/s", [.. seconds.Select(s => new TimePoint(s.Second, s.Successes / s.IntervalSeconds))]);
        yield return new("failed requests/s", [.. seconds.Select(s => new TimePoint(s.Second, s.Errors / s.IntervalSeconds))]);
        yield return new("p99 latency (ms)", [.. seconds.Where(s => s.P99Ms is not null).Select(s => new TimePoint(s.Second, s.P99Ms!.Value))]);
    }

    private static List<Series> System(StepResult result)
    {
        var series = new List<Series>();
        if (result.Pipeline is { } p)
        {
            series.AddRange([Named(p.IncomingPerSecond, "incoming messages/s"), Named(p.OutgoingPerSecond, "outgoing deliveries/s"),
                Named(p.CompletionsPer5Seconds, "completions per 5 s"), Named(p.DeadLetteredPerSecond, "dead-lettered/s")]);
        }

        if (result.Cosmos is { } c)
        {
            series.Add(Named(c.ThrottledPerSecond, "Cosmos DB 429s/s"));
        }

        series.AddRange(result.CpuSeries.Select(s => Named(s, $"CPU {s.Name} (%)")));
        series.Add(Named(result.SystemCpuSeries, "CPU of the whole system (cores)"));
        return series;
    }

    private static Series Named(Series series, string name) => series with { Name = name };
}
