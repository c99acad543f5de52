using System.CommandLine;
using System.Globalization;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;
using DroneDelivery.LoadDriver.Results;

namespace DroneDelivery.Lab.Chaos;

/// <summary>How long and how hard a chaos run is: one of the three modes, with any option given on the command line over it.</summary>
internal sealed record ChaosSettings
{
    public required string Mode { get; init; }

    public required ChaosPlan Plan { get; init; }

    /// <summary>Delivery requests per second, steady, so the completion rate before a fault is the one to recover.</summary>
    public required double Rate { get; init; }

    public required int ReplicaDivisor { get; init; }

    /// <summary>The longest wait for the queue to drain after the load (locks held by killed replicas must expire first).</summary>
    public required TimeSpan DrainBound { get; init; }

    public required LabMode LabMode { get; init; }

    public int Seed { get; init; } = 7;

    public string CosmosContainer { get; init; } = "dronedelivery/packages";

    /// <summary>CI: about 2 minutes on 2 cores, every fault once, half the step's replicas (two Workflows, so one killed leaves work going on).</summary>
    public static ChaosSettings Ci { get; } = Of("ci", load: 60, warmup: 10, killEvery: 15, window: 8, restartDelay: 2, rate: 8, divisor: 2, drain: 120, LabMode.Quick);

    /// <summary>Quick: at most 10 minutes on 2 cores, half the step's replicas.</summary>
    public static ChaosSettings Quick { get; } = Of("quick", load: 240, warmup: 40, killEvery: 20, window: 15, restartDelay: 3, rate: 12, divisor: 2, drain: 150, LabMode.Quick);

    /// <summary>Full: the step's replicas and uncompressed locks, 8 minutes of load.</summary>
    public static ChaosSettings Full { get; } = Of("full", load: 480, warmup: 60, killEvery: 30, window: 30, restartDelay: 5, rate: 20, divisor: 1, drain: 480, LabMode.Full);

    /// <summary>A mode; durations in seconds, the quiet tail as long as the warm-up.</summary>
    private static ChaosSettings Of(string mode, int load, int warmup, int killEvery, int window, int restartDelay, double rate, int divisor, int drain, LabMode labMode) => new()
    {
        Mode = mode,
        Plan = new ChaosPlan
        {
            LoadDuration = TimeSpan.FromSeconds(load),
            Warmup = TimeSpan.FromSeconds(warmup),
            QuietTail = TimeSpan.FromSeconds(warmup),
            KillEvery = TimeSpan.FromSeconds(killEvery),
            FaultWindow = TimeSpan.FromSeconds(window),
            RestartDelay = TimeSpan.FromSeconds(restartDelay),
        },
        Rate = rate,
        ReplicaDivisor = divisor,
        DrainBound = TimeSpan.FromSeconds(drain),
        LabMode = labMode,
    };
}

