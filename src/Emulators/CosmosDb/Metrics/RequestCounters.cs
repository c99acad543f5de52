using System.Collections.Concurrent;

namespace DroneDelivery.Emulators.CosmosDb.Metrics;

/// <summary>Requests by operation and status code, and request charges by operation.</summary>
internal sealed class RequestCounters
{
    private static readonly double[] ChargeBounds = [0.5, 1, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 50, 100, 250, 1000];

    private readonly ConcurrentDictionary<(string Operation, int Status), Counter> _requests = new();
    private readonly ConcurrentDictionary<string, Histogram> _charges = new(StringComparer.Ordinal);

    public void Record(string operation, int statusCode, double charge)
    {
        _requests.GetOrAdd((operation, statusCode), static _ => new Counter()).Increment();
        _charges.GetOrAdd(operation, static _ => new Histogram()).Observe(charge);
    }

    public IReadOnlyList<RequestCount> Requests() =>
        [.. _requests.Select(p => new RequestCount(p.Key.Operation, p.Key.Status, p.Value.Value))
            .OrderBy(r => r.Operation, StringComparer.Ordinal).ThenBy(r => r.StatusCode)];

    public IReadOnlyList<ChargeDistribution> Charges() =>
        [.. _charges.OrderBy(p => p.Key, StringComparer.Ordinal).Select(p => p.Value.Snapshot(p.Key))];

    private sealed class Counter
    {
        private long _value;

        public long Value => Interlocked.Read(ref _value);

        public void Increment() => Interlocked.Increment(ref _value);
    }

    private sealed class Histogram
    {
        private readonly long[] _counts = new long[ChargeBounds.Length + 1];
        private long _count;
        private double _sum;

        public void Observe(double value)
        {
            var index = 0;
            while (index < ChargeBounds.Length && value > ChargeBounds[index])
            {
                index++;
            }

            lock (this)
            {
                _counts[index]++;
                _count++;
                _sum += value;
            }
        }

        public ChargeDistribution Snapshot(string operation)
        {
            lock (this)
            {
                var buckets = new List<ChargeBucket>(_counts.Length);
                long cumulative = 0;
                for (var i = 0; i < _counts.Length; i++)
                {
                    cumulative += _counts[i];
                    buckets.Add(new ChargeBucket(i < ChargeBounds.Length ? ChargeBounds[i] : null, cumulative));
                }

                return new ChargeDistribution(operation, _count, Math.Round(_sum, 4), buckets);
            }
        }
    }
}
