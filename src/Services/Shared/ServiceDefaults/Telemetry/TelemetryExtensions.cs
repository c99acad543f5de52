using Azure.Monitor.OpenTelemetry.Exporter;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using OpenTelemetry;
using OpenTelemetry.Logs;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace DroneDelivery.ServiceDefaults.Telemetry;

/// <summary>The telemetry sources every service listens to beyond what the instrumentation packages add.</summary>
public static class TelemetrySources
{
    /// <summary>Our own ActivitySources and Meters are named <c>DroneDelivery.&lt;Component&gt;</c>.</summary>
    public const string OwnPrefix = "DroneDelivery.*";

    /// <summary>
    /// The ActivitySources of the Service Bus SDK (<c>Azure.Messaging.ServiceBus.ServiceBusSender</c>,
    /// <c>.ServiceBusReceiver</c>, <c>.ServiceBusProcessor</c>, ...): spans named <c>ServiceBusSender.Send</c>,
    /// <c>ServiceBusProcessor.ProcessMessage</c>, <c>ServiceBusReceiver.Complete</c>, ..., the processing span a child
    /// of the sender's trace context. They exist only with <see cref="AzureActivitySourceSwitch"/> on.
    /// </summary>
    public const string ServiceBus = "Azure.Messaging.ServiceBus.*";

    /// <summary>
    /// The AppContext switch with which the Azure SDKs create their spans through ActivitySources (which OpenTelemetry
    /// listens to) rather than only through a DiagnosticListener. Each SDK reads it once, on first use.
    /// </summary>
    public const string AzureActivitySourceSwitch = "Azure.Experimental.EnableActivitySource";

    /// <summary>
    /// The Meter of Polly's telemetry: the HTTP resilience pipelines' retries, timeouts and circuit
    /// transitions (<c>resilience.polly.strategy.events</c>) and attempt and pipeline durations.
    /// </summary>
    public const string Polly = "Polly";
}

/// <summary>Telemetry settings (section <c>Telemetry</c>). Exporters are switched on by the standard environment variables.</summary>
public sealed class TelemetrySettings
{
    /// <summary>Fraction of new traces recorded, 0–1 (a parent's decision is always followed). Default 1.</summary>
    [System.ComponentModel.DataAnnotations.Range(0.0, 1.0)]
    public double TraceSamplingRatio { get; set; } = 1.0;

    /// <summary>
    /// Interval at which metrics are pushed to OTLP. Default 15 s. (Prometheus pulls; the Azure Monitor
    /// exporter pushes every 60 s, an interval it does not let us set.)
    /// </summary>
    [System.ComponentModel.DataAnnotations.Range(typeof(TimeSpan), "00:00:01", "00:10:00")]
    public TimeSpan MetricExportInterval { get; set; } = TimeSpan.FromSeconds(15);
}

internal static class TelemetryExtensions
{
    private const string OtlpEndpointVariable = "OTEL_EXPORTER_OTLP_ENDPOINT";
    private const string ApplicationInsightsVariable = "APPLICATIONINSIGHTS_CONNECTION_STRING";

    public static void AddTelemetry(this IHostApplicationBuilder builder, string serviceName)
    {
        builder.AddSettings<TelemetrySettings>("Telemetry");

        // Before any Azure client exists: the SDKs read the switch once.
        AppContext.SetSwitch(TelemetrySources.AzureActivitySourceSwitch, true);

        var instance = Environment.GetEnvironmentVariable("POD_NAME") ?? $"{Environment.MachineName}-{Environment.ProcessId}";
        var useOtlp = !string.IsNullOrWhiteSpace(builder.Configuration[OtlpEndpointVariable]);
        var appInsightsConnection = builder.Configuration[ApplicationInsightsVariable];

        // The hosting package starts the providers with the host (so no early request goes
        // unrecorded) and flushes them when the host stops.
        var otel = builder.Services.AddOpenTelemetry()
            .ConfigureResource(resource => resource
                .AddService(serviceName, serviceNamespace: "dronedelivery", serviceInstanceId: instance)
                .AddAttributes([new("deployment.environment.name", builder.Environment.EnvironmentName)]))
            .WithTracing(tracing => tracing
                .SetSampler(services => new ParentBasedSampler(new TraceIdRatioBasedSampler(
                    services.GetRequiredService<IOptions<TelemetrySettings>>().Value.TraceSamplingRatio)))
                .AddAspNetCoreInstrumentation(options => options.Filter = context => !IsProbeOrScrape(context.Request.Path))
                .AddHttpClientInstrumentation()
                .AddSource(TelemetrySources.OwnPrefix, TelemetrySources.ServiceBus))
            .WithMetrics(metrics => metrics
                .AddAspNetCoreInstrumentation()
                .AddHttpClientInstrumentation()
                .AddRuntimeInstrumentation()
                .AddMeter(TelemetrySources.OwnPrefix, TelemetrySources.Polly)
                .AddPrometheusExporter(options =>
                {
                    // Every scrape collects anew: the lab reads /metrics right before and after a
                    // step, and a cached answer (300 ms by default) would be stale.
                    options.ScrapeResponseCacheDurationMilliseconds = 0;

                    // Names keep their unit and _total suffixes (dotnet_process_cpu_time_seconds_total),
                    // which the dashboards, the lab and the docs read.
                    options.DisableTotalNameSuffixForCounters = false;

                    // The meter is already part of every name we read (dronedelivery_*, http_*, dotnet_*);
                    // otel_scope_* labels on every sample would only add bytes to each scrape and series
                    // that change with a package version. target_info (resource attributes) stays.
                    options.ScopeInfoEnabled = false;
                }))
            .WithLogging();

        if (!string.IsNullOrWhiteSpace(appInsightsConnection))
        {
            otel.UseAzureMonitorExporter(options => options.ConnectionString = appInsightsConnection);
            builder.Services.AddOptions<AzureMonitorExporterOptions>()
                .Configure<IOptions<TelemetrySettings>>((options, telemetry) =>
                {
                    // The exporter brings its own sampler, which replaces ours; it samples at our
                    // ratio (rather than its default rate limit) and records the rate it used so
                    // Application Insights' itemCount stays right.
                    options.SamplingRatio = (float)telemetry.Value.TraceSamplingRatio;
                    options.TracesPerSecond = null;
                });
        }

        if (useOtlp)
        {
            // Reads OTEL_EXPORTER_OTLP_ENDPOINT / _PROTOCOL / _HEADERS for all three signals.
            otel.UseOtlpExporter();
            builder.Services.AddOptions<MetricReaderOptions>()
                .Configure<IOptions<TelemetrySettings>>((reader, telemetry) =>
                    reader.PeriodicExportingMetricReaderOptions.ExportIntervalMilliseconds =
                        (int)telemetry.Value.MetricExportInterval.TotalMilliseconds);
        }

        builder.Services.Configure<OpenTelemetryLoggerOptions>(options =>
        {
            options.IncludeFormattedMessage = true;
            options.IncludeScopes = true;
        });
    }

    /// <summary>Kubernetes probes and Prometheus scrapes: answered, measured, but not traced.</summary>
    internal static bool IsProbeOrScrape(PathString path) =>
        path.StartsWithSegments("/health") || path.StartsWithSegments("/metrics");
}
