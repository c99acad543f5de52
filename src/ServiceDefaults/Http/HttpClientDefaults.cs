using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Http;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using DroneDelivery.ServiceDefaults.Settings;

namespace DroneDelivery.ServiceDefaults.Http;

internal static class HttpClientDefaults
{
    /// <summary>
    /// Every client from IHttpClientFactory gets a pooled <see cref="SocketsHttpHandler"/> whose
    /// connections are recycled (so DNS changes are honoured) and the resilience pipeline configured
    /// for its name (<c>Resilience</c> section, refined per client with
    /// <c>services.Configure&lt;ResilienceSettings&gt;("name", ...)</c>).
    /// </summary>
    public static void AddHttpClientDefaults(this IHostApplicationBuilder builder)
    {
        builder.AddSettings<HttpClientSettings>("HttpClient");
        builder.AddSettings<ResilienceSettings>("Resilience");
        builder.Services.AddHttpClient();
        builder.Services.ConfigureHttpClientDefaults(http =>
        {
            http.ConfigurePrimaryHttpMessageHandler(services =>
            {
                var settings = services.GetRequiredService<IOptions<HttpClientSettings>>().Value;
                return new SocketsHttpHandler
                {
                    PooledConnectionLifetime = settings.PooledConnectionLifetime,
                    PooledConnectionIdleTimeout = settings.PooledConnectionIdleTimeout,
                    ConnectTimeout = settings.ConnectTimeout,
                    MaxConnectionsPerServer = settings.MaxConnectionsPerServer,
                };
            });

            // The pooled handler recycles its own connections; the factory need not rotate handlers.
            http.SetHandlerLifetime(Timeout.InfiniteTimeSpan);
        });
        builder.Services.AddSingleton<IHttpMessageHandlerBuilderFilter, ResilienceHandlerFilter>();
    }

    private sealed class ResilienceHandlerFilter(
        IOptionsMonitor<ResilienceSettings> settings,
        ILoggerFactory loggerFactory) : IHttpMessageHandlerBuilderFilter
    {
        public Action<HttpMessageHandlerBuilder> Configure(Action<HttpMessageHandlerBuilder> next) => builder =>
        {
            next(builder);
            var name = builder.Name ?? Options.DefaultName;
            var clientSettings = settings.Get(name);
            if (clientSettings.Enabled)
            {
                builder.AdditionalHandlers.Add(new ResilienceHandler(
                    name.Length == 0 ? "default" : name,
                    clientSettings,
                    loggerFactory.CreateLogger("DroneDelivery.Http.Resilience")));
            }
        };
    }
}
