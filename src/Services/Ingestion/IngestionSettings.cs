using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.Ingestion;

/// <summary>Ingestion's answers (section <c>Ingestion</c>).</summary>
public sealed class IngestionSettings : IValidatableObject
{
    /// <summary>
    /// Absolute http(s) address under which clients reach Delivery's status endpoint; the <c>Location</c>
    /// header is then <c>{address}/api/deliveries/{id}/status</c>. Unset (default): the header is the
    /// relative path <c>/api/deliveries/{id}/status</c>.
    /// </summary>
    public Uri? DeliveryStatusBaseAddress { get; set; }

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        if (DeliveryStatusBaseAddress is { } address && (!address.IsAbsoluteUri || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps)))
        {
            yield return new ValidationResult("DeliveryStatusBaseAddress must be an absolute http or https address.", [nameof(DeliveryStatusBaseAddress)]);
        }
    }
}

/// <summary>
/// How accepted requests are sent to the queue (section <c>Batching</c>): gathered in a bounded
/// in-memory buffer and sent in batches — one send per batch instead of one per request — while each
/// request waits until the batch holding its message has been sent.
/// </summary>
public sealed class BatchingSettings
{
    /// <summary>Most messages per send (count, 1 – 1000; a batch is also cut at the queue's maximum message size). Default 100.</summary>
    [Range(1, 1000)]
    public int MaxBatchSize { get; set; } = 100;

    /// <summary>
    /// Longest a message waits for others to fill its batch (hh:mm:ss.fff, 0 – 1 s). 0 sends whatever is
    /// buffered at once. Default 00:00:00.010.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:00", "00:00:01")]
    public TimeSpan MaxBatchDelay { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>Messages the buffer holds (count, 1 – 1000000); when it is full requests get 503 with Retry-After. Default 10000.</summary>
    [Range(1, 1_000_000)]
    public int QueueCapacity { get; set; } = 10_000;
}
