using System.Diagnostics;
using System.Globalization;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Steps;
using DroneDelivery.LoadDriver;
using HdrHistogram;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>
/// What a short probe measured of this machine before a scenario, at scale 1 and low load: the system's CPU at
/// rest and per request, what other processes took, and how much longer a request took than the model alone.
/// </summary>
internal sealed record MachineProbe(
    string StepId,
    double Rate,
    long Requests,
    double Seconds,
    int Cores,
    double OtherCores,
    double IdleCores,
    double CpuMillisecondsPerRequest,
    double? MeanLatencyMs,
    double? ModelLatencyMs)
{
    /// <summary>The machine's own share of a request's latency (processing, queueing for a core): measured − modelled.</summary>
    public double? LatencyAboveModelMs => MeanLatencyMs is { } mean && ModelLatencyMs is { } model ? Math.Max(0, mean - model) : null;

    public string Describe() => string.Create(CultureInfo.InvariantCulture,
        $"{Requests} requests at up to {Rate:0}/s with {StepId}'s settings: {CpuMillisecondsPerRequest:0.0} ms of CPU per request, {IdleCores:0.00} cores at rest, other processes {OtherCores:0.00} of {Cores} cores")
        + (LatencyAboveModelMs is not null ? string.Create(CultureInfo.InvariantCulture, $", {MeanLatencyMs:0} ms per request where the model takes {ModelLatencyMs:0} ms") : string.Empty);
}

/// <summary>The scale a scenario runs at, and why.</summary>
internal sealed record ScaleChoice(ModelScale Scale, string Reason)
{
    public MachineProbe? Probe { get; init; }

    /// <summary>The CPU budget the choice was made for.</summary>
    public CpuBudget? Budget { get; init; }

    /// <summary>The system's predicted CPU at the step load's peak, at the chosen scale, in cores.</summary>
    public double? PredictedPeakCores { get; init; }

    /// <summary>Even the smallest scale would not keep the budget: nothing is measured (exit code 4).</summary>
    public bool MachineTooSmall { get; init; }
}

/// <summary>
/// Chooses a scenario's model scale (<see cref="ModelScale"/>) from a probe of this machine: the largest scale, at
/// most 1, at which the system's predicted CPU at the step load's peak stays within a margin of its budget, and at
/// which the machine's own share of a request's latency stays small beside the model's.
/// </summary>
internal static class ScaleSelection
{
    /// <summary>How long the probe holds each of its rates.</summary>
    internal static readonly TimeSpan Window = TimeSpan.FromSeconds(6);

    /// <summary>
    /// The probe's high rate: the scenario's on two cores or more, less on fewer — a probe that saturated the
    /// machine would measure a core's contention, not a request's cost.
    /// </summary>
    internal static double ProbeRate(LabScenario scenario) => scenario.ProbeRate * Math.Min(1, CpuBudget.MachineCores / 2.0);

    /// <summary>
    /// The machine's share of a request's latency may be at most this much of the model's at the chosen scale: a
    /// slower machine adds more milliseconds of its own, which a smaller scale (longer modelled delays) outweighs.
    /// </summary>
    internal const double LatencyAboveModelShare = 0.25;

    /// <summary>The scale given with <c>--scale</c>: no probe.</summary>
    public static ScaleChoice Forced(double scale) =>
        new(new ModelScale(scale), string.Create(CultureInfo.InvariantCulture, $"scale {scale:0.##} as given (--scale); the machine was not probed"));

    /// <summary>
    /// Measures the system's CPU under <paramref name="scenario"/>'s probe load at scale 1, the deployment at its probe
    /// step: the high rate once unmeasured (the warm-up), then rest, then the high rate again (<see cref="Window"/>
    /// each). The first hold has the runtime compile (and recompile hot) the code the probe's rate and concurrency
    /// reach — in a dozen fresh processes a burst of a core or more that would swamp the measurement — and the rest
    /// waits it out and measures what the system takes at rest. A request's CPU is the measured hold's above that,
    /// divided by its requests: on a small machine it is more than on a large one at the same rate (the cores are
    /// contended), and the hold's rate is what the steps' peaks ask of a small machine. The latency is the hold's.
    /// </summary>
    public static async Task<MachineProbe> ProbeAsync(LabScenario scenario, LabContext context, Step step, CancellationToken cancellationToken)
    {
        var clock = Stopwatch.StartNew();
        var high = ProbeRate(scenario);
        await HoldAsync(scenario, context, high, clock, cancellationToken).ConfigureAwait(false);
        var rest = await SettleAsync(context.Deployment, cancellationToken).ConfigureAwait(false);

        var start = Reading.Take(context.Deployment, clock);
        var peak = await HoldAsync(scenario, context, high, clock, cancellationToken).ConfigureAwait(false);
        var end = Reading.Take(context.Deployment, clock);
        context.Log(string.Create(CultureInfo.InvariantCulture,
            $"  probe: at rest {rest.RestingCores:0.00} cores; {peak.RequestsPerSecond:0.0} requests/s took {peak.Cores:0.00} cores"));

        var idle = Math.Min(rest.RestingCores, peak.Cores);
        var perRequest = (peak.Cores - idle) / Math.Max(1e-9, peak.RequestsPerSecond);
        var other = end.Machine is { } to && start.Machine is { } from
            ? Math.Max(0, (to - from).Competing - (end.Ours - start.Ours)) / (end.Seconds - start.Seconds)
            : 0;
        return new MachineProbe(
            step.Id,
            high,
            peak.Requests,
            end.Seconds - start.Seconds,
            CpuBudget.MachineCores,
            other,
            idle,
            perRequest * 1000,
            peak.MeanLatencyMs,
            scenario.ProbeModelLatencyMs(context, step));
    }

