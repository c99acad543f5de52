using System.CommandLine;
using System.Globalization;
using System.Text;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;
using DroneDelivery.LoadDriver.Results;
using CosmosMetrics = DroneDelivery.Emulators.CosmosDb.Metrics.EmulatorMetricsSnapshot;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>One rate held against the measured service, and what it cost each component.</summary>
/// <param name="CpuMicrosecondsPerRequest">CPU each component spent per successful request at this rate, µs (all its processes together).</param>
/// <param name="CompletionsPerSecond">Ingestion: delivery requests the workflow completed per second while the rate was held (end to end), the drain after it excluded.</param>
/// <param name="KeepsUp">Ingestion: no more than two seconds of arrivals were accepted and not yet completed when the arrivals stopped.</param>
/// <param name="Cosmos">What each Cosmos DB container served while the rate was measured (the drain included), busiest first.</param>
internal sealed record CapacityPoint(
    double Rate,
    double Achieved,
    double P50Ms,
    double P99Ms,
    double ErrorRatio,
    double CpuAveragePercent,
    double CpuMaxPercent,
    IReadOnlyDictionary<string, double> CpuMicrosecondsPerRequest,
    double? CompletionsPerSecond,
    bool KeepsUp,
    bool HoldsSlo,
    double OtherCores,
    string LoadDirectory)
{
    public IReadOnlyList<ContainerLoad> Cosmos { get; init; } = [];
}

/// <summary>
/// One Cosmos DB container's share of a measurement: its calls, the calls it throttled (HTTP 429, which the SDK
/// retries unseen after the Retry-After wait), and the request units it consumed per second against what it is
/// provisioned. A knee that comes with 429s and a container at its RU/s is provisioning, not software.
/// </summary>
internal sealed record ContainerLoad(string Container, long Requests, long Throttled, double RequestUnitsPerSecond, double ProvisionedThroughput)
{
    public double ThrottledShare => Requests == 0 ? 0 : (double)Throttled / Requests;

    /// <summary>The difference of two of the emulator's snapshots over <paramref name="window"/>, per container with calls, busiest first.</summary>
    public static IReadOnlyList<ContainerLoad> Between(CosmosMetrics before, CosmosMetrics after, TimeSpan window) =>
        [.. after.Containers
            .Select(c =>
            {
                var earlier = before.Container(c.Database, c.Container);
                var requests = c.Partitions.Sum(p => p.Requests) - (earlier?.Partitions.Sum(p => p.Requests) ?? 0);
                var charge = c.RequestCharge - (earlier?.RequestCharge ?? 0);
                return new ContainerLoad(
                    c.Container,
                    requests,
                    c.ThrottledRequests - (earlier?.ThrottledRequests ?? 0),
                    charge / Math.Max(0.001, window.TotalSeconds),
                    c.ProvisionedThroughput);
            })
            .Where(c => c.Requests > 0)
            .OrderByDescending(c => c.Requests)];
}

/// <summary>
/// Capacity planning as in the SRE performance-analysis story: drive ONE instance of a service with
/// a constant arrival rate (open model, so queueing counts) after a warm-up, hold each rate long
/// enough for a stable p99, bracket the knee (up by a factor while the SLO holds, down while it does
/// not, then halving the gap), and size the fleet for a target rate with N+1 redundancy:
/// instances = ⌈target ÷ per-instance rate⌉ + 1. Runs with no injected latency by default, so what it
/// measures is the software's own cost (CPU µs per request per component).
/// </summary>
internal static class CapacityRunner
{
    private static readonly double[] PlanningTargets = [50, 500, 1000, 2000, 3000];

    /// <summary>At least this many requests per rate, so its p99 rests on a hundred or more slowest ones... ten at least.</summary>
    internal const int MinimumRequestsPerRate = 1000;

