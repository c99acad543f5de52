using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.ServiceDefaults.Health;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Package;

public static class PackageServices
{
    /// <summary>Settings (<c>Cosmos</c>, <c>Packages</c>), the Cosmos client, the package store and its container's readiness check.</summary>
    public static WebApplicationBuilder AddPackageServices(this WebApplicationBuilder builder)
    {
        builder.AddCosmos("package");
        builder.AddSettings<PackagesSettings>("Packages");
        builder.Services.AddSingleton<PackageStore>();
        builder.Services.AddHealthChecks().Add(new Microsoft.Extensions.Diagnostics.HealthChecks.HealthCheckRegistration(
            "cosmos-packages",
            services => new CosmosContainerHealthCheck(
                services.GetRequiredService<CosmosClient>(),
                services.GetRequiredService<IOptions<CosmosSettings>>().Value.DatabaseId,
                services.GetRequiredService<IOptions<PackagesSettings>>().Value.ContainerId,
                PackageStore.PartitionKeyPath),
            failureStatus: null,
            tags: [HealthTags.Ready]));
        return builder;
    }
}
