namespace DroneDelivery.Emulators.CosmosDb.Capacity;

/// <summary>
/// Provisioned throughput split evenly over physical partitions, enforced per partition with a token
/// bucket that refills at <c>RU/s ÷ partitions</c> and holds at most <c>BurstSeconds</c> of it. A
/// request is admitted while its partition's balance is positive and then pays its actual charge
/// (the balance may go negative, as the service lets an admitted request finish). While the balance
/// is not positive the partition answers 429 with a retry-after that covers the debt plus the
/// requests already told to come back, so throttled clients return one after another as budget
/// accrues instead of all at once.
/// </summary>
internal sealed class ThroughputPool
{
    private readonly Bucket[] _buckets;
    private readonly double _burstSeconds;
    private readonly TimeProvider _time;
    private double _throughput;

    public ThroughputPool(double throughput, int partitionCount, double burstSeconds, TimeProvider time, bool autoscale = false)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(partitionCount, 1);
        _burstSeconds = burstSeconds;
        _time = time;
        _throughput = throughput;
        Autoscale = autoscale;
        _buckets = new Bucket[partitionCount];
        var now = _time.GetTimestamp();
        for (var i = 0; i < partitionCount; i++)
        {
            _buckets[i] = new Bucket { Tokens = PerPartition * burstSeconds, LastRefill = now };
        }
    }

    /// <summary>Provisioned RU/s (for autoscale, the maximum, which the emulator always grants).</summary>
    public double Throughput => Volatile.Read(ref _throughput);

    public bool Autoscale { get; private set; }

    public int PartitionCount => _buckets.Length;

    public double PerPartition => Throughput / _buckets.Length;

    public void SetThroughput(double throughput, bool autoscale)
    {
        foreach (var bucket in _buckets)
        {
            lock (bucket)
            {
                Refill(bucket, _time.GetTimestamp());
            }
        }

        Volatile.Write(ref _throughput, throughput);
        Autoscale = autoscale;
        foreach (var bucket in _buckets)
        {
            lock (bucket)
            {
                bucket.Tokens = Math.Min(bucket.Tokens, PerPartition * _burstSeconds);
            }
        }
    }

    /// <summary>True when partition <paramref name="index"/> has budget left; otherwise how long to wait.</summary>
    public bool TryAdmit(int index, out int retryAfterMilliseconds) =>
        Admit(index, static bucket => (bucket.AverageCharge, bucket.Waiting), out retryAfterMilliseconds);

    /// <summary>
    /// Admits one operation of a bulk request: true while partition <paramref name="index"/> has budget
    /// left at this moment, whatever other requests have spent. Otherwise how long to wait for the debt
    /// to be repaid and for <paramref name="charge"/> more; with <paramref name="queued"/>, also for the
    /// operations already told to come back (each expected to cost <paramref name="charge"/>), so that
    /// they return one after another rather than all at once.
    /// </summary>
    public bool TryAdmitOperation(int index, double charge, bool queued, out int retryAfterMilliseconds) =>
        Admit(index, bucket => (charge, queued ? bucket.WaitingOperations : null), out retryAfterMilliseconds);

    private bool Admit(int index, Func<Bucket, (double Charge, Queue<long>? Waiting)> expected, out int retryAfterMilliseconds)
    {
        var bucket = _buckets[index % _buckets.Length];
        var now = _time.GetTimestamp();
        lock (bucket)
        {
            Refill(bucket, now);
            if (bucket.Tokens > 0)
            {
                retryAfterMilliseconds = 0;
                return true;
            }

            // Wait for the debt to be repaid, for the ones already waiting to be served first, and for this one.
            var (charge, waiting) = expected(bucket);
            var ahead = 0;
            if (waiting is not null)
            {
                while (waiting.Count > 0 && waiting.Peek() <= now)
                {
                    waiting.Dequeue();
                }

                ahead = waiting.Count;
            }

            var seconds = (-bucket.Tokens + ((ahead + 1) * charge)) / PerPartition;
            retryAfterMilliseconds = Math.Max(1, (int)Math.Ceiling(seconds * 1000));
            waiting?.Enqueue(now + (long)(seconds * _time.TimestampFrequency));
            return false;
        }
    }

    public void Charge(int index, double requestUnits)
    {
        var bucket = _buckets[index % _buckets.Length];
        lock (bucket)
        {
            Refill(bucket, _time.GetTimestamp());
            bucket.Tokens -= requestUnits;
            bucket.AverageCharge += (requestUnits - bucket.AverageCharge) * 0.1;
        }
    }

    /// <summary>
    /// The RU partition <paramref name="index"/> can spend now: at most <c>BurstSeconds</c> of its
    /// share, negative while it repays requests admitted beyond its budget.
    /// </summary>
    public double Available(int index)
    {
        var bucket = _buckets[index % _buckets.Length];
        lock (bucket)
        {
            Refill(bucket, _time.GetTimestamp());
            return bucket.Tokens;
        }
    }

    /// <summary>The most a partition can bank: <c>BurstSeconds</c> of its share of the throughput.</summary>
    public double Capacity => PerPartition * _burstSeconds;

    private void Refill(Bucket bucket, long now)
    {
        var elapsed = (now - bucket.LastRefill) / (double)_time.TimestampFrequency;
        if (elapsed <= 0)
        {
            return;
        }

        bucket.LastRefill = now;
        bucket.Tokens = Math.Min(PerPartition * _burstSeconds, bucket.Tokens + (elapsed * PerPartition));
    }

    private sealed class Bucket
    {
        public double Tokens;
        public long LastRefill;
        public double AverageCharge = 1;
        public readonly Queue<long> Waiting = new();

        /// <summary>When each bulk operation told to come back is due (timestamps).</summary>
        public readonly Queue<long> WaitingOperations = new();
    }
}
