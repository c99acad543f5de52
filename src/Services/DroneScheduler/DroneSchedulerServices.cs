using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.ServiceDefaults.Health;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;

namespace DroneDelivery.DroneScheduler;

public static class DroneSchedulerServices
{
    /// <summary>
    /// Settings (<c>Cosmos</c>, <c>Utilization</c>, <c>Drones</c>), the Cosmos client, the store, and
    /// readiness checks that both containers exist with the expected partition keys.
    /// </summary>
    public static WebApplicationBuilder AddDroneSchedulerServices(this WebApplicationBuilder builder)
    {
        builder.AddCosmos("dronescheduler");
        builder.AddSettings<UtilizationSettings>("Utilization");
        builder.AddSettings<DronesSettings>("Drones");
        builder.Services.AddSingleton<DroneScheduleStore>();
        builder.Services.AddHealthChecks()
            .Add(ContainerCheck("cosmos-utilization", services =>
            {
                var utilization = services.GetRequiredService<IOptions<UtilizationSettings>>().Value;
                return (utilization.ContainerId, utilization.PartitionKeyPath);
            }))
            .Add(ContainerCheck("cosmos-drones", services => (services.GetRequiredService<IOptions<DronesSettings>>().Value.ContainerId, "/id")));
        return builder;
    }

    private static HealthCheckRegistration ContainerCheck(string name, Func<IServiceProvider, (string ContainerId, string PartitionKeyPath)> container) =>
        new(
            name,
            services =>
            {
                var (containerId, partitionKeyPath) = container(services);
                return new CosmosContainerHealthCheck(
                    services.GetRequiredService<CosmosClient>(),
                    services.GetRequiredService<IOptions<CosmosSettings>>().Value.DatabaseId,
                    containerId,
                    partitionKeyPath);
            },
            failureStatus: null,
            tags: [HealthTags.Ready]);
}
