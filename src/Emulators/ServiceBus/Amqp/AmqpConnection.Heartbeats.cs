using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>Heartbeats: empty frames that keep an idle connection open, and the idle time-out that closes a silent one.</summary>
public sealed partial class AmqpConnection
{
    /// <summary>
    /// Runs on the connection's clock every <see cref="HeartbeatTick"/>: closes the connection when nothing arrived
    /// within our idle time-out, and sends an empty frame when nothing went out for half of the peer's.
    /// </summary>
    private void OnHeartbeatTick()
    {
        try
        {
            if (_terminated)
            {
                return;
            }

            var time = Options.TimeProvider;
            var now = time.GetTimestamp();
            if (Options.IdleTimeout > TimeSpan.Zero && RemoteOpen is not null &&
                time.GetElapsedTime(Volatile.Read(ref _lastReceived), now) > Options.IdleTimeout)
            {
                Fail(new Error { Condition = ErrorCondition.ResourceLimitExceeded, Description = $"Nothing received for {Options.IdleTimeout.TotalSeconds:0.#} s (idle time-out)." });
                return;
            }

            var remoteIdle = RemoteOpen?.IdleTimeOut ?? 0;
            if (remoteIdle > 0 && time.GetElapsedTime(Volatile.Read(ref _lastSent), now) > TimeSpan.FromMilliseconds(remoteIdle / 2.0))
            {
                WriteFrame(0, null);
                Volatile.Write(ref _lastSent, now);
            }
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // A timer callback must not take the process down; the connection's own paths report its failures.
            System.Diagnostics.Trace.TraceError($"AMQP heartbeat failed: {e}");
        }
    }

    /// <summary>
    /// How often the idle check runs: a quarter of the shorter of our threshold and the peer's, so an
    /// empty frame never goes out later than the peer expects even when its time-out is much shorter.
    /// </summary>
    private TimeSpan HeartbeatTick()
    {
        var shortest = 4000.0;
        if (Options.IdleTimeout > TimeSpan.Zero)
        {
            shortest = Math.Min(shortest, Options.IdleTimeout.TotalMilliseconds);
        }

        if (RemoteOpen?.IdleTimeOut is > 0 and var remote)
        {
            shortest = Math.Min(shortest, remote);
        }

        return TimeSpan.FromMilliseconds(Math.Max(10, shortest / 4));
    }
}
