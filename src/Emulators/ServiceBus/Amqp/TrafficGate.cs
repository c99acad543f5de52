namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>
/// Holds the traffic of every connection whose options carry it: while held, connections stay open but no
/// frame they receive is processed and none is written to them — heartbeats included — so a peer sees a
/// broker that has stopped answering without having hung up. Frames received meanwhile are processed, and
/// frames queued meanwhile written, once the gate opens. The hold ends on <see cref="Open"/> or after its
/// duration on the given clock.
/// </summary>
public sealed class TrafficGate
{
    private readonly Lock _sync = new();
    private TaskCompletionSource? _held;
    private ITimer? _timer;

    private long _heldFrames;

    /// <summary>How many times a connection found the gate held with a frame to process or write (what a pause stopped).</summary>
    public long HeldFrames => Interlocked.Read(ref _heldFrames);

    /// <summary>True while traffic is held.</summary>
    public bool IsHeld => Volatile.Read(ref _held) is not null;

    /// <summary>When the current hold ends by itself, or null when traffic flows.</summary>
    public DateTimeOffset? HeldUntil { get; private set; }

    /// <summary>Holds traffic for <paramref name="duration"/> on <paramref name="time"/> (a hold in progress is extended or shortened to it).</summary>
    public void Hold(TimeSpan duration, TimeProvider time)
    {
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(duration, TimeSpan.Zero);
        lock (_sync)
        {
            _held ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _timer?.Dispose();
            _timer = time.CreateTimer(static state => ((TrafficGate)state!).Open(), this, duration, Timeout.InfiniteTimeSpan);
            HeldUntil = time.GetUtcNow() + duration;
        }
    }

    /// <summary>Lets traffic flow again (nothing happens when it flows already).</summary>
    public void Open()
    {
        TaskCompletionSource? held;
        lock (_sync)
        {
            held = _held;
            _held = null;
            _timer?.Dispose();
            _timer = null;
            HeldUntil = null;
        }

        held?.TrySetResult();
    }

    /// <summary>Completes at once while traffic flows, else when the gate opens.</summary>
    internal Task WaitAsync()
    {
        if (Volatile.Read(ref _held) is not { } held)
        {
            return Task.CompletedTask;
        }

        Interlocked.Increment(ref _heldFrames);
        return held.Task;
    }
}
