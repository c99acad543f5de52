using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Running;

namespace DroneDelivery.LoadDriver;

/// <summary>Runs load tests in-process: the entry point for the lab and for the command line.</summary>
public static class LoadRunner
{
    /// <summary>
    /// Runs <paramref name="plan"/> until its shape ends or a bound is reached, waits for outstanding requests
    /// (each bounded by the request timeout) and, for delivery-requests with polling, for completions (each
    /// bounded by the maximum wait), then returns the measurements.
    /// </summary>
    /// <param name="progress">Receives a snapshot once a second, on a background thread; keep it cheap.</param>
    /// <param name="cancellationToken">
    /// Stops the run at once: outstanding requests are cancelled and the result, with
    /// <see cref="StopReason.Cancelled"/>, covers what happened until then.
    /// </param>
    /// <exception cref="ArgumentException">The plan is invalid; the message names the setting.</exception>
    public static Task<LoadTestResult> RunAsync(LoadTestPlan plan, IProgress<LoadProgress>? progress = null, CancellationToken cancellationToken = default) =>
        RunAsync(plan, TimeProvider.System, progress, cancellationToken);

    /// <summary>As <see cref="RunAsync(LoadTestPlan, IProgress{LoadProgress}?, CancellationToken)"/>, on <paramref name="time"/>: the schedule, the bounds, every wait and time-out and every measurement follow it.</summary>
    public static async Task<LoadTestResult> RunAsync(LoadTestPlan plan, TimeProvider time, IProgress<LoadProgress>? progress = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(plan);
        ArgumentNullException.ThrowIfNull(time);
        plan.Validate();
        var run = new LoadRun(plan, new Clock(time), progress, cancellationToken);
        await using (run.ConfigureAwait(false))
        {
            return await run.ExecuteAsync().ConfigureAwait(false);
        }
    }
}
