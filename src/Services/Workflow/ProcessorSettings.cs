using System.ComponentModel.DataAnnotations;

namespace DroneDelivery.Workflow;

/// <summary>
/// The Service Bus processor's tuning (section <c>Processor</c>). The defaults are the case study's
/// baseline (steps B1–B3); step B4 sets MaxConcurrentCalls 20 and PrefetchCount 3000.
/// </summary>
public sealed class ProcessorSettings
{
    /// <summary>Messages processed at the same time by one replica (count, 1 – 1000). Default 1 (baseline); step B4: 20.</summary>
    [Range(1, 1000)]
    public int MaxConcurrentCalls { get; set; } = 1;

    /// <summary>
    /// Messages fetched ahead into the client's buffer (count, 0 – 100000). Default 0 (baseline); step B4:
    /// 3000. Prefetched messages are locked while they wait, and their locks are not renewed there: a
    /// prefetch larger than what can be processed within the lock duration ends in lock loss.
    /// </summary>
    [Range(0, 100_000)]
    public int PrefetchCount { get; set; }

    /// <summary>How long the processor keeps renewing the lock of a message being processed (0 – 1 day; 0 = never). Default 00:05:00.</summary>
    [Range(typeof(TimeSpan), "00:00:00", "1.00:00:00")]
    public TimeSpan MaxAutoLockRenewalDuration { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// How long a stopping Workflow waits for the messages it holds to finish and be settled (1 s – 1 h; the host's
    /// ShutdownTimeout). Default 00:01:00. Keep it below the pod's terminationGracePeriodSeconds, so that no message
    /// is cut off mid-way and left to wait out its lock.
    /// </summary>
    [Range(typeof(TimeSpan), "00:00:01", "01:00:00")]
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// The queue's MaxDeliveryCount (count, 1 – 2000; Service Bus' default 10). On that delivery a
    /// transient failure is final: the workflow compensates and dead-letters the message itself, with
    /// its reason, instead of abandoning it to be dead-lettered by the broker with partial work left.
    /// </summary>
    [Range(1, 2000)]
    public int MaxDeliveryCount { get; set; } = 10;
}
