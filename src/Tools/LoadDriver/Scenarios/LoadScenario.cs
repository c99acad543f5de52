using DroneDelivery.LoadDriver.Running;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>What each request of a load run does. The driver times and counts; the scenario builds and reads requests.</summary>
public abstract class LoadScenario
{
    private protected LoadScenario()
    {
    }

    /// <summary>The scenario's name in reports, e.g. <c>invoice</c>.</summary>
    public abstract string Name { get; }

    /// <summary>The service the load goes to. The driver only ever talks to targets it was given.</summary>
    public abstract Uri Target { get; }

    /// <summary>Throws <see cref="ArgumentException"/> naming the first invalid setting.</summary>
    public abstract void Validate();

    /// <summary>Prepares one run (lookup tables, background work) against the run's recorder.</summary>
    internal abstract ScenarioRun Start(ScenarioRunContext context);

    private protected static void ValidateTarget(Uri? target, string name)
    {
        if (target is null || !target.IsAbsoluteUri || (target.Scheme != Uri.UriSchemeHttp && target.Scheme != Uri.UriSchemeHttps))
        {
            throw new ArgumentException($"The {name} must be an absolute http or https URL (got '{target}').");
        }
    }
}

/// <summary>What a scenario run may use from the load run.</summary>
internal sealed record ScenarioRunContext(RunRecorder Recorder, HttpSettings Http, Clock Clock, CancellationToken Abort);

/// <summary>One run of a scenario.</summary>
internal abstract class ScenarioRun : IAsyncDisposable
{
    /// <summary>
    /// Sends the request with the given zero-based sequence number and reads its response to the end.
    /// Returns the HTTP status; transport failures and cancellation surface as exceptions.
    /// </summary>
    /// <param name="intendedTimestamp">When the schedule meant to send it (the actual send time for the closed model).</param>
    public abstract Task<int> SendAsync(HttpMessageInvoker http, long sequence, long intendedTimestamp, CancellationToken cancellationToken);

    /// <summary>Waits for the scenario's own background work (completion polling) after the load stops.</summary>
    public virtual Task DrainAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public virtual ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
