namespace DroneDelivery.LoadDriver.Running;

/// <summary>
/// Slots for requests in flight whose number may change while requests hold them: the open model's
/// in-flight limit, which follows the number of users when the arrivals come from users. Lowering the
/// limit takes effect as requests finish (their slots are kept back rather than returned).
/// </summary>
internal sealed class InFlightLimit
{
    private readonly SemaphoreSlim _free;
    private readonly Lock _lock = new();
    private int _limit;
    private int _owed;

    public InFlightLimit(int limit)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(limit, 1);
        _limit = limit;
        _free = new SemaphoreSlim(limit);
    }

    public int Limit
    {
        get
        {
            lock (_lock)
            {
                return _limit;
            }
        }
    }

    /// <summary>Moves the limit to <paramref name="limit"/>: more slots at once, or fewer as requests return theirs.</summary>
    public void SetLimit(int limit)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(limit, 1);
        lock (_lock)
        {
            var change = limit - _limit;
            _limit = limit;
            if (change < 0)
            {
                _owed -= change;
                return;
            }

            var repaid = Math.Min(change, _owed);
            _owed -= repaid;
            if (change > repaid)
            {
                _free.Release(change - repaid);
            }
        }
    }

    public bool TryTake() => _free.Wait(0);

    public Task TakeAsync(CancellationToken cancellationToken) => _free.WaitAsync(cancellationToken);

    /// <summary>Gives a slot back, unless the limit was lowered meanwhile and it is owed.</summary>
    public void Return()
    {
        lock (_lock)
        {
            if (_owed > 0)
            {
                _owed--;
                return;
            }
        }

        _free.Release();
    }
}
