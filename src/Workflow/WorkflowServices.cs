using DroneDelivery.Contracts.Backends;
using DroneDelivery.Contracts.Messaging;
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

/// <summary>Ready while the processor receives from the queue.</summary>
internal sealed class ProcessorHealthCheck(DeliveryProcessor host) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default) =>
        Task.FromResult(host.PausedByBreaker
            ? HealthCheckResult.Healthy($"Paused by the circuit breaker ({host.Breaker.State}): the backends are failing.")
            : host.Processor.IsProcessing || host.Probe.IsProcessing
            ? HealthCheckResult.Healthy($"Processing {host.Processor.EntityPath} with MaxConcurrentCalls {host.Processor.MaxConcurrentCalls}, PrefetchCount {host.Processor.PrefetchCount}.")
            : HealthCheckResult.Unhealthy($"Not processing {host.Processor.EntityPath}: {host.StartError ?? "starting"}."));
}
