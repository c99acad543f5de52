namespace DroneDelivery.LoadDriver;

/// <summary>How load is applied over time: a number of looping users (closed) or an arrival rate (open).</summary>
public abstract record LoadShape
{
    /// <summary>The longest a shape may run: a day.</summary>
    public static readonly TimeSpan LongestDuration = TimeSpan.FromHours(24);

    private protected LoadShape()
    {
    }

    /// <summary>Ramp plus hold: how long the shape applies load.</summary>
    public abstract TimeSpan Duration { get; }

    /// <summary>Throws <see cref="ArgumentException"/> naming the first invalid setting.</summary>
    public abstract void Validate();

    private protected static void ValidateDurations(TimeSpan ramp, TimeSpan hold)
    {
        if (ramp < TimeSpan.Zero || hold < TimeSpan.Zero)
        {
            throw new ArgumentException("Ramp and hold durations must not be negative.");
        }

        if (ramp + hold <= TimeSpan.Zero)
        {
            throw new ArgumentException("The load must last longer than zero (ramp + hold).");
        }

        if (ramp + hold > LongestDuration)
        {
            throw new ArgumentException($"The load may last at most {LongestDuration.TotalHours:0} hours (ramp + hold).");
        }
    }
}

/// <summary>
/// Closed model, the case studies' step load: users, each looping request → response → think time.
/// The user count goes from <see cref="UsersFrom"/> to <see cref="UsersTo"/> over <see cref="Ramp"/>,
/// spending an equal share of the ramp at every count in between (so the last count is actually
/// applied, not merely reached at the end), then stays at <see cref="UsersTo"/> for <see cref="Hold"/>.
/// Latency is measured from the actual send; a slow response delays that user's next request, so
/// this model under-reports queueing (coordinated omission) by design — use <see cref="OpenLoad"/> for that.
/// </summary>
/// <param name="UsersFrom">Users at the start (0 to <see cref="MaxUsers"/>).</param>
/// <param name="UsersTo">Users at the end of the ramp (0 to <see cref="MaxUsers"/>).</param>
/// <param name="Ramp">Time to go from the first count to the last.</param>
public sealed record ClosedLoad(int UsersFrom, int UsersTo, TimeSpan Ramp) : LoadShape
{
    public const int MaxUsers = 10_000;

    /// <summary>Time at <see cref="UsersTo"/> after the ramp; default none.</summary>
    public TimeSpan Hold { get; init; } = TimeSpan.Zero;

    /// <summary>Pause between a user's response and its next request; default none.</summary>
    public TimeSpan ThinkTime { get; init; } = TimeSpan.Zero;

    public override TimeSpan Duration => Ramp + Hold;

    /// <summary>The larger of the two counts: the most users ever running.</summary>
    public int PeakUsers => Math.Max(UsersFrom, UsersTo);

    /// <summary>A constant number of users for a duration.</summary>
    public static ClosedLoad Constant(int users, TimeSpan duration) => new(users, users, TimeSpan.Zero) { Hold = duration };

    /// <summary>The number of users that should be running <paramref name="elapsed"/> after the start.</summary>
    public int UsersAt(TimeSpan elapsed)
    {
        if (elapsed >= Ramp || Ramp <= TimeSpan.Zero)
        {
            return UsersTo;
        }

        var levels = Math.Abs(UsersTo - UsersFrom) + 1;
        var level = (int)Math.Floor(levels * Math.Max(elapsed.TotalSeconds, 0) / Ramp.TotalSeconds);
        level = Math.Min(level, levels - 1);
        return UsersTo >= UsersFrom ? UsersFrom + level : UsersFrom - level;
    }

    public override void Validate()
    {
        if (UsersFrom is < 0 or > MaxUsers || UsersTo is < 0 or > MaxUsers)
        {
            throw new ArgumentException($"User counts must be between 0 and {MaxUsers} (got {UsersFrom} to {UsersTo}).");
        }

        if (PeakUsers == 0)
        {
            throw new ArgumentException("At least one user is needed (users from and to are both 0).");
        }

        if (ThinkTime < TimeSpan.Zero)
        {
            throw new ArgumentException("Think time must not be negative.");
        }

        ValidateDurations(Ramp, Hold);
    }
}

/// <summary>
/// Open model: requests arrive at a rate regardless of how fast the system answers, going linearly
/// from <see cref="RateFrom"/> to <see cref="RateTo"/> requests per second over <see cref="Ramp"/>,
/// then staying at <see cref="RateTo"/> for <see cref="Hold"/>. Each request has an intended send time
/// on that schedule, and its latency is measured from that time, so time spent queued behind a
/// stalled system (or the driver's own connection and concurrency limits) is counted: the
/// coordinated-omission correction.
/// </summary>
/// <param name="RateFrom">Requests per second at the start (0 to <see cref="MaxRate"/>).</param>
/// <param name="RateTo">Requests per second at the end of the ramp (0 to <see cref="MaxRate"/>).</param>
/// <param name="Ramp">Time to go from the first rate to the last.</param>
public sealed record OpenLoad(double RateFrom, double RateTo, TimeSpan Ramp) : LoadShape
{
    public const double MaxRate = 100_000;

    /// <summary>Time at <see cref="RateTo"/> after the ramp; default none.</summary>
    public TimeSpan Hold { get; init; } = TimeSpan.Zero;

