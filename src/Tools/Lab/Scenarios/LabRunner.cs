using System.Globalization;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Profiling;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>The results of one scenario in a lab run.</summary>
internal sealed record ScenarioOutcome(LabScenario Scenario, IReadOnlyList<StepResult> Steps, IReadOnlyList<Verdict> Verdicts)
{
    /// <summary>What the scenario's model predicts for steps the machine cannot show.</summary>
    public IReadOnlyList<ModelPrediction> Predictions { get; init; } = [];

    /// <summary>The model scale the scenario started at, and why (a step measured again ran smaller: its own <see cref="StepResult.Scale"/>).</summary>
    public ScaleChoice? Scale { get; init; }
}

/// <summary>Replays scenarios step by step on the local system and measures each step.</summary>
internal static class LabRunner
{
    public static IReadOnlyList<LabScenario> All { get; } = [new GatewayScenario(), new PipelineScenario()];

    public static LabScenario Scenario(string id) =>
        All.FirstOrDefault(s => string.Equals(s.Id, id, StringComparison.OrdinalIgnoreCase))
        ?? throw new ArgumentException($"Unknown scenario '{id}'. Known: {string.Join(", ", All.Select(s => s.Id))}.");

    public static async Task<IReadOnlyList<ScenarioOutcome>> RunAsync(LabRunOptions options, CancellationToken cancellationToken)
    {
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var outcomes = new List<ScenarioOutcome>();
        foreach (var scenario in options.Scenarios.Select(Scenario))
        {
            var stepIds = scenario.StepIds.Where(id => options.Steps.Count == 0 || options.Steps.Contains(id, StringComparer.OrdinalIgnoreCase)).ToList();
            if (stepIds.Count == 0)
            {
                continue;
            }

            outcomes.Add(await RunScenarioAsync(scenario, stepIds, catalog, options, cancellationToken).ConfigureAwait(false));
        }

        return outcomes;
    }

