using DroneDelivery.Delivery.Apis;
using DroneDelivery.Delivery.Store;
using DroneDelivery.ServiceDefaults.Health;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace DroneDelivery.Delivery;

public static class DeliveryServices
{
    /// <summary>Settings (<c>Redis</c>), the one Redis connection, the delivery store and the Redis readiness check.</summary>
    public static WebApplicationBuilder AddDeliveryServices(this WebApplicationBuilder builder)
    {
        builder.AddSettings<RedisSettings>("Redis");
        builder.Services.AddSingleton(TimeProvider.System);
        builder.Services.AddSingleton<RedisConnection>();
        builder.Services.AddSingleton<DeliveryStore>();
        builder.Services.AddExceptionHandler<StoreUnavailableHandler>();
        builder.Services.AddHealthChecks().AddCheck<RedisHealthCheck>("redis", tags: [HealthTags.Ready]);
        return builder;
    }
}

/// <summary>Ready when Redis answers a PING.</summary>
internal sealed class RedisHealthCheck(DeliveryStore store) : IHealthCheck
{
    public async Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        try
        {
            var latency = await store.PingAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
            return HealthCheckResult.Healthy($"Redis answered in {latency.TotalMilliseconds:0.#} ms.");
        }
        catch (Exception e) when (e is StoreUnavailableException or StackExchange.Redis.RedisException or TimeoutException)
        {
            return HealthCheckResult.Unhealthy($"Redis does not answer: {e.Message}");
        }
    }
}