    /// <summary>
    /// After a warm-up, waits until the system's CPU stops falling: the runtime recompiles the code a warm-up made
    /// hot (tiered compilation) in the background for several seconds afterwards, a dozen processes' worth at once,
    /// and a step or probe measured meanwhile would count that as its requests'. Settled by <see cref="Settling"/>,
    /// or after <see cref="SettleAtMost"/>. Returns the seconds waited and the system's CPU at rest.
    /// </summary>
    /// <remarks>
    /// The CPU measured is the system's own, so other processes on the machine do not hold it up.
    /// </remarks>
    public static async Task<Rest> SettleAsync(LocalDeployment deployment, CancellationToken cancellationToken)
    {
        var clock = Stopwatch.StartNew();
        var last = Reading.Take(deployment, clock);
        var settling = new Settling();
        while (clock.Elapsed < SettleAtMost)
        {
            await Task.Delay(TimeSpan.FromSeconds(1), cancellationToken).ConfigureAwait(false);
            var now = Reading.Take(deployment, clock);
            var settled = settling.Add((now.Ours - last.Ours) / (now.Seconds - last.Seconds));
            last = now;
            if (settled)
            {
                break;
            }
        }

        return new Rest(clock.Elapsed.TotalSeconds, settling.RestingCores);
    }

    /// <summary>How long <see cref="SettleAsync"/> waited, and the system's CPU at rest (<see cref="Settling.RestingCores"/>).</summary>
    internal sealed record Rest(double Seconds, double RestingCores);

    /// <summary>
    /// The settling rule, one second of the system's CPU at a time: settled when a second is no lower than the one
    /// before it (within 0.05 cores) and under <see cref="RestingCoresAtMost"/>.
    /// </summary>
    internal sealed class Settling
    {
        private double? previous;

        /// <summary>
        /// The system's CPU at rest: its quietest second so far. A second that is not falling may still be the
        /// system working off what came before (a backlog, a collection); taken as rest, it would be subtracted from
        /// a probe's requests, whose CPU would then seem less than it is and the scale chosen too large. Too
        /// little rest subtracted only makes the chosen scale a little smaller.
        /// </summary>
        public double RestingCores { get; private set; }

        /// <summary>Adds one second's CPU, in cores; true once settled.</summary>
        public bool Add(double cores)
        {
            RestingCores = previous is null ? cores : Math.Min(RestingCores, cores);
            var settled = previous is { } before && cores >= before - 0.05 && cores < RestingCoresAtMost;
            previous = cores;
            return settled;
        }
    }

    /// <summary>
    /// A system at rest takes less than this: a tenth of a core or so for timers, metrics and idle connections across
    /// its processes (0.00–0.15 measured on one core and two).
    /// </summary>
    internal const double RestingCoresAtMost = 0.2;

    /// <summary>A bound on <see cref="SettleAsync"/> for a system that never comes to rest (a busy machine).</summary>
    internal static readonly TimeSpan SettleAtMost = TimeSpan.FromSeconds(20);

    /// <summary>One rate of the probe: its requests, then what they started (<see cref="LabScenario.AfterProbeAsync"/>).</summary>
    private static async Task<Hold> HoldAsync(LabScenario scenario, LabContext context, double rate, Stopwatch clock, CancellationToken cancellationToken)
    {
        var plan = new LoadTestPlan
        {
            Scenario = scenario.ProbeWorkload(context),
            Shape = OpenLoad.Constant(rate, Window),
            Bounds = new LoadBounds { MaxDuration = Window + TimeSpan.FromMinutes(1) },
            Http = new HttpSettings { RequestTimeout = TimeSpan.FromSeconds(30) },
        };
        var before = Reading.Take(context.Deployment, clock);
        var result = await LoadRunner.RunAsync(plan, null, cancellationToken).ConfigureAwait(false);
        await scenario.AfterProbeAsync(context, cancellationToken).ConfigureAwait(false);
        var after = Reading.Take(context.Deployment, clock);

        var seconds = after.Seconds - before.Seconds;
        return new Hold(
            result.Totals.Successes,
            result.Totals.Successes / seconds,
            (after.Ours - before.Ours) / seconds,
            result.RequestLatency.TotalCount > 0 ? result.RequestLatency.GetMean() / 1000.0 : null);
    }

