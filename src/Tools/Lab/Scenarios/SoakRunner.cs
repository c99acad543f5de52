using System.CommandLine;
using System.Globalization;
using System.Text;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Soak;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>
/// A long, steady load on one step's configuration, to find what appears only after minutes
/// (Klarna's lesson: their problems showed after 2–3 minutes of moderate load). After a warm-up it
/// fits a trend to each component's working set, each service's thread-pool queue, the queue's depth
/// (scenario B) and the p99 latency, and concludes: no drift found (exit code 0), or what grows and how
/// fast per hour (exit code 1) — see <see cref="DriftAnalysis"/>.
/// </summary>
internal static class SoakRunner
{
    /// <summary>The least steady state (the soak after its warm-up) that can show a trend.</summary>
    public static readonly TimeSpan MinimumSteadyState = TimeSpan.FromMinutes(2);

    public static Command Command(Option<string?> output, Func<string> defaultOutput, Action<string> log)
    {
        var prometheus = LabCommands.PrometheusOption();
        var dashboard = LabCommands.DashboardOption();
        var step = new Option<string>("--step") { Description = "The step whose configuration runs (e.g. A4, B5).", DefaultValueFactory = _ => "A4" };
        var duration = new Option<TimeSpan>("--duration") { Description = "How long the steady load lasts (e.g. 00:10:00).", DefaultValueFactory = _ => TimeSpan.FromMinutes(10) };
        var users = new Option<int>("--users") { Description = "Steady number of users.", DefaultValueFactory = _ => 20 };
        var warmUp = new Option<TimeSpan?>("--warm-up") { Description = "The start of the soak left out of the verdict (default: a fifth of --duration, at least 1 minute, at most half)." };
        var calibration = LabCommands.CalibrationOption();
        var command = new Command("soak", "Run one step's configuration under a long steady load and conclude whether anything drifts: exit code 0 no drift found, 1 drift found.")
        {
            step, duration, users, warmUp, output, prometheus, dashboard, calibration,
        };
        command.SetAction(async (parse, cancellationToken) =>
        {
            var stepId = parse.GetValue(step)!;
            var scenario = LabRunner.All.FirstOrDefault(s => s.StepIds.Contains(stepId, StringComparer.OrdinalIgnoreCase));
            if (scenario is null || parse.GetValue(users) < 1 || parse.GetValue(duration) <= TimeSpan.Zero)
            {
                Console.Error.WriteLine("soak needs a known --step (A1–A4, B1–B6), --users ≥ 1 and a positive --duration.");
                return 2;
            }

            var soakDuration = parse.GetValue(duration);
            var soakWarmUp = parse.GetValue(warmUp) ?? DriftAnalysis.DefaultWarmUp(soakDuration);
            if (soakWarmUp < TimeSpan.Zero || soakDuration - soakWarmUp < MinimumSteadyState)
            {
                Console.Error.WriteLine(
                    $"soak needs at least {MinimumSteadyState.TotalMinutes:0} minutes of steady state after its warm-up ({soakWarmUp}): a longer --duration or a shorter --warm-up.");
                return 2;
            }

            if (!LabCommands.TryCalibration(parse.GetValue(calibration), LabCalibration.DefaultProfile, out var calibrated))
            {
                return 2;
            }

            var options = new LabRunOptions
            {
                Scenarios = [scenario.Id],
                Steps = [stepId.ToUpperInvariant()],
                Mode = LabMode.Full,
                OutputDirectory = parse.GetValue(output) ?? defaultOutput(),
                PrometheusPort = parse.GetValue(prometheus),
                Dashboard = parse.GetValue(dashboard),
                Calibration = calibrated,
                Log = log,
            };
            return await LabCommands.ExitCodeAsync("soak", async () =>
            {
                var (report, verdict) = await RunAsync(scenario, stepId.ToUpperInvariant(), parse.GetValue(users), soakDuration, soakWarmUp, options, cancellationToken).ConfigureAwait(false);
                Console.WriteLine(report);
                Console.WriteLine($"Soak verdict: {verdict.Summary}");
                return verdict.ExitCode;
            }, cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    public static async Task<(string Report, SoakVerdict Verdict)> RunAsync(
        LabScenario scenario, string stepId, int users, TimeSpan duration, TimeSpan warmUp, LabRunOptions options, CancellationToken cancellationToken)
    {
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var step = catalog[stepId];
        var context = await LabRunner.StartAtStepAsync(scenario, catalog, step, options, new Dictionary<ServiceKind, int>(), warmUp: true, cancellationToken).ConfigureAwait(false);
        var deployment = context.Deployment;
        await using (deployment.ConfigureAwait(false))
        {
            var sampler = new SystemSampler(deployment, TimeSpan.FromSeconds(5));
            var drift = new SoakSampler(
                () => deployment.Processes().Select(p => (p.Component, p.Process.ProcessId)),
                SoakSignals.Gauges(deployment),
                TimeSpan.FromSeconds(5),
                options.Time);
            await using (sampler.ConfigureAwait(false))
            await using (drift.ConfigureAwait(false))
            {
                var start = sampler.Now;
                var driftStart = drift.Now;
                options.Log($"soak: {users} users for {duration} on {step.Title}");
                var plan = new LoadTestPlan
                {
                    Scenario = scenario.Workload(context),
                    Shape = SteadyShape(scenario, users, duration, options),
                    Bounds = new LoadBounds { MaxDuration = duration + TimeSpan.FromMinutes(1), MaxRequests = long.MaxValue / 2 },
                    Http = scenario.Clients(context),
                };
                var load = await LabRunner.RunLoadAsync(options, "soak", plan, cancellationToken).ConfigureAwait(false);
                load.WriteFiles(Path.Combine(options.OutputDirectory, "soak", "load"));
                var result = LabRunner.WithSystemFigures(
                    new StepResult { Step = step, Load = load, Cpu = [], CpuSeries = [], ThreadPoolQueueMax = new Dictionary<string, double>() },
                    sampler,
                    start,
                    start,
                    options.Calibration.CpuBudgetShare);
                var verdict = DriftAnalysis.Decide(
                    SoakSignals.Series(drift.Series(driftStart), sampler.ThreadPool, start, load.TimeSeries), warmUp, duration);
                await SoakSignals.WriteCsvAsync(Path.Combine(options.OutputDirectory, "soak", "signals.csv"), verdict, cancellationToken).ConfigureAwait(false);
                var report = await WriteReportAsync(result, sampler, start, users, duration, verdict, options, cancellationToken).ConfigureAwait(false);
                return (report, verdict);
            }
        }
    }

    private static async Task<string> WriteReportAsync(
        StepResult result, SystemSampler sampler, double start, int users, TimeSpan duration, SoakVerdict verdict, LabRunOptions options, CancellationToken cancellationToken)
    {
        var seconds = result.Load.TimeSeries.Where(s => s.Second < result.Load.LoadDuration.TotalSeconds).ToList();
        var fifth = Math.Max(1, seconds.Count / 5);
        var (early, late) = (seconds.Take(fifth).ToList(), seconds.TakeLast(fifth).ToList());
        static double Rate(IReadOnlyList<LoadDriver.Results.SecondSample> s) => s.Sum(x => x.Successes) / Math.Max(1, s.Sum(x => x.IntervalSeconds));
        static double P99(IReadOnlyList<LoadDriver.Results.SecondSample> s) => s.Where(x => x.P99Ms is not null).Select(x => x.P99Ms!.Value).DefaultIfEmpty(0).Average();
        var memory = sampler.Memory.Where(m => m.Second >= start).GroupBy(m => m.Component).ToDictionary(
            g => g.Key,
            g => (First: g.OrderBy(m => m.Second).Take(10).Average(m => m.Megabytes), Last: g.OrderBy(m => m.Second).TakeLast(10).Average(m => m.Megabytes)));

        var charts = new List<ChartSpec>
        {
            Charts.TimeSeries("soak-throughput.svg", "Soak: successful requests per second", [new(new Series("ok/s", [.. seconds.Select(s => new TimePoint(s.Second, s.Successes / s.IntervalSeconds))]), Area: true)], "requests/s"),
            Charts.TimeSeries("soak-latency.svg", "Soak: p50 and p99 latency per second", [
                new(new Series("p50", [.. seconds.Where(s => s.P50Ms is not null).Select(s => new TimePoint(s.Second, s.P50Ms!.Value))])),
                new(new Series("p99", [.. seconds.Where(s => s.P99Ms is not null).Select(s => new TimePoint(s.Second, s.P99Ms!.Value))]))], "ms"),
            Charts.TimeSeries("soak-cpu.svg", "Soak: CPU per component", [.. result.CpuSeries.Select(s => new Line(s))], "% of one core"),
            Charts.TimeSeries("soak-memory.svg", "Soak: working set per component (largest process)", [.. sampler.Memory.Where(m => m.Second >= start).GroupBy(m => m.Component)
                .Select(g => new Line(new Series(g.Key, [.. g.Select(m => new TimePoint(m.Second - start, m.Megabytes))])))], "MB"),
            Charts.TimeSeries("soak-threadpool.svg", "Soak: thread-pool queue length (largest replica)", [.. sampler.ThreadPool.Where(t => t.Second >= start).GroupBy(t => t.Component)
                .Select(g => new Line(new Series(g.Key, [.. g.Select(t => new TimePoint(t.Second - start, t.MaxQueueLength))])))], "work items"),
        };
        charts.AddRange(SoakSignals.QueueChart(verdict));
        await ChartRenderer.RenderAsync(charts, Path.Combine(options.OutputDirectory, "charts"), cancellationToken).ConfigureAwait(false);

        var md = new StringBuilder();
        md.AppendLine(CultureInfo.InvariantCulture, $"# Soak: {result.Step.Title}").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture, $"{users} users ({UserBehaviour(LabRunner.Scenario(result.Step.Id[..1]), options)}) for {duration}; {result.Load.Totals.Successes:N0} successful, {result.Load.Totals.Errors:N0} failed requests, {result.Load.Totals.Unsent:N0} missed.").AppendLine();
        SoakSignals.AppendVerdict(md, verdict);
        md.AppendLine("Whole run, warm-up included:").AppendLine();
        md.AppendLine("| | first fifth | last fifth | change |").AppendLine("|---|---|---|---|");
        md.AppendLine(CultureInfo.InvariantCulture, $"| successful requests/s | {Rate(early):0.0} | {Rate(late):0.0} | {Change(Rate(early), Rate(late))} |");
        md.AppendLine(CultureInfo.InvariantCulture, $"| p99 latency, ms (mean of seconds) | {P99(early):0} | {P99(late):0} | {Change(P99(early), P99(late))} |");
        foreach (var (component, (first, last)) in memory.OrderBy(m => m.Key, StringComparer.Ordinal))
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"| {component} working set, MB | {first:0} | {last:0} | {Change(first, last)} |");
        }

        md.AppendLine().AppendLine("| component | CPU avg % | CPU max % | thread-pool queue max |").AppendLine("|---|---|---|---|");
        foreach (var cpu in result.Cpu)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"| {cpu.Component} | {cpu.AveragePercent:0} | {cpu.MaxPercent:0} | {(result.ThreadPoolQueueMax.TryGetValue(cpu.Component, out var q) ? q.ToString("0", CultureInfo.InvariantCulture) : "–")} |");
        }

