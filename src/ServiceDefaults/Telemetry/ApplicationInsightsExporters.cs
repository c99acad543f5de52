using System.Diagnostics;
using System.Globalization;
using Microsoft.ApplicationInsights;
using Microsoft.ApplicationInsights.DataContracts;
using Microsoft.ApplicationInsights.Extensibility;
using Microsoft.ApplicationInsights.Extensibility.Implementation;
using Microsoft.Extensions.Logging;
using OpenTelemetry;
using OpenTelemetry.Logs;
using OpenTelemetry.Metrics;

namespace DroneDelivery.ServiceDefaults.Telemetry;

/// <summary>
/// Sends OpenTelemetry traces, metrics and logs to Application Insights through the Application
/// Insights SDK's channel. It stands in for the Azure Monitor OpenTelemetry exporter, which this
/// repository's package source does not carry (docs/dependencies.md). Spans map to the telemetry
/// types the case studies' Log Analytics queries read: server/consumer spans become <c>requests</c>,
/// the rest <c>dependencies</c> whose <c>type</c> follows the Azure conventions
/// (<c>Azure DocumentDB</c>, <c>Azure Service Bus</c>, <c>Redis</c>, <c>Http</c>).
/// </summary>
public sealed class ApplicationInsightsSink : IDisposable
{
    private readonly TelemetryConfiguration _configuration;

    public ApplicationInsightsSink(string connectionString, string roleName, string roleInstance)
    {
        _configuration = new TelemetryConfiguration { ConnectionString = connectionString };
        Client = new TelemetryClient(_configuration);
        Client.Context.Cloud.RoleName = roleName;
        Client.Context.Cloud.RoleInstance = roleInstance;
    }

    public TelemetryClient Client { get; }

    public void Flush() => Client.Flush();

    public void Dispose()
    {
        Client.Flush();
        _configuration.Dispose();
    }
}

/// <summary>Spans → requests and dependencies.</summary>
public sealed class ApplicationInsightsTraceExporter(ApplicationInsightsSink sink) : BaseExporter<Activity>
{
    public override ExportResult Export(in Batch<Activity> batch)
    {
        foreach (var activity in batch)
        {
            sink.Client.Track(ToTelemetry(activity));
        }

        return ExportResult.Success;
    }

    internal static Microsoft.ApplicationInsights.Channel.ITelemetry ToTelemetry(Activity activity)
    {
        var status = Tag(activity, "http.response.status_code");
        var failed = activity.Status == ActivityStatusCode.Error;
        OperationTelemetry telemetry;
        if (activity.Kind is ActivityKind.Server or ActivityKind.Consumer)
        {
            var request = new RequestTelemetry
            {
                Name = activity.DisplayName,
                ResponseCode = status ?? (failed ? "Error" : "0"),
                Success = !failed && !(int.TryParse(status, out var code) && code >= 500),
            };
            if (Tag(activity, "url.full") is { } full && Uri.TryCreate(full, UriKind.Absolute, out var url))
            {
                request.Url = url;
            }

            telemetry = request;
        }
        else
        {
            telemetry = new DependencyTelemetry
            {
                Name = activity.DisplayName,
                Type = DependencyType(activity),
                Target = Tag(activity, "server.address") is { } host
                    ? Tag(activity, "server.port") is { } port ? $"{host}:{port}" : host
                    : Tag(activity, "messaging.destination.name") ?? string.Empty,
                Data = Tag(activity, "url.full") ?? Tag(activity, "db.query.text") ?? Tag(activity, "db.statement") ?? activity.DisplayName,
                ResultCode = status ?? Tag(activity, "db.response.status_code") ?? string.Empty,
                Success = !failed,
            };
        }

        telemetry.Timestamp = activity.StartTimeUtc;
        telemetry.Duration = activity.Duration;
        telemetry.Id = activity.SpanId.ToHexString();
        telemetry.Context.Operation.Id = activity.TraceId.ToHexString();
        telemetry.Context.Operation.ParentId = activity.ParentSpanId == default ? null : activity.ParentSpanId.ToHexString();
        foreach (var (key, value) in activity.EnumerateTagObjects())
        {
            if (value is not null)
            {
                telemetry.Properties[key] = Convert.ToString(value, CultureInfo.InvariantCulture);
            }
        }

        return telemetry;
    }