    /// <summary>What one rate of the probe measured: requests, their rate and the system's CPU over the hold, and their mean latency.</summary>
    private sealed record Hold(long Requests, double RequestsPerSecond, double Cores, double? MeanLatencyMs);

    /// <summary>
    /// The largest scale, at most 1 and rounded down to two significant digits, at which the system's CPU at the
    /// step load's peak (<paramref name="peakRate"/> requests/s at scale 1) is predicted at
    /// <see cref="LabCalibration.ScaleCpuTarget"/> of its budget, and the machine's share of a probe request's
    /// latency is at most <see cref="LatencyAboveModelShare"/> of the model's.
    /// </summary>
    public static ScaleChoice Choose(MachineProbe probe, double peakRate, LabCalibration calibration)
    {
        var budget = new CpuBudget(probe.Cores, probe.OtherCores, calibration.CpuBudgetShare, MachineCpu.HardwareCores);
        var target = calibration.ScaleCpuTarget * budget.LimitCores;
        var peakAtScaleOne = probe.CpuMillisecondsPerRequest / 1000 * peakRate;
        var byCpu = peakAtScaleOne > 0 ? (target - probe.IdleCores) / peakAtScaleOne : double.PositiveInfinity;
        var byLatency = probe.LatencyAboveModelMs is { } above && above > 0 && probe.ModelLatencyMs is { } model
            ? LatencyAboveModelShare * model / above
            : double.PositiveInfinity;
        var wanted = Math.Min(1, Math.Min(byCpu, byLatency));
        string Why() => string.Create(CultureInfo.InvariantCulture,
            $"{probe.CpuMillisecondsPerRequest:0.0} ms of CPU per request × {peakRate:0}/s at the step load's peak + {probe.IdleCores:0.00} cores at rest")
            + (byCpu < 1 ? string.Create(CultureInfo.InvariantCulture, $" would take {probe.IdleCores + peakAtScaleOne:0.00} cores at scale 1, above {calibration.ScaleCpuTarget:P0} of the budget of {budget.Describe()}") : " fit the budget of " + budget.Describe())
            + (byLatency < 1 ? string.Create(CultureInfo.InvariantCulture, $"; the machine added {probe.LatencyAboveModelMs:0} ms to a request the model takes {probe.ModelLatencyMs:0} ms, more than {LatencyAboveModelShare:P0} of it") : string.Empty);

        // The target's margin below the budget chooses among scales; at the smallest one the predicted peak may use
        // the whole budget, which every step is still held to (a step above it is machine-bound, not judged).
        var smallest = probe.IdleCores + (peakAtScaleOne * calibration.MinimumScale);
        if (wanted < calibration.MinimumScale && byLatency >= calibration.MinimumScale && smallest <= budget.LimitCores)
        {
            var floor = new ModelScale(calibration.MinimumScale);
            return new ScaleChoice(floor, string.Create(CultureInfo.InvariantCulture,
                $"scale {floor}, the smallest: {Why()}; at {floor} the peak is predicted at {smallest:0.00} cores, within the budget though above the {calibration.ScaleCpuTarget:P0} of it a larger scale aims at"))
            {
                Probe = probe,
                Budget = budget,
                PredictedPeakCores = smallest,
            };
        }

        if (wanted < calibration.MinimumScale)
        {
            return new ScaleChoice(ModelScale.One, string.Create(CultureInfo.InvariantCulture,
                $"this machine is too small for the lab: it would need scale {wanted:0.###}, below the smallest, {calibration.MinimumScale:0.##} — {Why()}")
                + (smallest > budget.LimitCores ? string.Create(CultureInfo.InvariantCulture, $"; even at {calibration.MinimumScale:0.##} the peak is predicted at {smallest:0.00} cores, above the budget itself") : string.Empty)
                + ". Free some of its cores, or run on a machine with more.")
            {
                Probe = probe,
                Budget = budget,
                MachineTooSmall = true,
            };
        }

        var scale = ModelScale.RoundedDown(wanted);
        return new ScaleChoice(scale, string.Create(CultureInfo.InvariantCulture, $"scale {scale}: {Why()}"))
        {
            Probe = probe,
            Budget = budget,
            PredictedPeakCores = probe.IdleCores + (peakAtScaleOne * scale.Value),
        };
    }

    /// <summary>The system's CPU time so far, the machine's, and when.</summary>
    private sealed record Reading(double Ours, MachineCpu? Machine, double Seconds)
    {
        public static Reading Take(LocalDeployment deployment, Stopwatch clock) => new(
            SystemSampler.CpuTimeByComponent(deployment).Values.Sum(t => t.TotalSeconds),
            MachineCpu.Read(),
            clock.Elapsed.TotalSeconds);
    }
}

/// <summary>The machine cannot run the lab even at its smallest scale; the message says why (exit code 4).</summary>
internal sealed class MachineTooSmallException(string message) : Exception(message);