        md.AppendLine();
        foreach (var chart in charts)
        {
            md.AppendLine(CultureInfo.InvariantCulture, $"![{chart.Title}](charts/{chart.FileName})");
        }

        var file = Path.Combine(options.OutputDirectory, "soak.md");
        await File.WriteAllTextAsync(file, md.ToString(), cancellationToken).ConfigureAwait(false);
        return file;
    }

    /// <summary>Scenario A's users ask on a schedule, as in its steps; scenario B's soak users loop with a think time.</summary>
    private static LoadShape SteadyShape(LabScenario scenario, int users, TimeSpan duration, LabRunOptions options) =>
        scenario is GatewayScenario
            ? OpenLoad.Users(users, users, options.Calibration.InvoiceRatePerUser, TimeSpan.Zero) with { Hold = duration }
            : ClosedLoad.Constant(users, duration) with { ThinkTime = options.Calibration.DeliveryRequestThinkTime };

    private static string UserBehaviour(LabScenario scenario, LabRunOptions options) =>
        scenario is GatewayScenario
            ? string.Create(CultureInfo.InvariantCulture, $"{options.Calibration.InvoiceRatePerUser:0.##} invoices/s each, on a schedule")
            : string.Create(CultureInfo.InvariantCulture, $"think time {options.Calibration.DeliveryRequestThinkTime.TotalMilliseconds:0} ms");

    private static string Change(double before, double after) =>
        before == 0 ? "–" : ((after - before) / before).ToString("+0%;-0%;0%", CultureInfo.InvariantCulture);
}
