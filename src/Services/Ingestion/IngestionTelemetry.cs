using System.Diagnostics;
using System.Diagnostics.Metrics;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.Ingestion;

/// <summary>Ingestion's own telemetry: accepted and refused requests, batch sizes and send durations.</summary>
public static class IngestionTelemetry
{
    /// <summary>ActivitySource and Meter name.</summary>
    public const string SourceName = "DroneDelivery.Ingestion";

    /// <summary>Counter of requests queued and answered 202; tag <c>operation</c> (delivery, cancel, reschedule).</summary>
    public const string RequestsAccepted = "dronedelivery.ingestion.requests.accepted";

    /// <summary>Counter of valid requests not queued; tags <c>operation</c> and <c>reason</c> (<c>buffer_full</c>, <c>send_failed</c>).</summary>
    public const string RequestsRefused = "dronedelivery.ingestion.requests.refused";

    /// <summary>
    /// Histogram of messages per send to the queue; tags <c>messaging.destination.name</c> and <c>flush</c>
    /// (why it was sent: <c>size</c> = MaxBatchSize reached, <c>delay</c> = MaxBatchDelay passed, <c>bytes</c> =
    /// the queue's maximum message size reached, <c>shutdown</c>).
    /// </summary>
    public const string BatchSize = "dronedelivery.ingestion.batch.size";

    /// <summary>Histogram of the duration of one batch send in seconds; tags <c>messaging.destination.name</c> and <c>outcome</c> (success, failure).</summary>
    public const string SendDuration = "dronedelivery.ingestion.send.duration";

    /// <summary>Histogram of how long a request waited for its message to be sent (buffer + send), in seconds.</summary>
    public const string EnqueueDuration = "dronedelivery.ingestion.enqueue.duration";

    /// <summary>Gauge of messages waiting in the buffer.</summary>
    public const string BufferedMessages = "dronedelivery.ingestion.buffer.messages";

    private static readonly ComponentTelemetry Telemetry = new(SourceName);

    internal static readonly Counter<long> Accepted = Telemetry.Counter(RequestsAccepted, "{request}", "Requests queued and answered 202.");

    internal static readonly Counter<long> Refused = Telemetry.Counter(RequestsRefused, "{request}", "Valid requests that could not be queued.");

    internal static readonly Histogram<int> BatchSizes = Telemetry.Histogram<int>(BatchSize, "{message}", "Messages per send to the queue.");

    internal static readonly Histogram<double> SendDurations = Telemetry.Duration(SendDuration, "Duration of one batch send.");

    internal static readonly Histogram<double> EnqueueDurations = Telemetry.Duration(EnqueueDuration, "Time a request waited for its message to be sent.");

    private static readonly System.Collections.Concurrent.ConcurrentDictionary<Func<int>, byte> Buffers = new();

    private static readonly ObservableGauge<int> BufferGauge = Telemetry.Gauge(
        BufferedMessages, () => Buffers.Keys.Sum(buffered => buffered()), "{message}", "Messages waiting in the buffer.");

    internal static ActivitySource Source => Telemetry.Source;

    /// <summary>Adds a buffer to the gauge until the returned handle is disposed.</summary>
    internal static IDisposable ObserveBuffer(Func<int> buffered)
    {
        Buffers.TryAdd(buffered, 0);
        return new Unobserve(buffered);
    }

    private sealed class Unobserve(Func<int> buffered) : IDisposable
    {
        public void Dispose() => Buffers.TryRemove(buffered, out _);
    }
}
