using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace DroneDelivery.ServiceDefaults.Telemetry;

/// <summary>
/// One component's own telemetry: its ActivitySource and its Meter, both under the component's name, and
/// the instruments it records on that Meter. The name must start with <c>DroneDelivery.</c>, the prefix
/// every service listens to (<see cref="TelemetrySources.OwnPrefix"/>), or nothing it records would be
/// exported. A component's telemetry class keeps one of these and its instruments in static fields, so
/// that its type initialiser creates them all.
/// </summary>
public sealed class ComponentTelemetry
{
    private static readonly string OwnNamePrefix = TelemetrySources.OwnPrefix.TrimEnd('*');

    private readonly Meter _meter;

    public ComponentTelemetry(string name)
    {
        if (!name.StartsWith(OwnNamePrefix, StringComparison.Ordinal) || name.Length == OwnNamePrefix.Length)
        {
            throw new ArgumentException($"A component's telemetry is named {OwnNamePrefix}<Component>, not '{name}'.", nameof(name));
        }

        Name = name;
        Source = new ActivitySource(name);
        _meter = new Meter(name);
    }

    /// <summary>The name of both the ActivitySource and the Meter.</summary>
    public string Name { get; }

    /// <summary>The component's spans.</summary>
    public ActivitySource Source { get; }

    /// <summary>
    /// A counter of whole things; <paramref name="unit"/> names them in braces (<c>{call}</c>), which adds
    /// nothing to the Prometheus name beyond <c>_total</c>.
    /// </summary>
    public Counter<long> Counter(string name, string unit, string description) =>
        _meter.CreateCounter<long>(name, unit, description);

    /// <summary>
    /// The bucket bounds of every duration histogram, in seconds: those OpenTelemetry's semantic conventions give
    /// <c>http.server.request.duration</c>, 5 ms to 10 s. Without them the SDK's defaults (0, 5, 10, 25 … 10,000),
    /// meant for milliseconds, would put every call of a second or less into one bucket and no percentile could be read.
    /// </summary>
    public static IReadOnlyList<double> DurationBuckets { get; } = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

    /// <summary>A histogram of durations in seconds (unit <c>s</c>, so <c>_seconds</c> in Prometheus), bucketed by <see cref="DurationBuckets"/>.</summary>
    public Histogram<double> Duration(string name, string description) =>
        _meter.CreateHistogram(name, "s", description, tags: null, advice: new InstrumentAdvice<double> { HistogramBucketBoundaries = DurationBuckets });

    /// <summary>A histogram of amounts in <paramref name="unit"/>.</summary>
    public Histogram<T> Histogram<T>(string name, string unit, string description)
        where T : struct =>
        _meter.CreateHistogram<T>(name, unit, description);

    /// <summary>A gauge whose value is read from <paramref name="observe"/> at each collection.</summary>
    public ObservableGauge<T> Gauge<T>(string name, Func<T> observe, string unit, string description)
        where T : struct =>
        _meter.CreateObservableGauge(name, observe, unit, description);
}
