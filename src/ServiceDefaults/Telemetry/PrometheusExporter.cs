using System.Globalization;
using System.Text;
using OpenTelemetry;
using OpenTelemetry.Metrics;

namespace DroneDelivery.ServiceDefaults.Telemetry;

/// <summary>
/// Renders the OpenTelemetry SDK's metrics in the Prometheus text exposition format (0.0.4) when
/// scraped. It is a pull exporter: each scrape collects the current cumulative values, so Prometheus
/// computes rates itself. Naming follows the OpenTelemetry-to-Prometheus conventions: dots become
/// underscores, the unit is appended (<c>s</c> → <c>_seconds</c>, <c>By</c> → <c>_bytes</c>), monotonic
/// sums get <c>_total</c>, histograms expand to <c>_bucket</c>/<c>_sum</c>/<c>_count</c>.
/// <remarks>
/// The SDK only lets its own Prometheus exporter collect in pull mode, so this one is an ordinary
/// (push-capable) exporter whose reader is never scheduled: it exports only when a scrape calls
/// <see cref="MetricReader.Collect"/>, and ignores flushes that happen outside a scrape.
/// </remarks>
public sealed class PrometheusExporter : BaseExporter<Metric>
{
    /// <summary>The content type Prometheus expects for the text format.</summary>
    public const string ContentType = "text/plain; version=0.0.4; charset=utf-8";

    private readonly Lock _scrapeLock = new();
    private readonly StringBuilder _text = new();
    private bool _scraping;

    public PrometheusExporter()
    {
        Reader = new BaseExportingMetricReader(this)
        {
            TemporalityPreference = MetricReaderTemporalityPreference.Cumulative,
        };
    }

    /// <summary>The reader to add to the meter provider.</summary>
    public MetricReader Reader { get; }

    /// <summary>Collects every metric now and returns it as Prometheus text.</summary>
    public string Scrape()
    {
        lock (_scrapeLock)
        {
            _text.Clear();
            _scraping = true;
            try
            {
                Reader.Collect();
            }
            finally
            {
                _scraping = false;
            }

            return _text.ToString();
        }
    }

    public override ExportResult Export(in Batch<Metric> batch)
    {
        if (!_scraping)
        {
            return ExportResult.Success;
        }

        foreach (var metric in batch)
        {
            Write(metric);
        }

        return ExportResult.Success;
    }

    private void Write(Metric metric)
    {
        var type = metric.MetricType;
        var isHistogram = type == MetricType.Histogram;
        var isCounter = type is MetricType.LongSum or MetricType.DoubleSum;
        var name = MetricName(metric.Name, metric.Unit, isCounter);
        var kind = isHistogram ? "histogram" : isCounter ? "counter" : "gauge";
        if (type == MetricType.ExponentialHistogram)
        {
            // Not produced by our configuration (explicit buckets are the default); skip rather than guess.
            return;
        }

        if (!string.IsNullOrEmpty(metric.Description))
        {
            _text.Append("# HELP ").Append(name).Append(' ').Append(EscapeHelp(metric.Description)).Append('\n');
        }

        _text.Append("# TYPE ").Append(name).Append(' ').Append(kind).Append('\n');
        foreach (ref readonly var point in metric.GetMetricPoints())
        {
            var labels = Labels(point.Tags);
            if (isHistogram)
            {
                long cumulative = 0;
                foreach (var bucket in point.GetHistogramBuckets())
                {
                    cumulative += bucket.BucketCount;
                    var bound = double.IsPositiveInfinity(bucket.ExplicitBound) ? "+Inf" : Number(bucket.ExplicitBound);
                    Sample(name + "_bucket", WithLabel(labels, "le", bound), cumulative.ToString(CultureInfo.InvariantCulture));
                }

                Sample(name + "_sum", labels, Number(point.GetHistogramSum()));
                Sample(name + "_count", labels, point.GetHistogramCount().ToString(CultureInfo.InvariantCulture));
                continue;
            }

            var value = type switch
            {
                MetricType.LongSum or MetricType.LongSumNonMonotonic => point.GetSumLong().ToString(CultureInfo.InvariantCulture),
                MetricType.DoubleSum or MetricType.DoubleSumNonMonotonic => Number(point.GetSumDouble()),
                MetricType.LongGauge => point.GetGaugeLastValueLong().ToString(CultureInfo.InvariantCulture),
                MetricType.DoubleGauge => Number(point.GetGaugeLastValueDouble()),
                _ => null,
            };
            if (value is not null)
            {
                Sample(name, labels, value);
            }
        }
    }

    private void Sample(string name, string labels, string value) =>
        _text.Append(name).Append(labels).Append(' ').Append(value).Append('\n');

    /// <summary>The Prometheus name of an OpenTelemetry instrument.</summary>
    public static string MetricName(string name, string? unit, bool isCounter)
    {
        var sanitized = Sanitize(name);
        var suffix = UnitSuffix(unit);
        if (suffix.Length > 0 && !sanitized.EndsWith("_" + suffix, StringComparison.Ordinal))
        {
            sanitized += "_" + suffix;
        }

        if (isCounter && !sanitized.EndsWith("_total", StringComparison.Ordinal))
        {
            sanitized += "_total";
        }

        return sanitized;
    }

    private static string UnitSuffix(string? unit) => unit switch
    {
        null or "" or "1" => string.Empty,
        _ when unit.StartsWith('{') => string.Empty, // annotations such as {request} carry no unit
        "s" => "seconds",
        "ms" => "milliseconds",
        "us" => "microseconds",
        "ns" => "nanoseconds",
        "By" => "bytes",
        "%" => "percent",
        _ => Sanitize(unit).Trim('_'),
    };

    private static string Sanitize(string name)
    {
        var builder = new StringBuilder(name.Length);
        foreach (var c in name)
        {
            builder.Append(char.IsAsciiLetterOrDigit(c) || c is '_' or ':' ? c : '_');
        }

        if (builder.Length > 0 && char.IsAsciiDigit(builder[0]))
        {
            builder.Insert(0, '_');
        }

        return builder.ToString();
    }

    private static string Labels(ReadOnlyTagCollection tags)
    {
        if (tags.Count == 0)
        {
            return string.Empty;
        }

        var builder = new StringBuilder("{");
        var first = true;
        foreach (var tag in tags)
        {
            if (!first)
            {
                builder.Append(',');
            }

            first = false;
            builder.Append(Sanitize(tag.Key)).Append("=\"").Append(EscapeLabel(Convert.ToString(tag.Value, CultureInfo.InvariantCulture) ?? string.Empty)).Append('"');
        }

        return builder.Append('}').ToString();
    }

    private static string WithLabel(string labels, string key, string value) =>
        labels.Length == 0 ? $"{{{key}=\"{value}\"}}" : $"{labels[..^1]},{key}=\"{value}\"}}";

    private static string EscapeLabel(string value) =>
        value.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\"", "\\\"", StringComparison.Ordinal).Replace("\n", "\\n", StringComparison.Ordinal);

    private static string EscapeHelp(string value) =>
        value.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\n", "\\n", StringComparison.Ordinal);

    private static string Number(double value) => value switch
    {
        double.PositiveInfinity => "+Inf",
        double.NegativeInfinity => "-Inf",
        double.NaN => "NaN",
        _ => value.ToString("R", CultureInfo.InvariantCulture),
    };
}
