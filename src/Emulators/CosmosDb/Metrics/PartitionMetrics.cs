namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>
/// Cumulative counters of one physical partition plus a ring of per-second samples (indexed by Unix
/// second) for the RU-consumed-vs-provisioned time series.
/// </summary>
internal sealed class PartitionMetrics(int historySeconds, TimeProvider time)
{
    private readonly Second[] _ring = new Second[historySeconds];
    private readonly Lock _sync = new();
    private double _charge;
    private long _throttled;
    private long _requests;

    public void Record(double charge, bool throttled, double provisioned)
    {
        var now = time.GetUtcNow().ToUnixTimeSeconds();
        lock (_sync)
        {
            _charge += charge;
            _requests++;
            if (throttled)
            {
                _throttled++;
            }

            ref var second = ref _ring[now % _ring.Length];
            if (second.UnixSeconds != now)
            {
                second = new Second { UnixSeconds = now };
            }

            second.Charge += charge;
            second.Requests++;
            second.Provisioned = provisioned;
            if (throttled)
            {
                second.Throttled++;
            }
        }
    }

    public (double Charge, long Throttled, long Requests) Totals()
    {
        lock (_sync)
        {
            return (_charge, _throttled, _requests);
        }
    }

    /// <summary>RU consumed during the last complete second.</summary>
    public double ConsumedLastSecond()
    {
        var previous = time.GetUtcNow().ToUnixTimeSeconds() - 1;
        lock (_sync)
        {
            var second = _ring[previous % _ring.Length];
            return second.UnixSeconds == previous ? second.Charge : 0;
        }
    }

    public IReadOnlyList<SecondSample> Seconds(int lastSeconds)
    {
        var now = time.GetUtcNow().ToUnixTimeSeconds();
        var from = now - Math.Min(lastSeconds, _ring.Length) + 1;
        var samples = new List<SecondSample>();
        lock (_sync)
        {
            foreach (var second in _ring)
            {
                if (second.Requests > 0 && second.UnixSeconds >= from && second.UnixSeconds <= now)
                {
                    samples.Add(new SecondSample(second.UnixSeconds, Math.Round(second.Charge, 4), second.Throttled, second.Requests, second.Provisioned));
                }
            }
        }

        samples.Sort((a, b) => a.UnixSeconds.CompareTo(b.UnixSeconds));
        return samples;
    }

    private struct Second
    {
        public long UnixSeconds;
        public double Charge;
        public long Throttled;
        public long Requests;
        public double Provisioned;
    }
}
