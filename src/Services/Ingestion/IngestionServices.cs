using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.ServiceClients.Messaging;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.ServiceDefaults.Health;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace DroneDelivery.Ingestion;

public static class IngestionServices
{
    /// <summary>
    /// Settings (<c>ServiceBus</c>, <c>Batching</c>, <c>Ingestion</c>), the clock (the system's unless one is
    /// registered already), the Service Bus client, the batching sender and its readiness check; the public
    /// edge's security and API reference (section <c>ApiReference</c>), and Delivery's client (section
    /// <c>Backends</c>), which says who owns a delivery that is cancelled or rescheduled.
    /// </summary>
    public static WebApplicationBuilder AddIngestionServices(this WebApplicationBuilder builder)
    {
        builder.AddEdgeSecurity();
        builder.AddApiReference();
        builder.AddBackendClients();
        builder.AddServiceBus();
        builder.AddSettings<BatchingSettings>("Batching");
        builder.AddSettings<IngestionSettings>("Ingestion");
        builder.Services.TryAddSingleton(TimeProvider.System);
        builder.Services.AddSingleton<BatchingSender>();
        builder.Services.AddHostedService(services => services.GetRequiredService<BatchingSender>());
        builder.Services.AddHealthChecks().AddCheck<QueueHealthCheck>("servicebus", tags: [HealthTags.Ready]);
        return builder;
    }
}

/// <summary>Ready when the queue can be sent to: the send link is (or can be) attached.</summary>
internal sealed class QueueHealthCheck(BatchingSender sender) : IHealthCheck
{
    private static readonly TimeSpan Limit = TimeSpan.FromSeconds(5);

    public async Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(Limit);
        try
        {
            using var batch = await sender.Sender.CreateMessageBatchAsync(timeout.Token).ConfigureAwait(false);
            return HealthCheckResult.Healthy($"Queue {sender.Sender.EntityPath} accepts messages up to {batch.MaxSizeInBytes} bytes.");
        }
        catch (Exception e)
        {
            return HealthCheckResult.Unhealthy($"Queue {sender.Sender.EntityPath} cannot be sent to: {e.Message}");
        }
    }
}