    private static async Task<ScenarioOutcome> RunScenarioAsync(
        LabScenario scenario, IReadOnlyList<string> stepIds, StepCatalog catalog, LabRunOptions options, CancellationToken cancellationToken)
    {
        options.Log($"scenario {scenario.Id}: {scenario.Title} — steps {string.Join(", ", stepIds)} ({options.Mode.ToString().ToLowerInvariant()} mode)");
        var results = new List<StepResult>();
        var clock = System.Diagnostics.Stopwatch.StartNew();
        ScaleChoice choice;
        var deployment = await StartDeploymentAsync(scenario, catalog, options, new Dictionary<ServiceKind, int>(), cancellationToken).ConfigureAwait(false);
        await using (deployment.ConfigureAwait(false))
        {
            var context = new LabContext(deployment, options, catalog);
            var steps = StepsToRun(stepIds, catalog, options.WhatIf);
            choice = await ChooseScaleAsync(scenario, context, steps, cancellationToken).ConfigureAwait(false);
            options.Log(string.Create(CultureInfo.InvariantCulture, $"  {choice.Reason} ({clock.Elapsed.TotalSeconds:0} s from the start)"));
            if (choice.MachineTooSmall)
            {
                throw new MachineTooSmallException(choice.Reason);
            }

            await deployment.SetScaleAsync(choice.Scale, cancellationToken).ConfigureAwait(false);

            // The probe ran the probe step's requests through every process of the system: a first step with the
            // same settings, on the same processes (nothing fresh), starts warm.
            var warm = choice.Probe is not null && !scenario.FreshEachStep;
            foreach (var step in steps)
            {
                options.Log($"step {step.Title}");
                // Where a run's time goes, step by step: (re)starting processes, warming up or filling the cache,
                // and measuring (load, drain and any second attempt).
                var started = clock.Elapsed;
                var restarted = await deployment.ApplyAsync(step, fresh: scenario.FreshEachStep, cancellationToken).ConfigureAwait(false);
                var applied = clock.Elapsed;
                if (!warm || restarted || step.Id != scenario.ProbeStepId || step.WhatIf is not null)
                {
                    await scenario.WarmUpAsync(context, step, cancellationToken).ConfigureAwait(false);
                }

                warm = false;
                await scenario.BeforeStepAsync(context, step, cancellationToken).ConfigureAwait(false);
                await SettleAsync(context, step).ConfigureAwait(false);
                var ready = clock.Elapsed;
                results.Add(await MeasureWithOneRetryAsync(
                    options.RemeasureDisturbed,
                    () => RunStepAsync(scenario, context, step, cancellationToken),
                    async first =>
                    {
                        string reason;
                        if (first.Disturbed)
                        {
                            reason = first.Disturbance;
                        }
                        else if (ScaleForRetry(deployment.Scale, options.Calibration) is { } smaller)
                        {
                            reason = $"it was machine-bound ({first.MachineBoundReason}); measured again at scale {smaller}, which the rest of the scenario keeps";
                            await deployment.SetScaleAsync(smaller, cancellationToken).ConfigureAwait(false);
                        }
                        else
                        {
                            return null;
                        }

                        context.Log($"  {step.Id}: measuring the step again: {reason}");
                        var loadFiles = LoadDirectory(context, step);
                        Directory.Move(loadFiles, loadFiles + "-earlier");
                        await deployment.ApplyAsync(step, fresh: scenario.FreshEachStep, cancellationToken).ConfigureAwait(false);
                        await scenario.WarmUpAsync(context, step, cancellationToken).ConfigureAwait(false);
                        await scenario.BeforeStepAsync(context, step, cancellationToken).ConfigureAwait(false);
                        await SettleAsync(context, step).ConfigureAwait(false);
                        return reason;
                    }).ConfigureAwait(false));
                var result = results[^1];
                options.Log(string.Create(CultureInfo.InvariantCulture,
                    $"  {step.Id} took {(clock.Elapsed - started).TotalSeconds:0} s: processes {(applied - started).TotalSeconds:0} s, before the load (warm-up, cache fill) {(ready - applied).TotalSeconds:0} s, measurement {(clock.Elapsed - ready).TotalSeconds:0} s (load {result.Load.LoadDuration.TotalSeconds:0} s){(result.EarlierAttemptReason is null ? string.Empty : ", measured twice")}; {CpuLine(result)}"));
            }
        }

        options.Log(string.Create(CultureInfo.InvariantCulture, $"scenario {scenario.Id} took {clock.Elapsed.TotalSeconds:0} s"));

        var byStep = results.Where(r => r.Step.WhatIf is null).ToDictionary(r => r.Step.Id, StringComparer.OrdinalIgnoreCase);
        return new ScenarioOutcome(scenario, results, Judged([.. scenario.Verdicts(byStep, options.Mode), .. scenario.WhatIfVerdicts(results, options.Mode)], results))
        {
            Predictions = scenario.Predictions(byStep, catalog),
            Scale = choice,
        };
    }

    /// <summary>
    /// Applies the scenario's probe step, loads what the steps read, and chooses the model scale: the one given
    /// (<c>--scale</c>), or one that fits this machine, from a probe of it at scale 1 (<see cref="ScaleSelection"/>).
    /// </summary>
    private static async Task<ScaleChoice> ChooseScaleAsync(LabScenario scenario, LabContext context, IReadOnlyList<Step> steps, CancellationToken cancellationToken)
    {
        var probeStep = context.Catalog[scenario.ProbeStepId];
        await context.Deployment.ApplyAsync(probeStep, fresh: scenario.FreshEachStep, cancellationToken).ConfigureAwait(false);
        await scenario.PrepareAsync(context, [probeStep, .. steps], cancellationToken).ConfigureAwait(false);
        if (context.Options.Scale is { } forced)
        {
            return ScaleSelection.Forced(forced);
        }

        var rate = ScaleSelection.ProbeRate(scenario);
        context.Log(string.Create(CultureInfo.InvariantCulture, $"  probing this machine with {probeStep.Id}'s settings at scale 1 ({rate:0} requests/s unmeasured, rest, then {rate:0} requests/s measured, {ScaleSelection.Window.TotalSeconds:0} s each)"));
        var probe = await ScaleSelection.ProbeAsync(scenario, context, probeStep, cancellationToken).ConfigureAwait(false);
        context.Log($"  probe: {probe.Describe()}");
        return ScaleSelection.Choose(probe, scenario.PeakRate(context), context.Calibration);
    }

