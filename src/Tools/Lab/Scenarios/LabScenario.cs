using System.Globalization;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;
using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>What a scenario gets to work with while it runs.</summary>
internal sealed record LabContext(LocalDeployment Deployment, LabRunOptions Options, StepCatalog Catalog)
{
    public LabCalibration Calibration => Options.Calibration;

    public double TimeScale => Calibration.TimeScale(Options.Mode);

    /// <summary>The model scale the emulated cloud runs at now (<see cref="ModelScale"/>): the load's rates and the users' patience follow it.</summary>
    public ModelScale Scale => Deployment.Scale;

    public void Log(string message) => Options.Log(message);
}

/// <summary>The outcome of one expectation the case study sets for a step.</summary>
internal sealed record Verdict(string StepId, string Expectation, bool Passed, string Measured, bool Required = true)
{
    /// <summary>Other steps whose figures the expectation compares this step's with (A3 with A2, B5 with B2).</summary>
    public IReadOnlyList<string> ComparedWith { get; init; } = [];

    /// <summary>
    /// Why the expectation is shown but not judged: a step it reads was machine-bound, so its figures are the
    /// machine's, not the model's. Null when it is judged.
    /// </summary>
    public string? NotJudgedBecause { get; init; }

    /// <summary>Counts towards the case study's PASS or FAIL: required, and judged.</summary>
    public bool Counts => Required && NotJudgedBecause is null;
}

/// <summary>A case study the lab replays: its steps, load, measurements, expectations and the article's figures.</summary>
internal abstract class LabScenario
{
    public abstract string Id { get; }

    public abstract string Title { get; }

    public abstract IReadOnlyList<string> StepIds { get; }

    /// <summary>Whether every step starts from an empty broker and cache.</summary>
    public abstract bool FreshEachStep { get; }

    /// <summary>
    /// Whether quick mode runs this scenario with fewer replicas than the chart's
    /// (<see cref="LabCalibration.QuickReplicaDivisor"/>): for a scenario whose steps start more processes than
    /// two cores carry. Scenario A's twelve do not, and halved they made A3's effect depend on the run: two
    /// DroneScheduler replicas each running nine parallel queries per invoice at the peak starved their
    /// thread pools in two runs of five, where three never did.
    /// </summary>
    public virtual bool FewerReplicasInQuickMode => false;

    /// <summary>The services the scenario's requests reach; the lab starts only these (two cores have none to spare).</summary>
    public abstract IReadOnlyList<ServiceKind> Services { get; }

    /// <summary>The name of the span a request of this scenario starts with (its public service's server span): the root of the trace a step draws.</summary>
    public abstract string TraceRoot { get; }

    /// <summary>
    /// The step whose settings the machine probe runs with (<see cref="ScaleSelection"/>): one whose requests cost
    /// what the scenario's costliest steps cost (A1: nine Cosmos DB queries per invoice; B5: a workflow that keeps up).
    /// </summary>
    public abstract string ProbeStepId { get; }

    /// <summary>
    /// The probe's arrival rate at scale 1 on two cores (less on fewer, <see cref="ScaleSelection.ProbeRate"/>): low
    /// enough for the probe step's limits, high enough for a few hundred requests.
    /// </summary>
    public abstract double ProbeRate { get; }

    /// <summary>Requests per second at the step load's peak, at scale 1: what the CPU budget has to carry.</summary>
    public abstract double PeakRate(LabContext context);

    /// <summary>The probe's requests (those of the steps, not followed to completion).</summary>
    public virtual LoadScenario ProbeWorkload(LabContext context) => Workload(context);

    /// <summary>What the model alone makes one probe request take at scale 1, in ms; null where the scenario does not say.</summary>
    public virtual double? ProbeModelLatencyMs(LabContext context, Step step) => null;