    /// <summary>The dependency <c>type</c> Application Insights uses for each kind of call.</summary>
    internal static string DependencyType(Activity activity)
    {
        var system = Tag(activity, "db.system.name") ?? Tag(activity, "db.system");
        if (system is "cosmosdb" or "azure.cosmosdb")
        {
            return "Azure DocumentDB";
        }

        if (system == "redis")
        {
            return "Redis";
        }

        if (Tag(activity, "messaging.system") == "servicebus")
        {
            return "Azure Service Bus";
        }

        return Tag(activity, "http.request.method") is not null ? "Http" : "InProc";
    }

    private static string? Tag(Activity activity, string name) =>
        activity.GetTagItem(name) is { } value ? Convert.ToString(value, CultureInfo.InvariantCulture) : null;
}

/// <summary>Metric points → custom metrics, aggregated per export interval (delta temporality).</summary>
public sealed class ApplicationInsightsMetricExporter(ApplicationInsightsSink sink) : BaseExporter<OpenTelemetry.Metrics.Metric>
{
    public override ExportResult Export(in Batch<OpenTelemetry.Metrics.Metric> batch)
    {
        foreach (var metric in batch)
        {
            foreach (ref readonly var point in metric.GetMetricPoints())
            {
                var telemetry = new MetricTelemetry { Name = metric.Name, Timestamp = point.EndTime };
                switch (metric.MetricType)
                {
                    case MetricType.Histogram:
                        telemetry.Sum = point.GetHistogramSum();
                        telemetry.Count = (int)Math.Min(int.MaxValue, point.GetHistogramCount());
                        if (point.TryGetHistogramMinMaxValues(out var min, out var max))
                        {
                            telemetry.Min = min;
                            telemetry.Max = max;
                        }

                        break;
                    case MetricType.LongSum or MetricType.LongSumNonMonotonic:
                        telemetry.Sum = point.GetSumLong();
                        telemetry.Count = 1;
                        break;
                    case MetricType.DoubleSum or MetricType.DoubleSumNonMonotonic:
                        telemetry.Sum = point.GetSumDouble();
                        telemetry.Count = 1;
                        break;
                    case MetricType.LongGauge:
                        telemetry.Sum = point.GetGaugeLastValueLong();
                        telemetry.Count = 1;
                        break;
                    case MetricType.DoubleGauge:
                        telemetry.Sum = point.GetGaugeLastValueDouble();
                        telemetry.Count = 1;
                        break;
                    default:
                        continue;
                }

                foreach (var tag in point.Tags)
                {
                    telemetry.Properties[tag.Key] = Convert.ToString(tag.Value, CultureInfo.InvariantCulture);
                }

                sink.Client.TrackMetric(telemetry);
            }
        }

        return ExportResult.Success;
    }
}

/// <summary>Log records → traces, and exceptions.</summary>
public sealed class ApplicationInsightsLogExporter(ApplicationInsightsSink sink) : BaseExporter<LogRecord>
{
    public override ExportResult Export(in Batch<LogRecord> batch)
    {
        foreach (var record in batch)
        {
            var message = record.FormattedMessage ?? record.Body ?? string.Empty;
            var severity = record.LogLevel switch
            {
                LogLevel.Trace or LogLevel.Debug => SeverityLevel.Verbose,
                LogLevel.Information => SeverityLevel.Information,
                LogLevel.Warning => SeverityLevel.Warning,
                LogLevel.Error => SeverityLevel.Error,
                _ => SeverityLevel.Critical,
            };
            Microsoft.ApplicationInsights.Channel.ITelemetry telemetry;
            IDictionary<string, string> properties;
            if (record.Exception is not null)
            {
                var exception = new ExceptionTelemetry(record.Exception) { SeverityLevel = severity, Message = message };
                properties = exception.Properties;
                telemetry = exception;
            }
            else
            {
                var trace = new TraceTelemetry(message, severity);
                properties = trace.Properties;
                telemetry = trace;
            }

            telemetry.Timestamp = record.Timestamp;
            if (record.TraceId != default)
            {
                telemetry.Context.Operation.Id = record.TraceId.ToHexString();
                telemetry.Context.Operation.ParentId = record.SpanId.ToHexString();
            }

            properties["CategoryName"] = record.CategoryName ?? string.Empty;
            foreach (var (key, value) in record.Attributes ?? [])
            {
                if (value is not null && key != "{OriginalFormat}")
                {
                    properties[key] = Convert.ToString(value, CultureInfo.InvariantCulture) ?? string.Empty;
                }
            }

            sink.Client.Track(telemetry);
        }

        return ExportResult.Success;
    }
}
