using System.Threading.RateLimiting;

namespace DroneDelivery.Security.PublicApis;

/// <summary>
/// One caller's fixed window: <c>permitLimit</c> requests per <c>window</c>, the window starting with
/// the caller's first request. System.Threading.RateLimiting's own limiters measure time with
/// <c>Stopwatch</c> and cannot be given a clock; this one runs on the service's <see cref="TimeProvider"/>,
/// so the window is testable, and plugs into ASP.NET Core's rate-limiting middleware like theirs.
/// No queue: a request over the limit is refused at once with the time until the window ends.
/// </summary>
internal sealed class FixedWindowLimiter(TimeProvider time, int permitLimit, TimeSpan window) : RateLimiter
{
    private static readonly RateLimitLease Granted = new Lease(true, null);
    private readonly Lock _gate = new();
    private DateTimeOffset _windowEnd = DateTimeOffset.MinValue;
    private int _used;

    /// <summary>Idle once its window has ended (its count then means nothing), so the partitioned limiter may drop it.</summary>
    public override TimeSpan? IdleDuration
    {
        get
        {
            lock (_gate)
            {
                var now = time.GetUtcNow();
                return now >= _windowEnd ? now - (_windowEnd == DateTimeOffset.MinValue ? now : _windowEnd) : null;
            }
        }
    }

    public override RateLimiterStatistics GetStatistics()
    {
        lock (_gate)
        {
            return new RateLimiterStatistics { CurrentAvailablePermits = time.GetUtcNow() >= _windowEnd ? permitLimit : permitLimit - _used };
        }
    }

    protected override RateLimitLease AttemptAcquireCore(int permitCount)
    {
        if (permitCount > permitLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(permitCount), permitCount, $"At most {permitLimit} permits can be asked for.");
        }

        lock (_gate)
        {
            var now = time.GetUtcNow();
            if (now >= _windowEnd)
            {
                _windowEnd = now + window;
                _used = 0;
            }

            if (_used + permitCount <= permitLimit)
            {
                _used += permitCount;
                return Granted;
            }

            return new Lease(false, _windowEnd - now);
        }
    }

    protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken) =>
        ValueTask.FromResult(AttemptAcquireCore(permitCount));

    private sealed class Lease(bool acquired, TimeSpan? retryAfter) : RateLimitLease
    {
        public override bool IsAcquired => acquired;

        public override IEnumerable<string> MetadataNames => retryAfter is null ? [] : [MetadataName.RetryAfter.Name];

        public override bool TryGetMetadata(string metadataName, out object? metadata)
        {
            metadata = retryAfter;
            return retryAfter is not null && metadataName == MetadataName.RetryAfter.Name;
        }
    }
}