    /// <summary>After the probe's load, until what it started has finished (a queue drained).</summary>
    public virtual Task AfterProbeAsync(LabContext context, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>Time after a step's load during which the system is still observed (draining a queue).</summary>
    public virtual TimeSpan DrainWindow(LabContext context, Step step) => TimeSpan.Zero;

    /// <summary>Every Cosmos DB container any step uses, from the chart values (first definition wins).</summary>
    public IReadOnlyList<CosmosContainerSpec> Containers(StepCatalog catalog) =>
        [.. StepIds.SelectMany(id => CosmosContainerSpec.Of(catalog[id])).DistinctBy(c => c.Id)];

    /// <summary>Once, after the first step's configuration is applied (e.g. seeding what the given steps read).</summary>
    public virtual Task PrepareAsync(LabContext context, IReadOnlyList<Step> steps, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>
    /// After a step's configuration is applied: requests that are not measured, so that what the step
    /// (re)started is not measured starting up. Not for the chaos command, which accounts for every
    /// request in the stores.
    /// </summary>
    public virtual Task WarmUpAsync(LabContext context, Step step, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>After a step's configuration is applied (and any warm-up), before measuring starts.</summary>
    public virtual Task BeforeStepAsync(LabContext context, Step step, CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>What the simulated users do (invoices, delivery requests) against the local system.</summary>
    public abstract LoadScenario Workload(LabContext context);

    /// <summary>The load of one step of the case study: the scenario's <see cref="Workload(LabContext)"/> unless a step asks less of it.</summary>
    public virtual LoadScenario Workload(LabContext context, Step step) => Workload(context);

    /// <summary>The case study's step load, time-compressed in quick mode.</summary>
    public abstract LoadShape StepShape(LabContext context);

    /// <summary>The simulated clients' HTTP settings (how long they wait for an answer).</summary>
    public virtual HttpSettings Clients(LabContext context) => new();

    public LoadTestPlan Plan(LabContext context, Step step) => new()
    {
        Scenario = Workload(context, step),
        Shape = StepShape(context),
        Bounds = new LoadBounds { MaxDuration = StepShape(context).Duration + TimeSpan.FromMinutes(1) },
        Http = Clients(context),
    };

    /// <summary>Reads the emulators and services before the load; the result is handed back to <see cref="MeasureAsync"/>.</summary>
    public abstract Task<object> BaselineAsync(LabContext context, Step step, SystemSampler sampler, CancellationToken cancellationToken);

    /// <summary>The step's scenario-specific figures, from the baseline and the system after the load.</summary>
    public abstract Task<StepResult> MeasureAsync(
        LabContext context,
        Step step,
        SystemSampler sampler,
        object baseline,
        LoadTestResult load,
        DateTimeOffset loadStart,
        StepResult common,
        CancellationToken cancellationToken);

    /// <summary>Did each step show the effect the article describes? Some effects need the full step's length to show.</summary>
    public abstract IReadOnlyList<Verdict> Verdicts(IReadOnlyDictionary<string, StepResult> results, LabMode mode);

    /// <summary>What a model predicts for steps the machine cannot show (none unless a scenario has a model).</summary>
    public virtual IReadOnlyList<ModelPrediction> Predictions(IReadOnlyDictionary<string, StepResult> results, StepCatalog catalog) => [];

    /// <summary>
    /// The verdicts of each what-if: its base step's expectations, computed with the what-if's figures in
    /// the base step's place. They are shown, not required: a what-if that removes a step's cause is
    /// expected to fail them.
    /// </summary>
    public IReadOnlyList<Verdict> WhatIfVerdicts(IReadOnlyList<StepResult> results, LabMode mode)
    {
        var verdicts = new List<Verdict>();
        foreach (var whatIf in results.Where(r => r.Step.WhatIf is not null))
        {
            var substituted = results.Where(r => r.Step.WhatIf is null).ToDictionary(r => r.Step.Id, StringComparer.OrdinalIgnoreCase);
            substituted[whatIf.Step.BaseId] = whatIf;
            verdicts.AddRange(Verdicts(substituted, mode)
                .Where(v => v.StepId == whatIf.Step.BaseId)
                .Select(v => v with { StepId = whatIf.Step.Label, Required = false }));
        }

        return verdicts;
    }

    /// <summary>The article's figures for a step, by metric, to print beside ours.</summary>
    public abstract IReadOnlyList<ArticleRow> ArticleTable { get; }

    /// <summary>The same metrics measured here, for one step.</summary>
    public abstract IReadOnlyDictionary<string, string> Measured(StepResult result);

    /// <summary>Seconds since the step's load started for a Unix time.</summary>
    protected static double Offset(long unixSeconds, DateTimeOffset loadStart) => unixSeconds - loadStart.ToUnixTimeMilliseconds() / 1000.0;
}

/// <summary>One metric of the article's result table: its values per step.</summary>
internal sealed record ArticleRow(string Metric, IReadOnlyDictionary<string, string> ByStep);
