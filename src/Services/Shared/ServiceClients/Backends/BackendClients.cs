using DroneDelivery.ServiceDefaults.Http;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceClients.Backends;

public static class BackendClients
{
    /// <summary>
    /// Binds the <c>Backends</c> section and registers one named HttpClient per backend
    /// (<see cref="BackendNames"/>) with its base address; its resilience pipeline's total timeout is the
    /// backend's <see cref="BackendEndpoint.Timeout"/> when set.
    /// </summary>
    public static IHostApplicationBuilder AddBackendClients(this IHostApplicationBuilder builder)
    {
        builder.AddSettings<BackendsSettings>("Backends");
        foreach (var name in BackendNames.All)
        {
            builder.Services
                .AddOptions<ResilienceSettings>(name)
                .Configure<IOptions<BackendsSettings>>((resilience, backends) =>
                {
                    if (backends.Value.For(name).Timeout is { } timeout)
                    {
                        resilience.TotalRequestTimeout = timeout;
                        resilience.AttemptTimeout = TimeSpan.FromTicks(Math.Min(resilience.AttemptTimeout.Ticks, timeout.Ticks));
                    }
                });
            builder.Services.AddHttpClient(name, (services, client) =>
            {
                client.BaseAddress = WithTrailingSlash(services.GetRequiredService<IOptions<BackendsSettings>>().Value.For(name).BaseAddress!);

                // The resilience pipeline owns the time limit; this only backs it up when it is disabled.
                var resilience = services.GetRequiredService<IOptionsMonitor<ResilienceSettings>>().Get(name);
                client.Timeout = resilience.TotalRequestTimeout + TimeSpan.FromSeconds(1);
            });
        }

        return builder;
    }

    // Relative request paths then resolve under a base address that has a path prefix.
    private static Uri WithTrailingSlash(Uri address) =>
        address.AbsolutePath.EndsWith('/') ? address : new Uri(address.AbsoluteUri + "/");
}
