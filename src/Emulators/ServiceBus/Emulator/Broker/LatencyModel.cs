namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// The round trips the emulator adds to sends, receives and settlements: set at start-up from the options and
/// replaceable at run time (<c>PUT /_emulator/latency</c>); every operation reads the values in force when it runs.
/// </summary>
internal sealed class LatencyModel(TimeSpan send, TimeSpan receive, TimeSpan complete)
{
    /// <summary>The longest delay of any operation, as the start-up options allow it.</summary>
    public static readonly TimeSpan Maximum = TimeSpan.FromSeconds(30);

    private Values _values = new(send, receive, complete);

    public TimeSpan Send => Volatile.Read(ref _values).Send;

    public TimeSpan Receive => Volatile.Read(ref _values).Receive;

    public TimeSpan Complete => Volatile.Read(ref _values).Complete;

    public void Replace(TimeSpan send, TimeSpan receive, TimeSpan complete) => Volatile.Write(ref _values, new Values(send, receive, complete));

    private sealed record Values(TimeSpan Send, TimeSpan Receive, TimeSpan Complete);
}
