using System.Globalization;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>The results of one scenario in a lab run.</summary>
internal sealed record ScenarioOutcome(LabScenario Scenario, IReadOnlyList<StepResult> Steps, IReadOnlyList<Verdict> Verdicts)
{
    /// <summary>What the scenario's model predicts for steps the machine cannot show.</summary>
    public IReadOnlyList<ModelPrediction> Predictions { get; init; } = [];
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
        var deployment = await StartDeploymentAsync(scenario, catalog, options, new Dictionary<ServiceKind, int>(), cancellationToken).ConfigureAwait(false);
        await using (deployment.ConfigureAwait(false))
        {
            var context = new LabContext(deployment, options, catalog);
            var steps = StepsToRun(stepIds, catalog, options.WhatIf);
            var first = true;
            foreach (var step in steps)
            {
                options.Log($"step {step.Title}");
                // Where a run's time goes, step by step: (re)starting processes, seeding, warming up or
                // filling the cache, and measuring (load, drain and any second attempt).
                var started = clock.Elapsed;
                await deployment.ApplyAsync(step, fresh: scenario.FreshEachStep, cancellationToken).ConfigureAwait(false);
                var applied = clock.Elapsed;
                if (first)
                {
                    await scenario.PrepareAsync(context, steps, cancellationToken).ConfigureAwait(false);
                    first = false;
                }

                var prepared = clock.Elapsed;
                await scenario.WarmUpAsync(context, step, cancellationToken).ConfigureAwait(false);
                await scenario.BeforeStepAsync(context, step, cancellationToken).ConfigureAwait(false);
                var ready = clock.Elapsed;
                results.Add(await MeasureWithOneRetryAsync(
                    options.RemeasureDisturbed,
                    () => RunStepAsync(scenario, context, step, cancellationToken),
                    async () =>
                    {
                        context.Log($"  {step.Id}: measuring the step again");
                        var loadFiles = LoadDirectory(context, step);
                        Directory.Move(loadFiles, loadFiles + "-disturbed");
                        await deployment.ApplyAsync(step, fresh: scenario.FreshEachStep, cancellationToken).ConfigureAwait(false);
                        await scenario.WarmUpAsync(context, step, cancellationToken).ConfigureAwait(false);
                        await scenario.BeforeStepAsync(context, step, cancellationToken).ConfigureAwait(false);
                    }).ConfigureAwait(false));
                options.Log(string.Create(CultureInfo.InvariantCulture,
                    $"  {step.Id} took {(clock.Elapsed - started).TotalSeconds:0} s: processes {(applied - started).TotalSeconds:0} s, seeding {(prepared - applied).TotalSeconds:0} s, before the load (warm-up, cache fill) {(ready - prepared).TotalSeconds:0} s, measurement {(clock.Elapsed - ready).TotalSeconds:0} s (load {results[^1].Load.LoadDuration.TotalSeconds:0} s){(results[^1].EarlierAttemptStallSeconds is null ? string.Empty : ", measured twice")}; machine load average {MachineLoad.Describe()}"));
            }
        }

        options.Log(string.Create(CultureInfo.InvariantCulture, $"scenario {scenario.Id} took {clock.Elapsed.TotalSeconds:0} s"));

