namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>The most recent requests with their timings, kept in a fixed-size ring.</summary>
internal sealed class RequestLog(int capacity)
{
    private readonly EmulatorRequest?[] _ring = new EmulatorRequest?[capacity];
    private readonly Lock _sync = new();
    private long _sequence;

    public long NextSequence() => Interlocked.Increment(ref _sequence);

    public void Add(EmulatorRequest request)
    {
        lock (_sync)
        {
            _ring[(request.Sequence - 1) % _ring.Length] = request;
        }
    }

    /// <summary>Requests with a sequence number above <paramref name="afterSequence"/>, oldest first.</summary>
    public IReadOnlyList<EmulatorRequest> Since(long afterSequence, int limit = int.MaxValue)
    {
        List<EmulatorRequest> result;
        lock (_sync)
        {
            result = [.. _ring.Where(r => r is not null && r.Sequence > afterSequence).Select(r => r!)];
        }

        result.Sort((a, b) => a.Sequence.CompareTo(b.Sequence));
        return result.Count <= limit ? result : result.GetRange(0, limit);
    }

    public long LastSequence => Interlocked.Read(ref _sequence);
}
