using System.CommandLine;
using System.Globalization;
using System.Text;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>One rate tried against a single instance.</summary>
internal sealed record CapacityPoint(double Rate, double Achieved, double P99Ms, double ErrorRatio, double CpuAveragePercent, double CpuMaxPercent, bool HoldsSlo);

/// <summary>
/// Capacity planning as in the SRE performance-analysis story: drive ONE instance of a service with
/// a constant arrival rate (open model, so queueing counts), raise the rate step by step, find the
/// highest rate whose p99 stays under the SLO, and size the fleet for a target rate with N+1
/// redundancy: instances = ⌈target ÷ per-instance rate⌉ + 1.
/// </summary>
internal static class CapacityRunner
{
    private static readonly double[] PlanningTargets = [50, 500, 1000, 2000, 3000];

    public static Command Command(Option<string?> output, Func<string> defaultOutput, Action<string> log)
    {
        var prometheus = LabCommands.PrometheusOption();
        var service = new Option<string>("--service") { Description = "gateway (invoices) or ingestion (delivery requests).", DefaultValueFactory = _ => "gateway" };
        var step = new Option<string?>("--step") { Description = "The step whose configuration runs (default A4 for gateway, B5 for ingestion)." };
        var slo = new Option<TimeSpan>("--slo-p99") { Description = "The p99 latency objective (e.g. 00:00:00.250).", DefaultValueFactory = _ => TimeSpan.FromMilliseconds(250) };
        var target = new Option<double>("--target-rate") { Description = "Requests per second the fleet must serve.", DefaultValueFactory = _ => 1000 };
        var startRate = new Option<double>("--start-rate") { Description = "First rate tried, requests per second.", DefaultValueFactory = _ => 10 };
        var factor = new Option<double>("--factor") { Description = "Each rate is the previous one times this.", DefaultValueFactory = _ => 1.5 };
        var stepDuration = new Option<TimeSpan>("--step-duration") { Description = "How long each rate is held.", DefaultValueFactory = _ => TimeSpan.FromSeconds(20) };
        var command = new Command("capacity", "Find one instance's highest rate within a p99 SLO and the instances a target rate needs (N+1).")
        {
            service, step, slo, target, startRate, factor, stepDuration, output, prometheus,
        };
        command.SetAction(async (parse, cancellationToken) =>
        {
            var name = parse.GetValue(service)!.ToLowerInvariant();
            if (name is not ("gateway" or "ingestion") || parse.GetValue(slo) <= TimeSpan.Zero || parse.GetValue(target) <= 0
                || parse.GetValue(startRate) <= 0 || parse.GetValue(factor) <= 1 || parse.GetValue(stepDuration) <= TimeSpan.Zero)
            {
                Console.Error.WriteLine("capacity needs --service gateway|ingestion, a positive --slo-p99, --target-rate and --start-rate, --factor > 1 and a positive --step-duration.");
                return 2;
            }

            var scenario = LabRunner.Scenario(name == "gateway" ? "A" : "B");
            var stepId = (parse.GetValue(step) ?? (name == "gateway" ? "A4" : "B5")).ToUpperInvariant();
            if (!scenario.StepIds.Contains(stepId))
            {
                Console.Error.WriteLine($"--step must be one of {string.Join(", ", scenario.StepIds)} for {name}.");
                return 2;
            }

            var options = new LabRunOptions
            {
                Scenarios = [scenario.Id],
                Steps = [stepId],
                Mode = LabMode.Full,
                OutputDirectory = parse.GetValue(output) ?? defaultOutput(),
                PrometheusPort = parse.GetValue(prometheus),
                Log = log,
            };
            return await LabCommands.ExitCodeAsync("capacity run", async () =>
            {
                var report = await RunAsync(
                    scenario,
                    name == "gateway" ? ServiceKind.Gateway : ServiceKind.Ingestion,
                    stepId,
                    new CapacitySearch(parse.GetValue(slo), parse.GetValue(target), parse.GetValue(startRate), parse.GetValue(factor), parse.GetValue(stepDuration)),
                    options,
                    cancellationToken).ConfigureAwait(false);
                Console.WriteLine(report);
                return 0;
            }, cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    public static async Task<string> RunAsync(LabScenario scenario, ServiceKind service, string stepId, CapacitySearch search, LabRunOptions options, CancellationToken cancellationToken)
    {
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var step = catalog[stepId];
        var context = await LabRunner.StartAtStepAsync(scenario, catalog, step, options, new Dictionary<ServiceKind, int> { [service] = 1 }, cancellationToken).ConfigureAwait(false);
        var deployment = context.Deployment;
        await using (deployment.ConfigureAwait(false))
        {

            var points = new List<CapacityPoint>();
            var sampler = new SystemSampler(deployment, TimeSpan.FromSeconds(5));
            await using (sampler.ConfigureAwait(false))
            {
                for (var rate = search.StartRate; rate <= OpenLoad.MaxRate; rate *= search.Factor)
                {
                    var since = sampler.Now;
                    var load = await LoadRunner.RunAsync(
                        new LoadTestPlan
                        {
                            Scenario = scenario.Workload(context),
                            Shape = OpenLoad.Constant(Math.Round(rate, 1), search.StepDuration),
                            Bounds = new LoadBounds { MaxDuration = search.StepDuration + TimeSpan.FromSeconds(30) },
                        },
                        null,
                        cancellationToken).ConfigureAwait(false);
                    var cpu = sampler.Cpu.Where(c => c.Second >= since && c.Component == service.Name).ToList();
                    var p99 = load.RequestLatency.TotalCount > 0 ? load.RequestLatency.GetValueAtPercentile(99) / 1000.0 : double.PositiveInfinity;
                    var errors = load.Totals.Requests > 0 ? (double)load.Totals.Errors / load.Totals.Requests : 1;
                    var point = new CapacityPoint(
                        rate,
                        load.Totals.Successes / Math.Max(0.001, load.LoadDuration.TotalSeconds),
                        p99,
                        errors,
                        cpu.Count > 0 ? cpu.Average(c => c.AveragePercent) : 0,
                        cpu.Count > 0 ? cpu.Max(c => c.MaxPercent) : 0,
                        p99 <= search.Slo.TotalMilliseconds && errors < 0.01);
                    points.Add(point);
                    options.Log($"capacity: {rate:0.#} req/s → p99 {p99:0} ms, {errors:P1} errors, {service.Name} CPU avg {point.CpuAveragePercent:0} % → {(point.HoldsSlo ? "within" : "breaks")} the SLO");
                    if (!point.HoldsSlo)
                    {
                        break;
                    }
                }
            }

            return await WriteReportAsync(service, step, search, points, options, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Instances for a target rate with one spare: ⌈target ÷ per-instance⌉ + 1.</summary>
    internal static int InstancesNeeded(double targetRate, double perInstanceRate) =>
        perInstanceRate <= 0 ? int.MaxValue : (int)Math.Ceiling(targetRate / perInstanceRate) + 1;

    private static async Task<string> WriteReportAsync(
        ServiceKind service, Step step, CapacitySearch search, IReadOnlyList<CapacityPoint> points, LabRunOptions options, CancellationToken cancellationToken)
    {
        var best = points.Where(p => p.HoldsSlo).MaxBy(p => p.Rate);
        var perInstance = best?.Achieved ?? 0;
        var charts = new List<ChartSpec>
        {
            Charts.TimeSeries(
                "capacity-p99.svg",
                $"{service.Name}, one instance: p99 latency by arrival rate",
                [new(new Series("p99", [.. points.Select(p => new TimePoint(p.Rate, Math.Min(p.P99Ms, 60_000)))]))],
                "p99 ms",
                references: [($"SLO {search.Slo.TotalMilliseconds:0} ms", search.Slo.TotalMilliseconds)]),
        };
        await ChartRenderer.RenderAsync(charts, Path.Combine(options.OutputDirectory, "charts"), cancellationToken).ConfigureAwait(false);

        var md = new StringBuilder();
        md.AppendLine(CultureInfo.InvariantCulture, $"# Capacity of one {service.Name} instance ({step.Title})").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture, $"Open-model arrival rate, each rate held {search.StepDuration.TotalSeconds:0} s; SLO: p99 ≤ {search.Slo.TotalMilliseconds:0} ms with < 1 % errors. (The x axis of the chart is the arrival rate.)").AppendLine();
        md.AppendLine("| arrival rate (req/s) | achieved (ok/s) | p99 (ms) | errors | CPU avg % | CPU max % | SLO |").AppendLine("|---|---|---|---|---|---|---|");
        foreach (var p in points)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"| {p.Rate:0.#} | {p.Achieved:0.#} | {p.P99Ms:0} | {p.ErrorRatio:P1} | {p.CpuAveragePercent:0} | {p.CpuMaxPercent:0} | {(p.HoldsSlo ? "holds" : "broken")} |");
        }

        md.AppendLine();
        md.AppendLine(best is null
            ? "No rate tried held the SLO: lower --start-rate."
            : string.Create(CultureInfo.InvariantCulture, $"Highest rate holding the SLO: **{perInstance:0.#} req/s per instance**. Instances needed with N+1 redundancy (⌈target ÷ per-instance⌉ + 1):"));
        if (best is not null)
        {
            md.AppendLine().AppendLine("| target rate (req/s) | instances |").AppendLine("|---|---|");
            foreach (var target in PlanningTargets.Append(search.TargetRate).Distinct().Order())
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"| {target:0.#}{(target == search.TargetRate ? " (target)" : string.Empty)} | {InstancesNeeded(target, perInstance)} |");
            }
        }

        md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"![{charts[0].Title}](charts/{charts[0].FileName})");
        var file = Path.Combine(options.OutputDirectory, "capacity.md");
        await File.WriteAllTextAsync(file, md.ToString(), cancellationToken).ConfigureAwait(false);
        return file;
    }
}

/// <summary>How the capacity search proceeds.</summary>
internal sealed record CapacitySearch(TimeSpan Slo, double TargetRate, double StartRate, double Factor, TimeSpan StepDuration);
