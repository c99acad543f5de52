using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.ServiceClients.Messaging;
using DroneDelivery.ServiceDefaults.Health;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace DroneDelivery.Workflow;

public static class WorkflowServices
{
    /// <summary>
    /// Settings (<c>ServiceBus</c>, <c>Processor</c>, <c>Redelivery</c>, <c>CircuitBreaker</c>, <c>Backends</c>), the clock (the system's unless one is
    /// registered already), the Service Bus client, the three
    /// backends' clients, the workflow and its processor, and a readiness check that it is processing.
    /// </summary>
    public static WebApplicationBuilder AddWorkflowServices(this WebApplicationBuilder builder)
    {
        builder.AddServiceBus();
        builder.AddSettings<ProcessorSettings>("Processor");
        builder.Services.Configure<HostOptions>(host =>
        {
            // Read here without validation (the host resolves its options before the settings are checked); a bad
            // value stops the start, naming the setting, through the Processor section's own validation.
            host.ShutdownTimeout = TimeSpan.TryParse(builder.Configuration["Processor:ShutdownTimeout"], System.Globalization.CultureInfo.InvariantCulture, out var timeout) && timeout > TimeSpan.Zero
                ? timeout
                : new ProcessorSettings().ShutdownTimeout;
        });
        builder.AddSettings<RedeliverySettings>("Redelivery");
        builder.AddSettings<CircuitBreakerSettings>("CircuitBreaker");
        builder.Services.TryAddSingleton(TimeProvider.System);
        builder.AddBackendClients();
        builder.Services.AddSingleton<WorkflowBackends>();
        builder.Services.AddSingleton<WorkflowCircuitBreaker>();
        builder.Services.AddSingleton<DeliveryWorkflow>();
        builder.Services.AddSingleton<DeliveryProcessor>();
        builder.Services.AddHostedService(services => services.GetRequiredService<DeliveryProcessor>());
        builder.Services.AddHealthChecks().AddCheck<ProcessorHealthCheck>("servicebus-processor", tags: [HealthTags.Ready]);
        return builder;
    }
}

/// <summary>Ready while the processor runs and the queue can be read (or while the circuit breaker pauses it on purpose).</summary>
internal sealed class ProcessorHealthCheck(DeliveryProcessor host) : IHealthCheck
{
    private static readonly TimeSpan Limit = TimeSpan.FromSeconds(5);

    public async Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        if (host.PausedByBreaker)
        {
            return HealthCheckResult.Healthy($"Paused by the circuit breaker ({host.Breaker.State}): the backends are failing.");
        }

        if (!host.Processor.IsProcessing && !host.Probe.IsProcessing)
        {
            return HealthCheckResult.Unhealthy($"Not processing {host.Processor.EntityPath}: starting.");
        }

        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(Limit);
        return await host.CheckQueueAsync(timeout.Token).ConfigureAwait(false) is { } error
            ? HealthCheckResult.Unhealthy($"Not processing {host.Processor.EntityPath}: {error}")
            : HealthCheckResult.Healthy($"Processing {host.Processor.EntityPath} with MaxConcurrentCalls {host.Processor.MaxConcurrentCalls}, PrefetchCount {host.Processor.PrefetchCount}.");
    }
}