    /// <summary>After a warm-up, until the system's CPU stops falling (<see cref="ScaleSelection.SettleAsync"/>).</summary>
    private static async Task SettleAsync(LabContext context, Step step)
    {
        var rest = await ScaleSelection.SettleAsync(context.Deployment, CancellationToken.None).ConfigureAwait(false);
        context.Log(string.Create(CultureInfo.InvariantCulture, $"  {step.Id}: the system came to rest {rest.Seconds:0} s after the warm-up ({rest.RestingCores:0.00} cores)"));
    }

    /// <summary>The scale a machine-bound step is measured again at: 0.6 of the one it ran at, no less than the smallest; null when there is none smaller.</summary>
    internal static ModelScale? ScaleForRetry(ModelScale current, LabCalibration calibration)
    {
        var smaller = ModelScale.RoundedDown(Math.Max(calibration.MinimumScale, current.Value * 0.6));
        return smaller.Value < current.Value ? smaller : null;
    }

    /// <summary>
    /// The verdicts with those that read a machine-bound step's figures marked as not judged: shown, never counted
    /// as the case study's PASS or FAIL.
    /// </summary>
    internal static IReadOnlyList<Verdict> Judged(IReadOnlyList<Verdict> verdicts, IReadOnlyList<StepResult> results)
    {
        var bound = results.Where(r => r.MachineBound).ToDictionary(r => r.Step.Label, StringComparer.OrdinalIgnoreCase);
        return [.. verdicts.Select(verdict =>
            new[] { verdict.StepId }.Concat(verdict.ComparedWith).FirstOrDefault(bound.ContainsKey) is { } id
                ? verdict with { NotJudgedBecause = $"{id} was machine-bound: {bound[id].MachineBoundReason}" }
                : verdict)];
    }

    /// <summary>The step's CPU against its budget, for the console.</summary>
    internal static string CpuLine(StepResult result) =>
        result.Budget is { } budget
            ? string.Create(CultureInfo.InvariantCulture, $"scale {result.Scale:0.##}, system CPU {result.SystemCpuPeakCores:0.00} cores at its busiest {CpuBudget.WindowSeconds} s of a budget of {budget.Describe()}{(result.CoreWaitShare is { } wait ? $", {wait:0.00} s waited for a core per CPU second" : string.Empty)}{(result.MachineBound ? " — MACHINE-BOUND: " + result.MachineBoundReason : string.Empty)}")
            : string.Create(CultureInfo.InvariantCulture, $"scale {result.Scale:0.##}");

    /// <summary>The chosen steps, each followed by its what-if when the run has one.</summary>
    internal static List<Step> StepsToRun(IEnumerable<string> stepIds, StepCatalog catalog, WhatIf? whatIf) =>
        [.. stepIds.SelectMany(id => whatIf is null ? [catalog[id]] : new[] { catalog[id], catalog.WhatIf(id, whatIf) })];

    /// <summary>The ids of the steps a run measures, scenario by scenario (before any what-if).</summary>
    internal static IEnumerable<string> ChosenStepIds(LabRunOptions options) =>
        options.Scenarios.Select(Scenario).SelectMany(s => s.StepIds.Where(id => options.Steps.Count == 0 || options.Steps.Contains(id, StringComparer.OrdinalIgnoreCase)));