/// <summary>
/// <c>chaos</c>: a scenario-B step under a steady load of delivery requests while a fault schedule runs
/// (<see cref="FaultSchedule"/>), then, once the queue has drained, verdicts from the stores themselves
/// (<see cref="ChaosVerdicts"/>). Writes <c>chaos.md</c> and <c>chaos.json</c>; exits 1 when a check fails.
/// </summary>
internal static class ChaosRunner
{
    public static Command Command(Option<string?> output, Func<string> defaultOutput, Action<string> log)
    {
        var quick = new Option<bool>("--quick") { Description = "At most 10 minutes on 2 cores: 4 minutes of load, half the step's replicas, time compressed." };
        var ci = new Option<bool>("--ci") { Description = "About 2 minutes on 2 cores: 60 s of load, half the step's replicas, every fault once." };
        var step = new Option<string>("--step") { Description = "The scenario-B step whose configuration runs.", DefaultValueFactory = _ => "B5" };
        var duration = new Option<TimeSpan?>("--duration") { Description = "How long the load lasts (overrides the mode's)." };
        var rate = new Option<double?>("--rate") { Description = "Delivery requests per second (overrides the mode's)." };
        var divisor = new Option<int?>("--replica-divisor") { Description = "Run the step's replica counts divided by this (overrides the mode's)." };
        var killEvery = new Option<TimeSpan?>("--kill-every") { Description = "How often a Workflow or backend replica is killed (overrides the mode's)." };
        var calibration = LabCommands.CalibrationOption();
        var dashboard = LabCommands.DashboardOption();
        var command = new Command("chaos", "Run a scenario-B step under load while processes are killed and dependencies fail; check from the stores that nothing was lost, duplicated or left half-done.")
        {
            quick, ci, step, duration, rate, divisor, killEvery, output, dashboard, calibration,
        };
        command.SetAction(async (parse, cancellationToken) =>
        {
            if (parse.GetValue(quick) && parse.GetValue(ci))
            {
                Console.Error.WriteLine("Choose --quick or --ci, not both.");
                return 2;
            }

            var settings = parse.GetValue(ci) ? ChaosSettings.Ci : parse.GetValue(quick) ? ChaosSettings.Quick : ChaosSettings.Full;
            settings = settings with
            {
                Plan = settings.Plan with
                {
                    LoadDuration = parse.GetValue(duration) ?? settings.Plan.LoadDuration,
                    KillEvery = parse.GetValue(killEvery) ?? settings.Plan.KillEvery,
                },
                Rate = parse.GetValue(rate) ?? settings.Rate,
                ReplicaDivisor = parse.GetValue(divisor) ?? settings.ReplicaDivisor,
            };
            var stepId = parse.GetValue(step)!.ToUpperInvariant();
            var scenario = new PipelineScenario();
            if (!scenario.StepIds.Contains(stepId, StringComparer.Ordinal))
            {
                Console.Error.WriteLine($"--step must be a scenario-B step ({string.Join(", ", scenario.StepIds)}), not '{stepId}'.");
                return 2;
            }

            if (settings.Plan.Problem() is { } problem || settings.Rate is <= 0 or > OpenLoad.MaxRate || settings.ReplicaDivisor < 1)
            {
                Console.Error.WriteLine(settings.Plan.Problem() ?? "--rate must be positive and --replica-divisor at least 1.");
                return 2;
            }

            if (!LabCommands.TryCalibration(parse.GetValue(calibration), LabCalibration.DefaultProfile, out var calibrated))
            {
                return 2;
            }

            var options = new LabRunOptions
            {
                Scenarios = [scenario.Id],
                Steps = [stepId],
                Mode = settings.LabMode,
                OutputDirectory = parse.GetValue(output) ?? defaultOutput(),
                ReplicaDivisor = settings.ReplicaDivisor,
                Calibration = calibrated,
                RedisPersistence = true,
                Dashboard = parse.GetValue(dashboard),
                Log = log,
            };
            return await LabCommands.ExitCodeAsync("chaos run", () => RunAsync(scenario, stepId, settings, options, cancellationToken), cancellationToken).ConfigureAwait(false);
        });
        return command;
    }