    public override TimeSpan Duration => Ramp + Hold;

    /// <summary>
    /// Requests per second each simulated user asks for; default none (no users: requests go out as the
    /// schedule says, up to <see cref="HttpSettings.MaxInFlight"/>). When set, the arrivals come from
    /// ⌈rate ÷ RatePerUser⌉ users (<see cref="UsersAt"/>), each with at most one request outstanding, as
    /// the case studies' users had: an arrival that falls due while every user still waits for an answer
    /// is missed — not sent, counted in <c>unsent</c> — rather than queued. The schedule does not slow
    /// down when the system does; a step whose latency keeps its users busy serves less than it is asked
    /// for, and the difference shows as unsent arrivals.
    /// </summary>
    public double? RatePerUser { get; init; }

    /// <summary>A constant arrival rate for a duration.</summary>
    public static OpenLoad Constant(double requestsPerSecond, TimeSpan duration) =>
        new(requestsPerSecond, requestsPerSecond, TimeSpan.Zero) { Hold = duration };

    /// <summary>
    /// A step load of <paramref name="usersFrom"/> → <paramref name="usersTo"/> users over
    /// <paramref name="ramp"/>, each asking <paramref name="ratePerUser"/> requests per second on a
    /// schedule: the arrival rate goes from usersFrom × ratePerUser to usersTo × ratePerUser.
    /// </summary>
    public static OpenLoad Users(int usersFrom, int usersTo, double ratePerUser, TimeSpan ramp) =>
        new(usersFrom * ratePerUser, usersTo * ratePerUser, ramp) { RatePerUser = ratePerUser };

    /// <summary>Users asking at <paramref name="elapsed"/> (the most requests in flight then); null without <see cref="RatePerUser"/>.</summary>
    public int? UsersAt(TimeSpan elapsed) =>
        RatePerUser is { } perUser ? Math.Max(1, (int)Math.Ceiling((RateAt(elapsed) / perUser) - 1e-9)) : null;

    /// <summary>The arrival rate <paramref name="elapsed"/> after the start, in requests per second.</summary>
    public double RateAt(TimeSpan elapsed)
    {
        if (elapsed < TimeSpan.Zero || elapsed >= Duration)
        {
            return 0;
        }

        return elapsed >= Ramp ? RateTo : RateFrom + ((RateTo - RateFrom) * elapsed.TotalSeconds / Ramp.TotalSeconds);
    }

    /// <summary>How many requests the schedule sends in the first <paramref name="elapsed"/> (the rate's integral).</summary>
    public double ArrivalsBy(TimeSpan elapsed)
    {
        var t = Math.Clamp(elapsed.TotalSeconds, 0, Duration.TotalSeconds);
        var ramp = Ramp.TotalSeconds;
        if (t < ramp)
        {
            return (RateFrom * t) + ((RateTo - RateFrom) * t * t / (2 * ramp));
        }

        return ((RateFrom + RateTo) / 2 * ramp) + (RateTo * (t - ramp));
    }

    /// <summary>
    /// The intended send time of the request with zero-based <paramref name="sequence"/>, as an offset from
    /// the start (the time at which <see cref="ArrivalsBy"/> reaches it), or null when the schedule has
    /// ended before it.
    /// </summary>
    public TimeSpan? IntendedOffset(long sequence) =>
        IntendedSeconds(sequence) is { } seconds ? TimeSpan.FromTicks((long)(seconds * TimeSpan.TicksPerSecond)) : null;

    internal double? IntendedSeconds(long sequence)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(sequence);
        var ramp = Ramp.TotalSeconds;
        var arrivalsInRamp = (RateFrom + RateTo) / 2 * ramp;
        double seconds;
        if (sequence < arrivalsInRamp)
        {
            // Solve RateFrom * t + a * t^2 = sequence for t, in the form that stays exact when a is 0.
            var a = (RateTo - RateFrom) / (2 * ramp);
            var root = Math.Sqrt(Math.Max((RateFrom * RateFrom) + (4 * a * sequence), 0));
            seconds = sequence == 0 ? 0 : 2 * sequence / (RateFrom + root);
        }
        else
        {
            if (RateTo <= 0)
            {
                return null;
            }

            seconds = ramp + ((sequence - arrivalsInRamp) / RateTo);
        }

        return seconds < Duration.TotalSeconds ? seconds : null;
    }

    public override void Validate()
    {
        if (!double.IsFinite(RateFrom) || !double.IsFinite(RateTo) || RateFrom < 0 || RateTo < 0 || RateFrom > MaxRate || RateTo > MaxRate)
        {
            throw new ArgumentException($"Rates must be between 0 and {MaxRate} requests per second (got {RateFrom} to {RateTo}).");
        }

        if (Math.Max(RateFrom, RateTo) <= 0)
        {
            throw new ArgumentException("At least one of the rates must be above 0.");
        }

        if (RatePerUser is { } perUser && (!double.IsFinite(perUser) || perUser <= 0 || perUser > MaxRate))
        {
            throw new ArgumentException($"The rate per user must be above 0 and at most {MaxRate} requests per second (got {perUser}).");
        }

        ValidateDurations(Ramp, Hold);
        if (Ramp <= TimeSpan.Zero && RateFrom != RateTo)
        {
            throw new ArgumentException("A rate that changes needs a ramp longer than zero.");
        }
    }
}
