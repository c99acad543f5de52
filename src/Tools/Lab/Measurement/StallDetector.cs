namespace DroneDelivery.Lab.Measurement;

/// <summary>
/// Notices a periodic timer firing late. The lab's balancers and load driver share the process whose
/// timer it is, so a late tick means requests between services and from the driver waited as well:
/// the lab, or the whole machine, stood still and the step measured that.
/// </summary>
internal sealed class StallDetector(TimeSpan period, TimeSpan threshold)
{
    private TimeSpan _lastTick;

    /// <summary>Starts measuring from <paramref name="now"/>.</summary>
    public void Start(TimeSpan now) => _lastTick = now;

    /// <summary>Records a tick; returns how many seconds late it was when that exceeds the threshold.</summary>
    public double? Tick(TimeSpan now)
    {
        var late = now - _lastTick - period;
        _lastTick = now;
        return late > threshold ? late.TotalSeconds : null;
    }
}
