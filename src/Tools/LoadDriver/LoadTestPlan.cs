using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.LoadDriver;

/// <summary>Everything one load run needs: what to send, how load varies over time, and when to stop.</summary>
public sealed record LoadTestPlan
{
    public required LoadScenario Scenario { get; init; }

    public required LoadShape Shape { get; init; }

    public LoadBounds Bounds { get; init; } = new();

    public HttpSettings Http { get; init; } = new();

    /// <summary>Throws <see cref="ArgumentException"/> naming the first invalid setting.</summary>
    public void Validate()
    {
        ArgumentNullException.ThrowIfNull(Scenario);
        ArgumentNullException.ThrowIfNull(Shape);
        ArgumentNullException.ThrowIfNull(Bounds);
        ArgumentNullException.ThrowIfNull(Http);
        Scenario.Validate();
        Shape.Validate();
        Bounds.Validate();
        Http.Validate();
    }
}

/// <summary>Hard limits that end a run early, whatever the shape says. Both always apply.</summary>
public sealed record LoadBounds
{
    /// <summary>Most requests sent (polls excluded); default 1,000,000.</summary>
    public long MaxRequests { get; init; } = 1_000_000;

    /// <summary>Longest time spent sending load (draining afterwards is bounded separately); default 1 hour.</summary>
    public TimeSpan MaxDuration { get; init; } = TimeSpan.FromHours(1);

    public void Validate()
    {
        if (MaxRequests < 1)
        {
            throw new ArgumentException($"The request bound must be at least 1 (got {MaxRequests}).");
        }

        if (MaxDuration <= TimeSpan.Zero || MaxDuration > LoadShape.LongestDuration)
        {
            throw new ArgumentException($"The duration bound must be above 0 and at most {LoadShape.LongestDuration.TotalHours:0} hours (got {MaxDuration}).");
        }
    }
}

/// <summary>The driver's HTTP client: one shared connection pool for the load.</summary>
public sealed record HttpSettings
{
    /// <summary>Time a request may take, headers and body, before it counts as a timeout; default 30 s.</summary>
    public TimeSpan RequestTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Time a new connection may take to be established, default 10 s; never more than
    /// <see cref="RequestTimeout"/>. A target too busy to accept connections shows up as connection
    /// errors with this time in their sample, instead of as slow requests.
    /// </summary>
    public TimeSpan ConnectTimeout { get; init; } = TimeSpan.FromSeconds(10);

    /// <summary>The connect time-out in force: <see cref="ConnectTimeout"/>, capped by the request timeout.</summary>
    public TimeSpan EffectiveConnectTimeout => ConnectTimeout < RequestTimeout ? ConnectTimeout : RequestTimeout;

    /// <summary>
    /// Connections to the target; default: as many as there are concurrent requests (peak users, or
    /// <see cref="MaxInFlight"/>). Fewer makes requests queue in the driver — a closed model then sends
    /// late, while the open model counts the queueing in its latencies.
    /// </summary>
    public int? MaxConnections { get; init; }

    /// <summary>
    /// Open model: the most requests outstanding at once; default 1,000. When reached, further sends wait
    /// (and their wait counts in their latency) instead of piling up without limit.
    /// </summary>
    public int MaxInFlight { get; init; } = 1_000;

    public void Validate()
    {
        if (RequestTimeout <= TimeSpan.Zero || RequestTimeout > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"The request timeout must be above 0 and at most 10 minutes (got {RequestTimeout}).");
        }

        if (ConnectTimeout <= TimeSpan.Zero || ConnectTimeout > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"The connect timeout must be above 0 and at most 10 minutes (got {ConnectTimeout}).");
        }

        if (MaxConnections is < 1)
        {
            throw new ArgumentException($"The connection limit must be at least 1 (got {MaxConnections}).");
        }

        if (MaxInFlight is < 1 or > 100_000)
        {
            throw new ArgumentException($"The in-flight limit must be between 1 and 100000 (got {MaxInFlight}).");
        }
    }
}
