using System.Diagnostics;
using System.Diagnostics.Metrics;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.Delivery;

/// <summary>
/// Delivery's own telemetry. Every Redis call is a client span (<c>db.system.name=redis</c>) and is
/// counted by command and outcome, so Redis shows up as a dependency and an out-of-memory Redis (step B1)
/// is visible by name.
/// </summary>
public static class DeliveryTelemetry
{
    /// <summary>ActivitySource and Meter name.</summary>
    public const string SourceName = "DroneDelivery.Delivery";

    /// <summary>Counter of Redis calls; tags <c>db.operation.name</c> (command) and <c>outcome</c>.</summary>
    public const string RedisCalls = "dronedelivery.delivery.redis.calls";

    /// <summary>Histogram of Redis call durations in seconds; tags <c>db.operation.name</c> and <c>outcome</c>.</summary>
    public const string RedisDuration = "dronedelivery.delivery.redis.duration";

    /// <summary>Counter of Redis "OOM command not allowed" refusals (maxmemory reached with noeviction); tag <c>db.operation.name</c>.</summary>
    public const string RedisOutOfMemoryErrors = "dronedelivery.delivery.redis.oom_errors";

    /// <summary>The <c>outcome</c> tag's values.</summary>
    public static class Outcomes
    {
        public const string Success = "success";
        public const string OutOfMemory = "oom";
        public const string Timeout = "timeout";
        public const string Unavailable = "unavailable";
        public const string Error = "error";
    }

    /// <summary>The <c>error.type</c> set on spans when Redis refused a write for lack of memory.</summary>
    public const string OutOfMemoryErrorType = "RedisOutOfMemory";

    private static readonly ComponentTelemetry Telemetry = new(SourceName);

    internal static readonly Counter<long> Calls = Telemetry.Counter(RedisCalls, "{call}", "Redis calls by command and outcome.");

    internal static readonly Histogram<double> Duration = Telemetry.Duration(RedisDuration, "Duration of Redis calls.");

    internal static readonly Counter<long> OutOfMemory = Telemetry.Counter(
        RedisOutOfMemoryErrors, "{error}", "Redis writes refused because Redis reached maxmemory.");

    internal static ActivitySource Source => Telemetry.Source;
}