        var byStep = results.Where(r => r.Step.WhatIf is null).ToDictionary(r => r.Step.Id, StringComparer.OrdinalIgnoreCase);
        return new ScenarioOutcome(scenario, results, [.. scenario.Verdicts(byStep, options.Mode), .. scenario.WhatIfVerdicts(results, options.Mode)])
        {
            Predictions = scenario.Predictions(byStep, catalog),
        };
    }

    /// <summary>The chosen steps, each followed by its what-if when the run has one.</summary>
    internal static List<Step> StepsToRun(IEnumerable<string> stepIds, StepCatalog catalog, WhatIf? whatIf) =>
        [.. stepIds.SelectMany(id => whatIf is null ? [catalog[id]] : new[] { catalog[id], catalog.WhatIf(id, whatIf) })];

    /// <summary>The ids of the steps a run measures, scenario by scenario (before any what-if).</summary>
    internal static IEnumerable<string> ChosenStepIds(LabRunOptions options) =>
        options.Scenarios.Select(Scenario).SelectMany(s => s.StepIds.Where(id => options.Steps.Count == 0 || options.Steps.Contains(id, StringComparer.OrdinalIgnoreCase)));

    /// <summary>
    /// Measures a step; when the machine stood still during it (its figures would show the machine
    /// rather than the system), resets the step to the same starting point and measures it once more,
    /// keeping the second figures (still marked disturbed if that attempt stalled too).
    /// </summary>
    internal static async Task<StepResult> MeasureWithOneRetryAsync(bool remeasure, Func<Task<StepResult>> measure, Func<Task> resetForRetry)
    {
        var first = await measure().ConfigureAwait(false);
        if (!first.Disturbed || !remeasure)
        {
            return first;
        }

        await resetForRetry().ConfigureAwait(false);
        var second = await measure().ConfigureAwait(false);
        return second with { EarlierAttemptStallSeconds = first.LongestStallSeconds, EarlierAttemptOtherCores = first.OtherCores };
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

    /// <summary>CPU and thread-pool figures of the samples taken since <paramref name="since"/>.</summary>
    internal static StepResult WithSystemFigures(StepResult result, SystemSampler sampler, double since, double loadStartOnSampler)
    {
        var cpu = sampler.Cpu.Where(c => c.Second >= since).ToList();
        return result with
        {
            Cpu = [.. cpu.GroupBy(c => c.Component).OrderBy(g => g.Key, StringComparer.Ordinal)
                .Select(g => new CpuFigures(g.Key, g.Average(c => c.AveragePercent), g.Max(c => c.MaxPercent)))],
            CpuSeries = [.. cpu.GroupBy(c => c.Component).OrderBy(g => g.Key, StringComparer.Ordinal)
                .Select(g => new Series(g.Key, [.. g.Select(c => new TimePoint(c.Second - loadStartOnSampler, c.AveragePercent))]))],
            ThreadPoolQueueMax = sampler.ThreadPool.Where(t => t.Second >= since)
                .GroupBy(t => t.Component)
                .ToDictionary(g => g.Key, g => g.Max(t => t.MaxQueueLength)),
            LongestStallSeconds = sampler.Stalls.Where(s => s.Second >= since).Select(s => s.Seconds).DefaultIfEmpty(0).Max(),
            OtherCores = sampler.OtherLoad.Where(s => s.Second >= since).Select(s => s.OtherCores + s.StealCores).DefaultIfEmpty(0).Average(),
        };
    }

    private static async Task<StepResult> RunStepAsync(LabScenario scenario, LabContext context, Step step, CancellationToken cancellationToken)
    {
        var sampler = new SystemSampler(context.Deployment, TimeSpan.FromSeconds(2));
        await using (sampler.ConfigureAwait(false))
        {
            var samplingStart = sampler.Now;
            var baseline = await scenario.BaselineAsync(context, step, sampler, cancellationToken).ConfigureAwait(false);
            var loadStart = DateTimeOffset.UtcNow;
            var loadStartOnSampler = sampler.Now;
            var progress = new Progress<LoadProgress>(p =>
            {
                if ((int)p.Elapsed.TotalSeconds % 10 == 0)
                {
                    var users = p.ActiveUsers is { } u ? $"{u} users, " : string.Empty;
                    var rate = p.LastSecond is { } s ? s.Successes / s.IntervalSeconds : 0;
                    context.Log($"  {step.Id} {p.Elapsed.TotalSeconds,4:0} s: {users}{rate:0} ok/s, {p.Errors} errors{(p.Draining ? " (draining)" : string.Empty)}");
                }
            });
            var load = await LoadRunner.RunAsync(scenario.Plan(context, step), progress, cancellationToken).ConfigureAwait(false);
            load.WriteFiles(LoadDirectory(context, step));

            var placeholder = new StepResult { Step = step, Load = load, Cpu = [], CpuSeries = [], ThreadPoolQueueMax = new Dictionary<string, double>() };
            var measured = await scenario.MeasureAsync(context, step, sampler, baseline, load, loadStart, placeholder, cancellationToken).ConfigureAwait(false);

            var result = WithSystemFigures(measured, sampler, samplingStart, loadStartOnSampler) with
            {
                Processes = context.Deployment.Processes().GroupBy(p => p.Component).ToDictionary(g => g.Key, g => g.Count()),
            };
            if (result.Disturbed)
            {
                context.Log("  " + DisturbanceNote(result));
            }

            return result;
        }
    }

    private static string LoadDirectory(LabContext context, Step step) =>
        Path.Combine(context.Options.OutputDirectory, "steps", step.Id, "load");

    /// <summary>The steps of a run measured while the machine stood still.</summary>
    public static IEnumerable<StepResult> DisturbedSteps(IEnumerable<ScenarioOutcome> outcomes) =>
        outcomes.SelectMany(o => o.Steps).Where(s => s.Disturbed);

    /// <summary>The warning for a step measured while the machine stood still.</summary>
    public static string DisturbanceNote(StepResult result) =>
        string.Create(CultureInfo.InvariantCulture, $"{result.Step.Id}: during this step {result.Disturbance}{(result.EarlierAttemptStallSeconds is null ? string.Empty : ", and in an earlier attempt too")}; its figures may show the machine rather than the system — run it again on a quieter machine.");

    /// <summary>One line per verdict, for the console.</summary>
    public static string Describe(Verdict verdict) =>
        string.Create(CultureInfo.InvariantCulture, $"{(verdict.Passed ? "PASS" : verdict.Required ? "FAIL" : "note")}  {verdict.StepId}  {verdict.Expectation} — {verdict.Measured}");
}