    public static async Task<int> RunAsync(PipelineScenario scenario, string stepId, ChaosSettings settings, LabRunOptions options, CancellationToken cancellationToken)
    {
        var clock = System.Diagnostics.Stopwatch.StartNew();
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var step = catalog[stepId];
        var schedule = FaultSchedule.Build(settings.Plan);
        options.Log($"chaos ({settings.Mode}): {step.Title}, {settings.Rate:0.#} requests/s for {settings.Plan.LoadDuration.TotalSeconds:0} s, {schedule.Count} faults; report: {options.OutputDirectory}");
        var context = await LabRunner.StartAtStepAsync(scenario, catalog, step, options, new Dictionary<ServiceKind, int>(), warmUp: false, cancellationToken).ConfigureAwait(false);
        var deployment = context.Deployment;
        await using (deployment.ConfigureAwait(false))
        {
            using var injector = new LocalFaultInjector(deployment, settings.CosmosContainer, settings.Seed);
            var counted = new CountingFaultInjector(injector, schedule.Count);
            var started = clock.Elapsed;
            var plan = new LoadTestPlan
            {
                Scenario = scenario.Workload(context),
                Shape = new OpenLoad(settings.Rate, settings.Rate, TimeSpan.Zero) { Hold = settings.Plan.LoadDuration },
                Bounds = new LoadBounds { MaxDuration = settings.Plan.LoadDuration + TimeSpan.FromMinutes(2), MaxRequests = long.MaxValue / 2 },
                Http = scenario.Clients(context),
            };
            var loadStart = DateTimeOffset.UtcNow;
            var loadTask = LabRunner.RunLoadAsync(options, "chaos", plan, cancellationToken, counted.Describe);
            IReadOnlyList<FaultRecord> faults;
            try
            {
                faults = await FaultScheduler.RunAsync(schedule, counted, options.Time, options.Log, cancellationToken).ConfigureAwait(false);
            }
            finally
            {
                await ClearFaultsAsync(injector, schedule).ConfigureAwait(false);
            }

            var load = await loadTask.ConfigureAwait(false);
            load.WriteFiles(Path.Combine(options.OutputDirectory, "chaos", "load"));
            var loadEnd = loadStart + load.LoadDuration;
            options.Log($"load over: {load.Totals.Successes} accepted, {load.Totals.Errors} failed; waiting for the queue to drain (at most {settings.DrainBound.TotalSeconds:0} s)");
            var drained = await PipelineScenario.WaitForEmptyQueueAsync(deployment, settings.DrainBound, cancellationToken).ConfigureAwait(false);
            var observedUntil = DateTimeOffset.UtcNow;

            var injected = await injector.InjectedAsync(cancellationToken).ConfigureAwait(false);
            var stores = await StoreReader.ReadAsync(deployment, PipelineScenario.Queue, cancellationToken).ConfigureAwait(false);
            var ingestion = new IngestionCounts(load.StatusCounts.GetValueOrDefault("202"), load.Totals.Timeouts + load.Totals.ConnectionErrors + load.Totals.Cancelled);
            var figures = ChaosVerdicts.Figures(stores, ingestion, faults, loadStart, observedUntil);
            IReadOnlyList<ChaosVerdict> verdicts =
            [
                .. ChaosVerdicts.Verdicts(figures, faults),
                new("the queue drained after the load", drained, string.Create(CultureInfo.InvariantCulture,
                    $"{(drained ? "empty" : "messages still queued")} {(observedUntil - loadEnd).TotalSeconds:0} s after the load (bound {settings.DrainBound.TotalSeconds:0} s)")),
            ];

            var report = new ChaosReport(settings, step.Id, loadStart, loadEnd, observedUntil, load, figures, faults, injected, verdicts, (clock.Elapsed - started).TotalSeconds);
            var (markdown, _) = await ChaosReportWriter.WriteAsync(report, options.OutputDirectory, cancellationToken).ConfigureAwait(false);

            Console.WriteLine();
            Console.WriteLine("Verdicts:");
            foreach (var verdict in verdicts)
            {
                Console.WriteLine($"  {(verdict.Passed ? "PASS" : "FAIL")}  {verdict.Check} — {verdict.Measured}");
            }

            Console.WriteLine();
            Console.WriteLine($"Report: {markdown}");
            options.Log(string.Create(CultureInfo.InvariantCulture, $"chaos run took {clock.Elapsed.TotalSeconds:0} s"));
            return verdicts.All(v => v.Passed) ? 0 : 1;
        }
    }

    /// <summary>Ends every window fault, whatever happened to the schedule, so the stores can be read.</summary>
    private static async Task ClearFaultsAsync(LocalFaultInjector injector, IReadOnlyList<ScheduledFault> schedule)
    {
        foreach (var fault in schedule.Where(f => f.Kind is FaultKind.CosmosErrors or FaultKind.ServiceBusConnectionDrops).DistinctBy(f => f.Kind))
        {
            try
            {
                await injector.EndAsync(fault, CancellationToken.None).ConfigureAwait(false);
            }
            catch (Exception e) when (e is HttpRequestException or InvalidOperationException or TaskCanceledException)
            {
                // The emulator is gone (the run is being stopped); nothing to clear.
            }
        }
    }
}
