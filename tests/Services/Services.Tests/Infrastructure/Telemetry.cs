using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>
/// Records the spans of one trace: start it, make the calls under test inside it (HttpClient carries
/// the trace context to the services), then read what every service recorded for that trace only, even
/// while other tests run in parallel.
/// </summary>
internal sealed class TraceRecorder : IDisposable
{
    private readonly ActivityListener _listener;
    private readonly ConcurrentQueue<Activity> _stopped = new();
    private readonly Activity _root;

    public TraceRecorder(string name = "test")
    {
        // The root exists before the listener: the listener sees every test's spans from the moment it is
        // added, and a span of another test that stops in between must find a trace id to compare with.
        _root = new Activity(name).SetIdFormat(ActivityIdFormat.W3C);
        _root.ActivityTraceFlags = ActivityTraceFlags.Recorded;
        _listener = new ActivityListener
        {
            ShouldListenTo = source => source.Name.StartsWith("DroneDelivery", StringComparison.Ordinal)
                                       || source.Name.StartsWith("Azure.Messaging.ServiceBus", StringComparison.Ordinal)
                                       || source.Name is "Microsoft.AspNetCore" or "System.Net.Http",
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = activity =>
            {
                if (activity.TraceId == _root.TraceId)
                {
                    _stopped.Enqueue(activity);
                }
            },
        };
        ActivitySource.AddActivityListener(_listener);
        _root.Start();
    }

    public ActivityTraceId TraceId => _root.TraceId;

    /// <summary>Spans of this trace that have ended.</summary>
    public IReadOnlyList<Activity> Spans => [.. _stopped];

    /// <summary>Ends the trace's root span: later calls of the test are no longer part of it.</summary>
    public void StopRoot()
    {
        if (Activity.Current == _root)
        {
            _root.Stop();
        }
    }

    public void Dispose()
    {
        StopRoot();
        _listener.Dispose();
    }
}

/// <summary>Sums the measurements of chosen instruments, by their tags, while it exists.</summary>
internal sealed class MetricRecorder : IDisposable
{
    private readonly MeterListener _listener = new();
    private readonly ConcurrentQueue<Measurement> _measurements = new();

    public MetricRecorder(params string[] instrumentNames)
    {
        var names = instrumentNames.ToHashSet(StringComparer.Ordinal);
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (names.Contains(instrument.Name))
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) => Record(instrument, value, tags));
        _listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) => Record(instrument, value, tags));
        _listener.SetMeasurementEventCallback<int>((instrument, value, tags, _) => Record(instrument, value, tags));
        _listener.Start();
    }

    public IReadOnlyList<Measurement> Measurements => [.. _measurements];

    /// <summary>The measurements of one instrument whose tags include all of <paramref name="tags"/>.</summary>
    public IEnumerable<Measurement> Of(string instrument, params (string Key, object? Value)[] tags) =>
        _measurements.Where(m => m.Instrument == instrument && tags.All(t => m.Tags.TryGetValue(t.Key, out var v) && Equals(v?.ToString(), t.Value?.ToString())));

    public double Sum(string instrument, params (string Key, object? Value)[] tags) => Of(instrument, tags).Sum(m => m.Value);

    public void Dispose() => _listener.Dispose();

    private void Record(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
    {
        var copy = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var tag in tags)
        {
            copy[tag.Key] = tag.Value;
        }

        _measurements.Enqueue(new Measurement(instrument.Name, value, copy));
    }

    internal sealed record Measurement(string Instrument, double Value, IReadOnlyDictionary<string, object?> Tags);
}