    public static Command Command(Option<string?> output, Func<string> defaultOutput, Action<string> log)
    {
        var prometheus = LabCommands.PrometheusOption();
        var calibration = LabCommands.CalibrationOption();
        var service = new Option<string>("--service") { Description = "gateway (invoices) or ingestion (delivery requests, completed end to end).", DefaultValueFactory = _ => "gateway" };
        var step = new Option<string?>("--step") { Description = "The step whose configuration runs (default A4 for gateway, B5 for ingestion)." };
        var slo = new Option<TimeSpan>("--slo-p99") { Description = "The p99 latency objective (e.g. 00:00:00.250).", DefaultValueFactory = _ => TimeSpan.FromMilliseconds(250) };
        var target = new Option<double>("--target-rate") { Description = "Requests per second the fleet must serve.", DefaultValueFactory = _ => 1000 };
        var startRate = new Option<double>("--start-rate") { Description = "First rate tried, requests per second.", DefaultValueFactory = _ => 50 };
        var factor = new Option<double>("--factor") { Description = "Until the knee is bracketed, each rate is the previous one times (or divided by) this.", DefaultValueFactory = _ => 2 };
        var precision = new Option<double>("--precision") { Description = "Stop when the lowest broken rate is within this factor of the highest held one.", DefaultValueFactory = _ => 1.15 };
        var maxRates = new Option<int>("--max-rates") { Description = "Most rates tried.", DefaultValueFactory = _ => 10 };
        var stepDuration = new Option<TimeSpan>("--step-duration") { Description = $"How long each rate is held at least (longer when needed for {MinimumRequestsPerRate} requests).", DefaultValueFactory = _ => TimeSpan.FromSeconds(30) };
        var warmUp = new Option<TimeSpan>("--warm-up") { Description = "Load at --warm-up-rate before the search, not measured (JIT, connections, caches).", DefaultValueFactory = _ => TimeSpan.FromSeconds(30) };
        var warmUpRate = new Option<double>("--warm-up-rate") { Description = "Rate of the warm-up, requests per second.", DefaultValueFactory = _ => 20 };
        var replicas = new Option<int>("--replicas") { Description = "Instances of the measured service.", DefaultValueFactory = _ => 1 };
        var divisor = new Option<int>("--replica-divisor") { Description = "The other services run the chart's replica counts divided by this (at least 1 each).", DefaultValueFactory = _ => 1 };
        var noProfile = new Option<bool>("--no-profile") { Description = "Skip the CPU profile of the measured service at the highest rate that held (a flame graph, taken after the search, unmeasured)." };
        var command = new Command("capacity", "Find one instance's highest rate within a p99 SLO, each component's CPU per request, and the instances a target rate needs (N+1).")
        {
            service, step, slo, target, startRate, factor, precision, maxRates, stepDuration, warmUp, warmUpRate, replicas, divisor, noProfile, output, prometheus, calibration,
        };
        command.SetAction(async (parse, cancellationToken) =>
        {
            var name = parse.GetValue(service)!.ToLowerInvariant();
            var search = new CapacitySearch(
                parse.GetValue(slo), parse.GetValue(target), parse.GetValue(startRate), parse.GetValue(factor), parse.GetValue(stepDuration))
            {
                Precision = parse.GetValue(precision),
                MaxRates = parse.GetValue(maxRates),
                WarmUp = parse.GetValue(warmUp),
                WarmUpRate = parse.GetValue(warmUpRate),
                Replicas = parse.GetValue(replicas),
                Profile = !parse.GetValue(noProfile),
            };
            if (name is not ("gateway" or "ingestion") || search.Problem() is { } problem || parse.GetValue(divisor) < 1)
            {
                Console.Error.WriteLine($"capacity: {(name is not ("gateway" or "ingestion") ? "--service must be gateway or ingestion" : search.Problem() ?? "--replica-divisor must be at least 1")}.");
                return 2;
            }

            var scenario = LabRunner.Scenario(name == "gateway" ? "A" : "B");
            var stepId = (parse.GetValue(step) ?? (name == "gateway" ? "A4" : "B5")).ToUpperInvariant();
            if (!scenario.StepIds.Contains(stepId))
            {
                Console.Error.WriteLine($"--step must be one of {string.Join(", ", scenario.StepIds)} for {name}.");
                return 2;
            }

            // The software's own cost unless told otherwise: no injected latency.
            if (!LabCommands.TryCalibration(parse.GetValue(calibration), LabCalibration.NoLatencyProfile, out var calibrated))
            {
                return 2;
            }

            var options = new LabRunOptions
            {
                Scenarios = [scenario.Id],
                Steps = [stepId],
                Mode = LabMode.Full,
                OutputDirectory = parse.GetValue(output) ?? defaultOutput(),
                PrometheusPort = parse.GetValue(prometheus),
                ReplicaDivisor = parse.GetValue(divisor),
                Calibration = calibrated,
                Log = log,
            };
            return await LabCommands.ExitCodeAsync("capacity run", async () =>
            {
                var report = await RunAsync(scenario, name == "gateway" ? ServiceKind.Gateway : ServiceKind.Ingestion, stepId, search, options, cancellationToken).ConfigureAwait(false);
                Console.WriteLine(report.Summary);
                Console.WriteLine($"Report: {report.File}");
                return 0;
            }, cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    public static async Task<(string File, string Summary)> RunAsync(LabScenario scenario, ServiceKind service, string stepId, CapacitySearch search, LabRunOptions options, CancellationToken cancellationToken)
    {
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var step = catalog[stepId];
        var context = await LabRunner.StartAtStepAsync(scenario, catalog, step, options, new Dictionary<ServiceKind, int> { [service] = search.Replicas }, warmUp: true, cancellationToken).ConfigureAwait(false);
        var deployment = context.Deployment;
        await using (deployment.ConfigureAwait(false))
        {
            var points = new List<CapacityPoint>();
            Profiling.ProfiledProcess? profiled = null;
            var sampler = new SystemSampler(deployment, TimeSpan.FromSeconds(5));
            await using (sampler.ConfigureAwait(false))
            {
                options.Log($"capacity: warming up at {search.WarmUpRate:0.#} req/s for {search.WarmUp.TotalSeconds:0} s (not measured)");
                if (search.WarmUp > TimeSpan.Zero)
                {
                    await RunRateAsync(scenario, context, search.WarmUpRate, search.WarmUp, "warm-up", cancellationToken).ConfigureAwait(false);
                }

                var rate = search.StartRate;
                while (points.Count < search.MaxRates)
                {
                    options.Log(StageLine(points.Count + 1, search, rate));
                    var point = await MeasureAsync(scenario, context, service, sampler, rate, search, options, cancellationToken).ConfigureAwait(false);
                    points.Add(point);
                    options.Log(string.Create(CultureInfo.InvariantCulture,
                        $"capacity: {rate:0.#} req/s → {point.Achieved:0.#} ok/s, p99 {point.P99Ms:0.#} ms, {point.ErrorRatio:P1} errors{(point.CompletionsPerSecond is { } c ? $", {c:0.#} completed/s end to end" : string.Empty)}, {service.Name} CPU avg {point.CpuAveragePercent:0} % → {(point.HoldsSlo ? "within" : "breaks")} the SLO"));
                    if (NextRate(points, search) is not { } next)
                    {
                        break;
                    }

                    rate = next;
                }

                profiled = await ProfileAtKneeAsync(scenario, context, service, search, points, options, cancellationToken).ConfigureAwait(false);
            }

            return await WriteReportAsync(service, step, search, points, profiled, options, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The next rate to try, or null when the knee is bracketed closely enough (or cannot be): up by the
    /// factor while every rate held, down by it while none did, then the middle of the gap between the
    /// highest rate that held and the lowest that broke.
    /// </summary>
    internal static double? NextRate(IReadOnlyList<CapacityPoint> points, CapacitySearch search)
    {
        var held = points.Where(p => p.HoldsSlo).Select(p => p.Rate).DefaultIfEmpty(0).Max();
        var broken = points.Where(p => !p.HoldsSlo).Select(p => p.Rate).DefaultIfEmpty(double.PositiveInfinity).Min();
        double next;
        if (double.IsPositiveInfinity(broken))
        {
            next = held * search.Factor;
        }
        else if (held == 0)
        {
            next = broken / search.Factor;
            if (next < CapacitySearch.LowestRate)
            {
                return null;
            }
        }
        else
        {
            if (broken / held <= search.Precision)
            {
                return null;
            }

            next = (held + broken) / 2;
        }

        next = Math.Round(next, 1);
        return next > OpenLoad.MaxRate || points.Any(p => p.Rate == next) ? null : next;
    }

    /// <summary>
    /// End to end at one rate, from the load's own time series: deliveries completed per second while
    /// the arrivals lasted, and the accepted requests not yet completed when they stopped. The load
    /// runner follows every delivery to its end after the arrivals stop, so completions counted to the
    /// end of the run — or a queue looked at after it — would credit the pipeline with its own drain.
    /// </summary>
    internal static (double CompletionsPerSecond, long BacklogAtLoadEnd) EndToEnd(IReadOnlyList<SecondSample> series, TimeSpan loadDuration)
    {
        var loadSeconds = (int)Math.Floor(loadDuration.TotalSeconds);
        var completed = series.Where(s => s.Second < loadSeconds).Sum(s => s.Completions);
        var accepted = series.Where(s => s.Second < loadSeconds).Sum(s => s.Successes);
        return (completed / (double)Math.Max(1, loadSeconds), Math.Max(0, accepted - completed));
    }

    /// <summary>Instances for a target rate with one spare: ⌈target ÷ per-instance⌉ + 1.</summary>
    internal static int InstancesNeeded(double targetRate, double perInstanceRate) =>
        perInstanceRate <= 0 ? int.MaxValue : (int)Math.Ceiling(targetRate / perInstanceRate) + 1;

    /// <summary>How long a rate is held: the step duration, or long enough for <see cref="MinimumRequestsPerRate"/> requests (at most 3 minutes).</summary>
    internal static TimeSpan HoldFor(double rate, TimeSpan stepDuration) =>
        TimeSpan.FromSeconds(Math.Max(stepDuration.TotalSeconds, Math.Min(180, MinimumRequestsPerRate / rate)));

    private static async Task<CapacityPoint> MeasureAsync(
        LabScenario scenario, LabContext context, ServiceKind service, SystemSampler sampler, double rate, CapacitySearch search, LabRunOptions options, CancellationToken cancellationToken)
    {
        var since = sampler.Now;
        var cpuBefore = sampler.CpuTimeByComponent();
        var cosmosBefore = await context.Deployment.Cosmos.MetricsAsync(cancellationToken).ConfigureAwait(false);
        var load = await RunRateAsync(scenario, context, rate, HoldFor(rate, search.StepDuration), "capacity", cancellationToken).ConfigureAwait(false);
        cancellationToken.ThrowIfCancellationRequested(); // a cancelled rate measured nothing
        var cpuAfter = sampler.CpuTimeByComponent();
        var directory = Path.Combine(options.OutputDirectory, "capacity", string.Create(CultureInfo.InvariantCulture, $"rate-{rate:0.#}"), "load");
        load.WriteFiles(directory);

        double? completions = null;
        var keepsUp = true;
        if (service == ServiceKind.Ingestion)
        {
            var endToEnd = EndToEnd(load.TimeSeries, load.LoadDuration);
            completions = endToEnd.CompletionsPerSecond;
            // A backlog of more than two seconds of arrivals when they stop means the pipeline fell behind.
            keepsUp = endToEnd.BacklogAtLoadEnd <= Math.Max(10, 2 * rate);
            // Each rate starts from an empty queue: the workflow finishes the last one's first.
            await PipelineScenario.WaitForEmptyQueueAsync(context.Deployment, TimeSpan.FromMinutes(2), cancellationToken).ConfigureAwait(false);
        }

        var cosmosAfter = await context.Deployment.Cosmos.MetricsAsync(cancellationToken).ConfigureAwait(false);
        var cosmos = ContainerLoad.Between(cosmosBefore, cosmosAfter, cosmosAfter.Timestamp - cosmosBefore.Timestamp);
        var cpu = sampler.Cpu.Where(c => c.Second >= since && c.Component == service.Name).ToList();
        var p99 = load.RequestLatency.TotalCount > 0 ? load.RequestLatency.GetValueAtPercentile(99) / 1000.0 : double.PositiveInfinity;
        var p50 = load.RequestLatency.TotalCount > 0 ? load.RequestLatency.GetValueAtPercentile(50) / 1000.0 : double.PositiveInfinity;
        var errors = load.Totals.Requests > 0 ? (double)(load.Totals.Errors + load.Totals.Unsent) / (load.Totals.Requests + load.Totals.Unsent) : 1;
        var successes = Math.Max(1, load.Totals.Successes);
        return new CapacityPoint(
            rate,
            load.Totals.Successes / Math.Max(0.001, load.LoadDuration.TotalSeconds),
            p50,
            p99,
            errors,
            cpu.Count > 0 ? cpu.Average(c => c.AveragePercent) : 0,
            cpu.Count > 0 ? cpu.Max(c => c.MaxPercent) : 0,
            cpuAfter.ToDictionary(c => c.Key, c => (c.Value - cpuBefore.GetValueOrDefault(c.Key)).TotalMicroseconds / successes, StringComparer.Ordinal),
            completions,
            keepsUp,
            p99 <= search.Slo.TotalMilliseconds && errors < 0.01 && keepsUp,
            sampler.OtherLoad.Where(s => s.Second >= since).Select(s => s.OtherCores + s.StealCores).DefaultIfEmpty(0).Average(),
            directory)
        {
            Cosmos = cosmos,
        };
    }

    /// <summary>
    /// The line that starts a rate of the search, e.g. <c>capacity: rate 3 of at most 10, 200 req/s for 30 s</c>;
    /// the rate's progress lines follow (<see cref="ProgressReporter"/>), with the rate offered.
    /// </summary>
    internal static string StageLine(int number, CapacitySearch search, double rate) =>
        string.Create(CultureInfo.InvariantCulture, $"capacity: rate {number} of at most {search.MaxRates}, {rate:0.#} req/s for {HoldFor(rate, search.StepDuration).TotalSeconds:0} s");

    private static Task<LoadTestResult> RunRateAsync(LabScenario scenario, LabContext context, double rate, TimeSpan duration, string label, CancellationToken cancellationToken) =>
        LabRunner.RunLoadAsync(
            context.Options,
            label,
            new LoadTestPlan
            {
                Scenario = scenario.Workload(context),
                Shape = OpenLoad.Constant(Math.Round(rate, 1), duration),
                Bounds = new LoadBounds { MaxDuration = duration + TimeSpan.FromSeconds(30), MaxRequests = long.MaxValue / 2 },
            },
            cancellationToken);

    /// <summary>Per rate, each Cosmos DB container's calls, 429s and RU/s against its provisioned RU/s: whether the knee is throttling.</summary>
    internal static void AppendCosmos(StringBuilder md, IReadOnlyList<CapacityPoint> ordered)
    {
        if (!ordered.Any(p => p.Cosmos.Count > 0))
        {
            return;
        }

        md.AppendLine("Cosmos DB by container (the rate's measurement and drain; a 429 is retried by the SDK after its Retry-After wait, so it shows as latency, not as an error):").AppendLine();
        md.AppendLine("| arrival rate (req/s) | container | calls | 429s | RU/s consumed | RU/s provisioned |");
        md.AppendLine("|---|---|---|---|---|---|");
        foreach (var p in ordered)
        {
            foreach (var c in p.Cosmos)
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"| {p.Rate:0.#} | {c.Container} | {c.Requests:N0} | {c.Throttled:N0} ({c.ThrottledShare:P1}) | {c.RequestUnitsPerSecond:N0} | {c.ProvisionedThroughput:N0} |");
            }
        }

        md.AppendLine();
    }

    /// <summary>
    /// Where the measured service's CPU goes at the highest rate that held: that rate once more, unmeasured, while its
    /// busiest replica is profiled (<see cref="Profiling.StepProfiler"/>) into <c>capacity/cpu-profile.svg</c>.
    /// </summary>
    private static async Task<Profiling.ProfiledProcess?> ProfileAtKneeAsync(
        LabScenario scenario, LabContext context, ServiceKind service, CapacitySearch search, IReadOnlyList<CapacityPoint> points, LabRunOptions options, CancellationToken cancellationToken)
    {
        if (!search.Profile || points.Where(p => p.HoldsSlo).MaxBy(p => p.Rate) is not { } knee)
        {
            return null;
        }

        var settle = TimeSpan.FromSeconds(3);
        options.Log(string.Create(CultureInfo.InvariantCulture, $"capacity: profiling {service.Name} at {knee.Rate:0.#} req/s for {Profiling.StepProfiler.Duration.TotalSeconds:0} s (not measured)"));
        var hold = RunRateAsync(scenario, context, knee.Rate, Profiling.StepProfiler.Duration + (2 * settle), "profile", cancellationToken);
        var since = Profiling.StepProfiler.CpuNow(context.Deployment);
        await Task.Delay(settle, cancellationToken).ConfigureAwait(false);
        try
        {
            return await Profiling.StepProfiler.ProfileBusiestAsync(
                context.Deployment, since, service.Name, Profiling.StepProfiler.Duration, Path.Combine(options.OutputDirectory, "capacity", ProfileFileName), cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (e is InvalidOperationException or IOException or TimeoutException)
        {
            options.Log($"capacity: no CPU profile: {e.Message}");
            return null;
        }
        finally
        {
            await hold.ConfigureAwait(false);
        }
    }

    /// <summary>The capacity run's flame graph, under <c>capacity/</c>.</summary>
    internal const string ProfileFileName = "cpu-profile.svg";

    private static async Task<(string File, string Summary)> WriteReportAsync(
        ServiceKind service, Step step, CapacitySearch search, IReadOnlyList<CapacityPoint> points, Profiling.ProfiledProcess? profiled, LabRunOptions options, CancellationToken cancellationToken)
    {
        var best = points.Where(p => p.HoldsSlo).MaxBy(p => p.Rate);
        var perInstance = best is null ? 0 : best.Achieved / search.Replicas;
        var ordered = points.OrderBy(p => p.Rate).ToList();
        var charts = new List<ChartSpec>
        {
            Charts.TimeSeries(
                "capacity-p99.svg",
                $"{service.Name}, {search.Replicas} instance(s): p99 latency by arrival rate",
                [new(new Series("p99", [.. ordered.Select(p => new TimePoint(p.Rate, Math.Min(p.P99Ms, 60_000)))]))],
                "p99 ms",
                references: [($"SLO {search.Slo.TotalMilliseconds:0} ms", search.Slo.TotalMilliseconds)]),
        };
        await ChartRenderer.RenderAsync(charts, Path.Combine(options.OutputDirectory, "charts"), cancellationToken).ConfigureAwait(false);

        var md = new StringBuilder();
        md.AppendLine(CultureInfo.InvariantCulture, $"# Capacity of {search.Replicas} {service.Name} instance(s) ({step.Title})").AppendLine();
        md.AppendLine(CultureInfo.InvariantCulture, $"Calibration `{options.Calibration.Name}`; the other services at the chart's replicas{(options.ReplicaDivisor > 1 ? $" ÷ {options.ReplicaDivisor}" : string.Empty)}. Warm-up {search.WarmUp.TotalSeconds:0} s at {search.WarmUpRate:0.#} req/s (not measured), then an open-model arrival rate, each rate held at least {search.StepDuration.TotalSeconds:0} s and {MinimumRequestsPerRate} requests; SLO: p99 ≤ {search.Slo.TotalMilliseconds:0} ms with < 1 % errors{(service == ServiceKind.Ingestion ? " and the workflow keeping up (no backlog of more than two seconds of arrivals)" : string.Empty)}. Machine load average at the end: {MachineLoad.Describe()}. Each rate's load results (JSON, CSV per second, percentiles) are in `capacity/rate-<rate>/load/`.").AppendLine();
        var components = points.SelectMany(p => p.CpuMicrosecondsPerRequest.Keys).Distinct().Order(StringComparer.Ordinal).ToList();
        md.AppendLine("| order | arrival rate (req/s) | achieved (ok/s) |" + (service == ServiceKind.Ingestion ? " completed end to end (/s) |" : string.Empty) + " p50 (ms) | p99 (ms) | errors | other processes (cores) | SLO |");
        md.AppendLine("|---|---|---|" + (service == ServiceKind.Ingestion ? "---|" : string.Empty) + "---|---|---|---|---|");
        for (var i = 0; i < points.Count; i++)
        {
            var p = points[i];
            md.AppendLine(CultureInfo.InvariantCulture, $"| {i + 1} | {p.Rate:0.#} | {p.Achieved:0.#} |{(p.CompletionsPerSecond is { } c ? $" {c:0.#} |" : string.Empty)} {p.P50Ms:0.#} | {p.P99Ms:0.#} | {p.ErrorRatio:P1} | {p.OtherCores:0.00} | {(p.HoldsSlo ? "holds" : "broken")} |");
        }

        md.AppendLine().AppendLine("CPU per successful request, µs, by component (all its processes; `lab` is the load driver and the balancers):").AppendLine();
        md.AppendLine("| arrival rate (req/s) | " + string.Join(" | ", components) + " | total |");
        md.AppendLine("|---|" + string.Concat(components.Select(_ => "---|")) + "---|");
        foreach (var p in ordered)
        {
            var perComponent = string.Join(" | ", components.Select(c => p.CpuMicrosecondsPerRequest.GetValueOrDefault(c).ToString("N0", CultureInfo.InvariantCulture)));
            md.AppendLine(CultureInfo.InvariantCulture, $"| {p.Rate:0.#} | {perComponent} | {p.CpuMicrosecondsPerRequest.Values.Sum():N0} |");
        }

        md.AppendLine();
        AppendCosmos(md, ordered);
        var summary = new StringBuilder();
        if (best is null)
        {
            summary.AppendLine(CultureInfo.InvariantCulture, $"No rate tried held the SLO (down to {points.Min(p => p.Rate):0.#} req/s): lower --start-rate or look at the errors in the load files.");
        }
        else
        {
            summary.AppendLine(CultureInfo.InvariantCulture, $"Highest rate holding the SLO: {best.Rate:0.#} req/s offered, {best.Achieved:0.#} ok/s over {search.Replicas} instance(s): **{perInstance:0.#} req/s per instance** (p99 {best.P99Ms:0.#} ms).");
            var broken = points.Where(p => !p.HoldsSlo && p.Rate > best.Rate).MinBy(p => p.Rate);
            summary.AppendLine(broken is null
                ? "No rate above it broke the SLO within the search's limits: the knee is higher (raise --max-rates or --start-rate)."
                : string.Create(CultureInfo.InvariantCulture, $"The knee lies between {best.Rate:0.#} and {broken.Rate:0.#} req/s (p99 {broken.P99Ms:0.#} ms there)."));
            summary.AppendLine(CultureInfo.InvariantCulture, $"Instances for the target of {search.TargetRate:0.#} req/s with N+1 redundancy (⌈target ÷ per-instance⌉ + 1): **{InstancesNeeded(search.TargetRate, perInstance)}**.");
        }

        md.Append(summary).AppendLine();
        if (best is not null)
        {
            md.AppendLine("| target rate (req/s) | instances (N+1) |").AppendLine("|---|---|");
            foreach (var target in PlanningTargets.Append(search.TargetRate).Distinct().Order())
            {
                md.AppendLine(CultureInfo.InvariantCulture, $"| {target:0.#}{(target == search.TargetRate ? " (target)" : string.Empty)} | {InstancesNeeded(target, perInstance)} |");
            }
        }

        md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"![{charts[0].Title}](charts/{charts[0].FileName})");
        if (profiled is not null)
        {
            md.AppendLine().AppendLine(CultureInfo.InvariantCulture, $"Where the CPU goes at {best!.Rate:0.#} req/s: {profiled.Component} (pid {profiled.ProcessId}), {profiled.Samples:N0} samples.").AppendLine();
            md.AppendLine(CultureInfo.InvariantCulture, $"![CPU profile of {profiled.Component}](capacity/{ProfileFileName})").AppendLine();
            md.AppendLine("```").AppendLine(profiled.TopFrames.TrimEnd()).AppendLine("```");
        }

        var file = Path.Combine(options.OutputDirectory, "capacity.md");
        await File.WriteAllTextAsync(file, md.ToString(), cancellationToken).ConfigureAwait(false);
        return (file, summary.ToString().TrimEnd());
    }
}

/// <summary>How the capacity search proceeds.</summary>
internal sealed record CapacitySearch(TimeSpan Slo, double TargetRate, double StartRate, double Factor, TimeSpan StepDuration)
{
    /// <summary>Going down, the search gives up below this rate (requests per second).</summary>
    public const double LowestRate = 0.5;

    /// <summary>The search ends once the lowest broken rate is within this factor of the highest held one.</summary>
    public double Precision { get; init; } = 1.15;

    public int MaxRates { get; init; } = 10;

    public TimeSpan WarmUp { get; init; } = TimeSpan.FromSeconds(30);

    public double WarmUpRate { get; init; } = 20;

    public int Replicas { get; init; } = 1;

    /// <summary>Whether the measured service is profiled at the highest rate that held, after the search.</summary>
    public bool Profile { get; init; } = true;

    /// <summary>The first setting out of range, as a sentence fragment; null when the search can run.</summary>
    public string? Problem() =>
        Slo <= TimeSpan.Zero ? "--slo-p99 must be positive"
        : TargetRate <= 0 ? "--target-rate must be positive"
        : StartRate is < LowestRate or > OpenLoad.MaxRate ? $"--start-rate must be between {LowestRate} and {OpenLoad.MaxRate}"
        : Factor <= 1 ? "--factor must be above 1"
        : Precision <= 1 ? "--precision must be above 1"
        : MaxRates < 1 ? "--max-rates must be at least 1"
        : StepDuration <= TimeSpan.Zero ? "--step-duration must be positive"
        : WarmUp < TimeSpan.Zero ? "--warm-up must not be negative"
        : WarmUpRate is <= 0 or > OpenLoad.MaxRate ? $"--warm-up-rate must be above 0 and at most {OpenLoad.MaxRate}"
        : Replicas < 1 ? "--replicas must be at least 1"
        : null;
}