    /// <summary>
    /// Measures a step; when the machine stood still during it, or bound it (its figures would show the machine
    /// rather than the system), lets <paramref name="prepareRetry"/> reset the step to the same starting point
    /// — for a machine-bound step, at a smaller scale — and measures it once more, keeping the second figures
    /// (still marked if that attempt was disturbed or bound too). <paramref name="prepareRetry"/> answers why it
    /// measures again, or null when another attempt cannot help (the smallest scale already).
    /// </summary>
    internal static async Task<StepResult> MeasureWithOneRetryAsync(bool remeasure, Func<Task<StepResult>> measure, Func<StepResult, Task<string?>> prepareRetry)
    {
        var first = await measure().ConfigureAwait(false);
        if (!remeasure || !(first.Disturbed || first.MachineBound))
        {
            return first;
        }

        if (await prepareRetry(first).ConfigureAwait(false) is not { } reason)
        {
            return first;
        }

        var second = await measure().ConfigureAwait(false);
        return second with { EarlierAttemptStallSeconds = first.LongestStallSeconds, EarlierAttemptReason = reason };
    }

    /// <summary>Starts the local system for a scenario (its first step is applied by the caller).</summary>
    internal static Task<LocalDeployment> StartDeploymentAsync(
        LabScenario scenario, StepCatalog catalog, LabRunOptions options, IReadOnlyDictionary<ServiceKind, int> replicaOverrides, CancellationToken cancellationToken) =>
        LocalDeployment.StartAsync(
            new DeploymentOptions
            {
                WorkDirectory = Path.Combine(options.OutputDirectory, "system", scenario.Id),
                Containers = scenario.Containers(catalog),
                CosmosDatabaseId = catalog.Defaults.String("cosmosDb.databaseId") ?? "dronedelivery",
                CosmosLatency = options.Calibration.CosmosLatency,
                ServiceBusLatency = options.Calibration.ServiceBusLatency,
                TimeScale = options.Calibration.TimeScale(options.Mode),
                ReplicaDivisor = options.ReplicaDivisorFor(scenario),
                Services = scenario.Services,
                ReplicaOverrides = replicaOverrides,
                Prometheus = options.PrometheusPort is { } port ? (port, Path.Combine(options.OutputDirectory, "prometheus")) : null,
                RedisPersistence = options.RedisPersistence,
                Dashboard = options.Dashboard || options.Traces,
                // Traces for the report alone: a sample (the dashboard's own view, --dashboard, keeps them all).
                DeploymentValues = options.Traces && !options.Dashboard ? options.DeploymentValues.MergedWith(SampledTraces) : options.DeploymentValues,
                Log = options.Log,
            },
            cancellationToken);

