namespace DroneDelivery.ServiceBus;

public enum ServiceBusTransportType
{
    /// <summary>AMQP over TCP (port 5671 with TLS; the emulator's port without TLS).</summary>
    AmqpTcp,

    /// <summary>AMQP over WebSockets: not supported by this client.</summary>
    AmqpWebSockets,
}

public enum ServiceBusRetryMode
{
    Fixed,
    Exponential,
}

public enum ServiceBusReceiveMode
{
    PeekLock,
    ReceiveAndDelete,
}

public enum SubQueue
{
    None,
    DeadLetter,
    TransferDeadLetter,
}

public enum ServiceBusMessageState
{
    Active = 0,
    Deferred = 1,
    Scheduled = 2,
}

/// <summary>How operations are retried (the SDK's defaults).</summary>
public sealed class ServiceBusRetryOptions
{
    public ServiceBusRetryMode Mode { get; set; } = ServiceBusRetryMode.Exponential;

    public int MaxRetries { get; set; } = 3;

    public TimeSpan Delay { get; set; } = TimeSpan.FromSeconds(0.8);

    public TimeSpan MaxDelay { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>Time allowed for one attempt; also the processor's default receive wait. Default 60 s.</summary>
    public TimeSpan TryTimeout { get; set; } = TimeSpan.FromMinutes(1);
}

public sealed class ServiceBusClientOptions
{
    public ServiceBusTransportType TransportType { get; set; } = ServiceBusTransportType.AmqpTcp;

    public ServiceBusRetryOptions RetryOptions { get; set; } = new();

    public string? Identifier { get; set; }

    /// <summary>Server certificate validation for amqps; null uses the platform's default validation.</summary>
    public System.Net.Security.RemoteCertificateValidationCallback? CertificateValidationCallback { get; set; }

    /// <summary>
    /// The client's clock: it times try timeouts and retry backoff, receive waits, lock renewal and the processor's
    /// error backoff, token expiry and refresh, and the AMQP connection's heartbeats and idle time-out. Internal so
    /// the public shape stays the SDK's (which has no such option); tests replace it to move time themselves.
    /// </summary>
    internal TimeProvider TimeProvider { get; set; } = TimeProvider.System;
}

public sealed class ServiceBusReceiverOptions
{
    public ServiceBusReceiveMode ReceiveMode { get; set; } = ServiceBusReceiveMode.PeekLock;

    /// <summary>Messages fetched ahead into the local buffer (locked from the moment they arrive). Default 0.</summary>
    public int PrefetchCount { get; set; }

    public SubQueue SubQueue { get; set; } = SubQueue.None;

    public string? Identifier { get; set; }
}

/// <summary>Processor settings; names and defaults are the SDK's.</summary>
public sealed class ServiceBusProcessorOptions
{
    public ServiceBusReceiveMode ReceiveMode { get; set; } = ServiceBusReceiveMode.PeekLock;

    /// <summary>Messages fetched ahead. Default 0. Case study step B4 raises it to 3000.</summary>
    public int PrefetchCount { get; set; }

    /// <summary>Complete after the handler returns, abandon when it throws. Default true.</summary>
    public bool AutoCompleteMessages { get; set; } = true;

    /// <summary>How long locks are renewed automatically while a handler runs. Default 5 minutes; zero disables.</summary>
    public TimeSpan MaxAutoLockRenewalDuration { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>Handlers running at once. Default 1. Case study step B4 raises it to 20.</summary>
    public int MaxConcurrentCalls { get; set; } = 1;

    /// <summary>How long one receive call waits; null uses <see cref="ServiceBusRetryOptions.TryTimeout"/>.</summary>
    public TimeSpan? MaxReceiveWaitTime { get; set; }

    public SubQueue SubQueue { get; set; } = SubQueue.None;

    public string? Identifier { get; set; }
}

public sealed class CreateMessageBatchOptions
{
    /// <summary>Maximum batch size in bytes; null uses the link's max-message-size.</summary>
    public long? MaxSizeInBytes { get; set; }
}

/// <summary>Where a processor error came from.</summary>
public enum ServiceBusErrorSource
{
    Abandon,
    Complete,
    Receive,
    RenewLock,
    AcceptSession,
    CloseSession,
    ProcessMessageCallback,
}
