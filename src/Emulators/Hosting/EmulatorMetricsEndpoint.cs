using System.Diagnostics.Metrics;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace DroneDelivery.Emulators.Hosting;

/// <summary>
/// An emulator's telemetry. Its <c>GET /metrics</c>: the instruments of its own <see cref="Meter"/>, exposed by
/// OpenTelemetry's Prometheus exporter with the services' translation (see
/// <c>src/Services/Shared/ServiceDefaults/Telemetry</c>): names keep their <c>_total</c> suffixes, every scrape is
/// collected anew, and samples carry no <c>otel_scope_*</c> labels. Compiled into each emulator.
/// </summary>
public static class EmulatorMetricsEndpoint
{
    public const string Path = "/metrics";

    /// <summary>
    /// What the exporter answers in, whatever the scraper asks for. Prometheus asks for OpenMetrics
    /// first, and there a counter <c>x_total</c> and a histogram <c>x</c> share the family name
    /// <c>x</c>: the exporter then drops both (the Cosmos DB emulator's
    /// <c>cosmos_emulator_request_charge_total</c> and <c>cosmos_emulator_request_charge</c>). The
    /// classic text format, which every Prometheus reads and which the emulators always served,
    /// keeps them apart.
    /// </summary>
    public const string ExpositionFormat = "text/plain; version=0.0.4";

    /// <summary>
    /// A meter provider that reads <paramref name="meter"/> (this emulator's instance: tests host
    /// several emulators in one process, each with a Meter of the same name) and serves it to the
    /// Prometheus exporter.
    /// </summary>
    public static IServiceCollection AddEmulatorMetrics(this IServiceCollection services, string serviceName, Meter meter)
    {
        var otel = services.AddOpenTelemetry()
            .ConfigureResource(resource => resource.AddService(serviceName, serviceNamespace: "dronedelivery"))
            .WithMetrics(metrics =>
            {
                metrics
                    .AddMeter(meter.Name)
                    .AddView(instrument => ReferenceEquals(instrument.Meter, meter) ? null : MetricStreamConfiguration.Drop)
                    .AddPrometheusExporter(options =>
                    {
                        // Readers difference two scrapes around a step; a cached answer (300 ms by default) would be stale.
                        options.ScrapeResponseCacheDurationMilliseconds = 0;

                        // Counter names already end in _total and stay as the dashboards read them.
                        options.DisableTotalNameSuffixForCounters = false;

                        // The emulator's name is in every metric name; otel_scope_* labels would only add bytes.
                        options.ScopeInfoEnabled = false;
                    });
            });

        // Beside the services in a trace viewer (the lab's --dashboard, a collector on a cluster): the same
        // standard variable switches the export on, for the emulator's requests (a Cosmos DB call's server
        // span under the SDK's client span), its meter and its logs.
        if (!string.IsNullOrWhiteSpace(Environment.GetEnvironmentVariable(OtlpEndpointVariable)))
        {
            otel.WithTracing(tracing => tracing.AddAspNetCoreInstrumentation(options =>
                    options.Filter = context => !context.Request.Path.StartsWithSegments(Path)))
                .WithLogging()
                .UseOtlpExporter();
        }

        return services;
    }

    /// <summary>The standard variable that names an OTLP collector; unset, nothing is exported.</summary>
    public const string OtlpEndpointVariable = "OTEL_EXPORTER_OTLP_ENDPOINT";

    /// <summary>Answers <see cref="Path"/> with the exporter, in <see cref="ExpositionFormat"/>.</summary>
    public static IApplicationBuilder UseEmulatorMetrics(this IApplicationBuilder app) =>
        app.UseOpenTelemetryPrometheusScrapingEndpoint(
            meterProvider: null,
            predicate: null,
            path: Path,
            configureBranchedPipeline: branch => branch.Use((context, next) =>
            {
                context.Request.Headers.Accept = ExpositionFormat;
                return next(context);
            }),
            optionsName: null);
}