    /// <summary>
    /// Starts the local system at one step, seeded and ready for load (soak, capacity and chaos runs), warmed
    /// up when <paramref name="warmUp"/>; the caller disposes the deployment.
    /// </summary>
    internal static async Task<LabContext> StartAtStepAsync(
        LabScenario scenario, StepCatalog catalog, Step step, LabRunOptions options, IReadOnlyDictionary<ServiceKind, int> replicaOverrides, bool warmUp, CancellationToken cancellationToken)
    {
        var deployment = await StartDeploymentAsync(scenario, catalog, options, replicaOverrides, cancellationToken).ConfigureAwait(false);
        try
        {
            var context = new LabContext(deployment, options, catalog);
            await deployment.ApplyAsync(step, fresh: true, cancellationToken).ConfigureAwait(false);
            await scenario.PrepareAsync(context, [step], cancellationToken).ConfigureAwait(false);
            if (warmUp)
            {
                await scenario.WarmUpAsync(context, step, cancellationToken).ConfigureAwait(false);
            }

            await scenario.BeforeStepAsync(context, step, cancellationToken).ConfigureAwait(false);
            return context;
        }
        catch
        {
            await deployment.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// CPU and thread-pool figures of the samples taken since <paramref name="since"/>, and the step's CPU budget.
    /// The budget is held from <paramref name="judgedFrom"/> on (default <paramref name="since"/>): a step load's
    /// first fifth asks a fifth of its peak or less, and what the system spends there is the start of the
    /// processes the step started — the runtime compiling the code their first requests reach — not the model.
    /// </summary>
    internal static StepResult WithSystemFigures(StepResult result, SystemSampler sampler, double since, double loadStartOnSampler, double budgetShare, double? judgedFrom = null)
    {
        var cpu = sampler.Cpu.Where(c => c.Second >= since).ToList();
        var system = sampler.SystemCpu.Where(c => c.Second >= since).ToList();
        var judged = judgedFrom ?? since;
        var other = sampler.OtherLoad.Where(s => s.Second >= judged).Select(s => s.OtherCores + s.StealCores).DefaultIfEmpty(0).Average();
        return result with
        {
            SystemCpuPeakCores = CpuBudget.PeakCores([.. system.Where(c => c.Second >= judged)]),
            SystemCpuAverageCores = system.Select(c => c.Cores).DefaultIfEmpty(0).Average(),
            SystemCpuSeries = new Series("whole system", [.. system.Select(c => new TimePoint(c.Second - loadStartOnSampler, c.Cores))]),
            Budget = new CpuBudget(CpuBudget.MachineCores, other, budgetShare, MachineCpu.HardwareCores),
            ThreadPoolSaturation = CpuBudget.ThreadPoolSaturation([.. sampler.ThreadPool.Where(t => t.Second >= judged)]),
            CoreWaitShare = CpuBudget.CoreWaitShare([.. sampler.RunQueue.Where(t => t.Second >= judged)]),
            Cpu = [.. cpu.GroupBy(c => c.Component).OrderBy(g => g.Key, StringComparer.Ordinal)
                .Select(g => new CpuFigures(g.Key, g.Average(c => c.AveragePercent), g.Max(c => c.MaxPercent)))],
            CpuSeries = [.. cpu.GroupBy(c => c.Component).OrderBy(g => g.Key, StringComparer.Ordinal)
                .Select(g => new Series(g.Key, [.. g.Select(c => new TimePoint(c.Second - loadStartOnSampler, c.AveragePercent))]))],
            ThreadPoolQueueMax = sampler.ThreadPool.Where(t => t.Second >= since)
                .GroupBy(t => t.Component)
                .ToDictionary(g => g.Key, g => g.Max(t => t.MaxQueueLength)),
            LongestStallSeconds = sampler.Stalls.Where(s => s.Second >= since).Select(s => s.Seconds).DefaultIfEmpty(0).Max(),
            OtherCores = other,
        };
    }

    private static async Task<StepResult> RunStepAsync(LabScenario scenario, LabContext context, Step step, CancellationToken cancellationToken)
    {
        var sampler = new SystemSampler(context.Deployment, TimeSpan.FromSeconds(2));
        await using (sampler.ConfigureAwait(false))
        {
            var samplingStart = sampler.Now;
            var baseline = await scenario.BaselineAsync(context, step, sampler, cancellationToken).ConfigureAwait(false);
            var running = context.Deployment.Services.Values.Where(set => set.Replicas.Count > 0).Select(set => set.Service).ToList();
            var metricsBefore = await MetricsSnapshot.TakeAsync(sampler, running, cancellationToken).ConfigureAwait(false);
            var loadStart = DateTimeOffset.UtcNow;
            var loadStartOnSampler = sampler.Now;
            var plan = scenario.Plan(context, step);
            var profile = context.Options.Profile
                ? ProfileDuringLoadAsync(context, step, plan.Shape.Duration, StepProfiler.CpuNow(context.Deployment), cancellationToken)
                : Task.FromResult<ProfiledProcess?>(null);
            var load = await RunLoadAsync(context.Options, step.Id, plan, cancellationToken).ConfigureAwait(false);
            var profiled = await profile.ConfigureAwait(false);
            load.WriteFiles(LoadDirectory(context, step));

            var placeholder = new StepResult { Step = step, Load = load, Cpu = [], CpuSeries = [], ThreadPoolQueueMax = new Dictionary<string, double>() };
            var measured = await scenario.MeasureAsync(context, step, sampler, baseline, load, loadStart, placeholder, cancellationToken).ConfigureAwait(false);
            var metricsAfter = await MetricsSnapshot.TakeAsync(sampler, running, cancellationToken).ConfigureAwait(false);
            measured = measured with
            {
                Trace = context.Options.Traces ? await DrawTraceAsync(scenario, context, step, loadStart, cancellationToken).ConfigureAwait(false) : null,
                Hops = Measurement.Hops.Between(metricsBefore, metricsAfter),
                Profile = profiled,
                ConnectionPoolWaits = running.ToDictionary(s => s.Name, s => Measurement.Hops.ConnectionPoolWaits(metricsBefore, metricsAfter, s.Name), StringComparer.Ordinal),
            };

            var result = WithSystemFigures(measured, sampler, samplingStart, loadStartOnSampler, context.Calibration.CpuBudgetShare,
                judgedFrom: loadStartOnSampler + (load.LoadDuration.TotalSeconds / 5)) with
            {
                Processes = context.Deployment.Processes().GroupBy(p => p.Component).ToDictionary(g => g.Key, g => g.Count()),
                Scale = context.Scale.Value,
            };
            if (result.Disturbed)
            {
                context.Log("  " + DisturbanceNote(result));
            }

            if (result.MachineBound)
            {
                context.Log("  " + MachineBoundNote(result));
            }

            return result;
        }
    }

    /// <summary>
    /// Where the step's CPU goes: once the load has reached two fifths of its length (users and rates rise over it),
    /// the busiest .NET process since the load began is profiled (<see cref="StepProfiler"/>) into
    /// <c>steps/&lt;id&gt;/cpu-profile.svg</c>. A profile that fails is reported and the step goes on without it.
    /// </summary>
    private static async Task<ProfiledProcess?> ProfileDuringLoadAsync(
        LabContext context, Step step, TimeSpan loadDuration, IReadOnlyDictionary<int, (string Component, TimeSpan Cpu)> cpuAtStart, CancellationToken cancellationToken)
    {
        try
        {
            await Task.Delay(loadDuration * 0.4, cancellationToken).ConfigureAwait(false);
            var duration = TimeSpan.FromTicks(Math.Min(StepProfiler.Duration.Ticks, (loadDuration * 0.5).Ticks));
            var svg = Path.Combine(context.Options.OutputDirectory, "steps", step.Id, ProfileFileName);
            var profiled = await StepProfiler.ProfileBusiestAsync(context.Deployment, cpuAtStart, component: null, duration, svg, cancellationToken).ConfigureAwait(false);
            if (profiled is not null)
            {
                context.Log($"  {step.Id}: profiled {profiled.Component} (pid {profiled.ProcessId}) for {duration.TotalSeconds:0} s, {profiled.Samples:N0} samples");
            }

            return profiled;
        }
        catch (Exception e) when (e is InvalidOperationException or IOException or TimeoutException)
        {
            context.Log($"  {step.Id}: no CPU profile: {e.Message}");
            return null;
        }
    }

    /// <summary>The share of requests traced when traces serve the report only: enough for a representative one per step at a few requests per second.</summary>
    internal const double TraceSamplingRatio = 0.05;

    private static readonly ValuesTree SampledTraces = ValuesTree.From(new Dictionary<string, object?>
    {
        ["commonSettings"] = new Dictionary<string, object?>
        {
            ["Telemetry"] = new Dictionary<string, object?> { ["TraceSamplingRatio"] = TraceSamplingRatio },
        },
    });

    private static readonly HttpClient DashboardHttp = new() { Timeout = TimeSpan.FromSeconds(30) };

    /// <summary>
    /// The step's representative slow request (<see cref="Traces.Representative"/>) among the traces the dashboard
    /// received since the load began, drawn as a waterfall into <c>steps/&lt;id&gt;/trace.svg</c>; null when there is none.
    /// </summary>
    private static async Task<StepTrace?> DrawTraceAsync(LabScenario scenario, LabContext context, Step step, DateTimeOffset since, CancellationToken cancellationToken)
    {
        if (context.Deployment.Dashboard is not { } dashboard)
        {
            return null;
        }

        try
        {
            // The exporters send their spans in batches every 5 s: a trace that began in the last few seconds may not
            // be whole yet, so only the ones before are candidates (the step's load lasts far longer).
            var traces = await Measurement.Traces.ReadAsync(
                DashboardHttp, dashboard.Url, scenario.TraceRoot, since, DateTimeOffset.UtcNow - Measurement.Traces.ExportDelay, cancellationToken).ConfigureAwait(false);
            if (Measurement.Traces.Representative(traces) is not { } trace)
            {
                return null;
            }

            var file = Path.Combine(context.Options.OutputDirectory, "steps", step.Id, TraceFileName);
            Directory.CreateDirectory(Path.GetDirectoryName(file)!);
            await File.WriteAllTextAsync(
                file,
                Reporting.Waterfall.ToSvg(trace, $"{step.Label}: a representative slow request (90th percentile of {traces.Count} traced)"),
                cancellationToken).ConfigureAwait(false);
            return new StepTrace(trace.TraceId, trace.DurationMs, trace.Spans.Count, traces.Count, trace.Spans.Count(s => s.Throttled));
        }
        catch (Exception e) when (e is HttpRequestException or TaskCanceledException or System.Text.Json.JsonException && !cancellationToken.IsCancellationRequested)
        {
            context.Log($"  {step.Id}: no trace drawn: {e.Message}");
            return null;
        }
    }

    /// <summary>A step's waterfall, in its directory under <c>steps/</c>.</summary>
    internal const string TraceFileName = "trace.svg";

    /// <summary>A step's flame graph, in its directory under <c>steps/</c>.</summary>
    internal const string ProfileFileName = "cpu-profile.svg";

    /// <summary>
    /// Runs a load, printing its progress every <see cref="LabRunOptions.ProgressInterval"/> while it runs
    /// (<see cref="ProgressReporter"/>, labelled <paramref name="label"/>, with <paramref name="detail"/>'s figure).
    /// </summary>
    internal static async Task<LoadDriver.Results.LoadTestResult> RunLoadAsync(
        LabRunOptions options, string label, LoadTestPlan plan, CancellationToken cancellationToken, Func<string?>? detail = null)
    {
        using var progress = options.Progress(label, detail);
        return await LoadRunner.RunAsync(plan, progress, cancellationToken).ConfigureAwait(false);
    }

    private static string LoadDirectory(LabContext context, Step step) =>
        Path.Combine(context.Options.OutputDirectory, "steps", step.Id, "load");

    /// <summary>The steps of a run measured while the machine stood still.</summary>
    public static IEnumerable<StepResult> DisturbedSteps(IEnumerable<ScenarioOutcome> outcomes) =>
        outcomes.SelectMany(o => o.Steps).Where(s => s.Disturbed);

    /// <summary>The warning for a step measured while the machine stood still.</summary>
    public static string DisturbanceNote(StepResult result) =>
        string.Create(CultureInfo.InvariantCulture, $"{result.Step.Id}: during this step {result.Disturbance}{(result.EarlierAttemptStallSeconds >= StepResult.DisturbedAfterSeconds ? ", and in an earlier attempt too" : string.Empty)}; its figures may show the machine rather than the system — run it again on a quieter machine.");

    /// <summary>The steps of a run whose figures the machine, not the model, decided.</summary>
    public static IEnumerable<StepResult> MachineBoundSteps(IEnumerable<ScenarioOutcome> outcomes) =>
        outcomes.SelectMany(o => o.Steps).Where(s => s.MachineBound);

    /// <summary>The warning for a machine-bound step.</summary>
    public static string MachineBoundNote(StepResult result) =>
        string.Create(CultureInfo.InvariantCulture, $"{result.Step.Label} was machine-bound at scale {result.Scale:0.##}: {result.MachineBoundReason}. Its verdicts are shown, not judged; a smaller --scale, or a quieter or larger machine, lets the model decide it.");

    /// <summary>One line per verdict, for the console: PASS, FAIL, note (informational) or skip (not judged).</summary>
    public static string Describe(Verdict verdict) =>
        string.Create(CultureInfo.InvariantCulture,
            $"{(verdict.NotJudgedBecause is not null ? "skip" : verdict.Passed ? "PASS" : verdict.Required ? "FAIL" : "note")}  {verdict.StepId}  {verdict.Expectation} — {verdict.Measured}{(verdict.NotJudgedBecause is { } why ? $" (not judged: {why})" : string.Empty)}");
}
