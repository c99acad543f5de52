using System.Text.Json.Serialization;
using DroneDelivery.ServiceDefaults.Health;
using DroneDelivery.ServiceDefaults.Hosting;
using DroneDelivery.ServiceDefaults.Http;
using DroneDelivery.ServiceDefaults.Settings;
using DroneDelivery.ServiceDefaults.Telemetry;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Configuration.Memory;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceDefaults;

/// <summary>The one call every service makes for its cross-cutting wiring.</summary>
public static class ServiceDefaultsExtensions
{
    /// <summary>
    /// OpenTelemetry traces, metrics and logs (Prometheus scrape endpoint; OTLP when
    /// OTEL_EXPORTER_OTLP_ENDPOINT is set; Application Insights when
    /// APPLICATIONINSIGHTS_CONNECTION_STRING is set), health checks, problem details, request limits,
    /// validated settings, pooled, resilient HttpClients, and the OpenAPI document
    /// (mapped by <see cref="ApiDocument.MapApiDocument"/>).
    /// </summary>
    /// <param name="serviceName">The service's name in telemetry, e.g. <c>gateway</c>.</param>
    public static WebApplicationBuilder AddServiceDefaults(this WebApplicationBuilder builder, string serviceName)
    {
        AddDefaultLogLevels(builder.Configuration);
        builder.AddTelemetry(serviceName);
        builder.AddHttpClientDefaults();
        builder.Services.AddHealthChecks().AddCheck("self", () => HealthCheckResult.Healthy(), [HealthTags.Live]);
        builder.Services.AddProblemDetailsDefaults();
        builder.AddSettings<HostingSettings>("Hosting");
        builder.Services
            .AddOptions<KestrelServerOptions>()
            .Configure<IOptions<HostingSettings>>((kestrel, hosting) =>
            {
                // Kestrel is built with the application, before the start-up validation runs: a bad value
                // must not crash the build but stop the start, named (exit code 2), so it is left to that.
                HostingSettings limits;
                try
                {
                    limits = hosting.Value;
                }
                catch (OptionsValidationException)
                {
                    return;
                }

                kestrel.Limits.MaxRequestBodySize = limits.MaxRequestBodySize;
                kestrel.Limits.MaxRequestHeadersTotalSize = limits.MaxRequestHeadersTotalSize;
                kestrel.Limits.MaxRequestHeaderCount = limits.MaxRequestHeaderCount;
            });
        // Enums by name only, as the contracts write them: a number would bind to a value no enum member
        // has (a "size" of -2) and fail later, when the request is written on, as a 500 instead of a 400.
        builder.Services.ConfigureHttpJsonOptions(options =>
        {
            options.SerializerOptions.Converters.Add(new JsonStringEnumConverter(allowIntegerValues: false));
            JsonReading.Apply(options.SerializerOptions);
        });
        builder.Services.AddApiDocument(serviceName);
        return builder;
    }

    /// <summary>
    /// Log levels every service starts from, as the lowest-priority configuration source so that
    /// <c>Logging__LogLevel__*</c> settings still override them: the framework's one-line-per-request
    /// Information logs are noise under load; failures still show at Warning and above.
    /// </summary>
    private static void AddDefaultLogLevels(IConfigurationBuilder configuration) =>
        configuration.Sources.Insert(0, new MemoryConfigurationSource
        {
            InitialData = new Dictionary<string, string?>
            {
                ["Logging:LogLevel:Default"] = "Information",
                ["Logging:LogLevel:Microsoft.AspNetCore"] = "Warning",
                ["Logging:LogLevel:System.Net.Http.HttpClient"] = "Warning",
            },
        });

    /// <summary>Error handling, <c>/health/live</c>, <c>/health/ready</c> and <c>/metrics</c>.</summary>
    public static WebApplication MapDefaultEndpoints(this WebApplication app)
    {
        app.UseExceptionHandler();
        app.UseStatusCodePages();
        app.MapHealthEndpoints();
        app.MapPrometheusScrapingEndpoint("/metrics").ExcludeFromDescription().AllowAnonymous(); // scraped without a token; NetworkPolicy limits who reaches it
        return app;
    }
}
