using System.Diagnostics;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using OpenTelemetry;
using OpenTelemetry.Logs;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace DroneDelivery.ServiceDefaults.Telemetry;

/// <summary>The telemetry sources every service listens to.</summary>
public static class TelemetrySources
{
    /// <summary>Our own ActivitySources and Meters are named <c>DroneDelivery.&lt;Component&gt;</c>.</summary>
    public const string OwnPrefix = "DroneDelivery.*";

    /// <summary>
    /// Meters the framework publishes without any instrumentation package: HTTP server and client
    /// request durations, Kestrel connections, and the runtime (CPU time, GC, thread-pool queue
    /// length — the .NET analogue of an event loop's lag).
    /// </summary>
    public static readonly IReadOnlyList<string> FrameworkMeters =
        ["Microsoft.AspNetCore.Hosting", "Microsoft.AspNetCore.Server.Kestrel", "System.Net.Http", "System.Runtime"];

    /// <summary>ActivitySources the framework publishes: incoming requests and outgoing HTTP calls.</summary>
    public static readonly IReadOnlyList<string> FrameworkActivitySources = ["Microsoft.AspNetCore", "System.Net.Http"];
}

/// <summary>Telemetry settings (section <c>Telemetry</c>). Exporters are switched on by the standard environment variables.</summary>
public sealed class TelemetrySettings
{
    /// <summary>Fraction of new traces recorded, 0–1 (a parent's decision is always followed). Default 1.</summary>
    [System.ComponentModel.DataAnnotations.Range(0.0, 1.0)]
    public double TraceSamplingRatio { get; set; } = 1.0;

    /// <summary>Interval at which metrics are pushed to OTLP or Application Insights. Default 15 s. (Prometheus pulls.)</summary>
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

        var instance = Environment.GetEnvironmentVariable("POD_NAME") ?? $"{Environment.MachineName}-{Environment.ProcessId}";
        var useOtlp = !string.IsNullOrWhiteSpace(builder.Configuration[OtlpEndpointVariable]);
        var appInsightsConnection = builder.Configuration[ApplicationInsightsVariable];
        ApplicationInsightsSink? appInsights = string.IsNullOrWhiteSpace(appInsightsConnection)
            ? null
            : new ApplicationInsightsSink(appInsightsConnection, serviceName, instance);

        var prometheus = new PrometheusExporter();
        builder.Services.AddSingleton(prometheus);
        if (appInsights is not null)
        {
            builder.Services.AddSingleton(appInsights);
        }

        var otel = new ServiceCollectionOpenTelemetryBuilder(builder.Services);
        otel.ConfigureResource(resource => resource
            .AddService(serviceName, serviceNamespace: "dronedelivery", serviceInstanceId: instance)
            .AddAttributes([new("deployment.environment.name", builder.Environment.EnvironmentName)]));

        otel.WithTracing(tracing =>
        {
            tracing
                .SetSampler(services => new ParentBasedSampler(new TraceIdRatioBasedSampler(
                    services.GetRequiredService<IOptions<TelemetrySettings>>().Value.TraceSamplingRatio)))
                .AddSource([.. TelemetrySources.FrameworkActivitySources, TelemetrySources.OwnPrefix]);
            if (appInsights is not null)
            {
                tracing.AddProcessor(new BatchActivityExportProcessor(new ApplicationInsightsTraceExporter(appInsights)));
            }
        });

        otel.WithMetrics(metrics =>
        {
            metrics
                .AddMeter([.. TelemetrySources.FrameworkMeters, TelemetrySources.OwnPrefix])
                .AddReader(prometheus.Reader);
            if (appInsights is not null)
            {
                metrics.AddReader(services => new PeriodicExportingMetricReader(
                    new ApplicationInsightsMetricExporter(appInsights),
                    (int)services.GetRequiredService<IOptions<TelemetrySettings>>().Value.MetricExportInterval.TotalMilliseconds)
                {
                    TemporalityPreference = MetricReaderTemporalityPreference.Delta,
                });
            }
        });

        otel.WithLogging(logging =>
        {
            if (appInsights is not null)
            {
                logging.AddProcessor(new BatchLogRecordExportProcessor(new ApplicationInsightsLogExporter(appInsights)));
            }
        });

        if (useOtlp)
        {
            // Reads OTEL_EXPORTER_OTLP_ENDPOINT / _PROTOCOL / _HEADERS for all three signals.
            otel.UseOtlpExporter();
        }

        builder.Services.Configure<OpenTelemetryLoggerOptions>(options =>
        {
            options.IncludeFormattedMessage = true;
            options.IncludeScopes = true;
        });

        // The providers subscribe to sources when first resolved: do that at start, before traffic.
        builder.Services.AddHostedService<TelemetryStartup>();
    }

    /// <summary>Resolves the providers at start so no early request goes unrecorded, and flushes them at stop.</summary>
    private sealed class TelemetryStartup(IServiceProvider services) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken)
        {
            _ = services.GetRequiredService<TracerProvider>();
            _ = services.GetRequiredService<MeterProvider>();
            return Task.CompletedTask;
        }

        public Task StopAsync(CancellationToken cancellationToken)
        {
            services.GetRequiredService<TracerProvider>().ForceFlush(2000);
            services.GetRequiredService<MeterProvider>().ForceFlush(2000);
            services.GetService<ApplicationInsightsSink>()?.Flush();
            return Task.CompletedTask;
        }
    }

    /// <summary>The host-integrated OpenTelemetry builder over the application's service collection.</summary>
    private sealed class ServiceCollectionOpenTelemetryBuilder(IServiceCollection services) : IOpenTelemetryBuilder
    {
        public IServiceCollection Services { get; } = services;
    }
}
