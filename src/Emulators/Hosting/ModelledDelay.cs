namespace DroneDelivery.Emulators.Hosting;

/// <summary>
/// The emulators' injected latency as a floor: a timer may fire up to a clock tick early, and a client that was
/// promised 300 ms must never see 299. Waits again for what is left until the whole latency has passed on <c>time</c>.
/// </summary>
public static class ModelledDelay
{
    public static async Task AtLeastAsync(TimeSpan latency, TimeProvider time, CancellationToken cancellationToken = default)
    {
        var start = time.GetTimestamp();
        for (var left = latency; left > TimeSpan.Zero; left = latency - time.GetElapsedTime(start))
        {
            await Task.Delay(left < TimeSpan.FromMilliseconds(1) ? TimeSpan.FromMilliseconds(1) : left, time, cancellationToken).ConfigureAwait(false);
        }
    }
}
