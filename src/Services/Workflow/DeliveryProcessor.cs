using Azure.Messaging.ServiceBus;
using DroneDelivery.ServiceClients.Messaging;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Workflow;

/// <summary>
/// Runs the SDK's <see cref="ServiceBusProcessor"/> over the delivery-request queue with the options of the
/// <c>Processor</c> section — MaxConcurrentCalls, PrefetchCount, MaxAutoLockRenewalDuration — and
/// AutoCompleteMessages off: <see cref="DeliveryWorkflow"/> settles every message itself. The processor opens its
/// links in the background and keeps retrying when the queue cannot be reached (ServiceBus:Retry), reporting each
/// failure here; meanwhile the readiness check, which peeks the queue, fails. When the
/// <see cref="WorkflowCircuitBreaker"/> opens it stops taking messages (running handlers finish; prefetched
/// messages are released), waits CircuitBreaker:BreakDuration, then resumes gently: a <see cref="Probe"/> processor
/// takes one message at a time, without prefetch — the first is the breaker's half-open probe — until
/// CircuitBreaker:ProbeMessages have succeeded, and only then does the processor run at MaxConcurrentCalls and
/// PrefetchCount again. If the breaker opens meanwhile, it pauses again.
/// </summary>
public sealed partial class DeliveryProcessor : BackgroundService
{
    private readonly ILogger<DeliveryProcessor> _logger;
    private readonly TimeProvider _time;
    private readonly TimeSpan _breakDuration;
    private readonly int _probeMessages;
    private readonly ServiceBusReceiver _peeker;
    private int _stopped;

    /// <summary>How long a shutdown waits for one processor's or receiver's close.</summary>
    private static readonly TimeSpan CloseBound = TimeSpan.FromSeconds(5);

    public DeliveryProcessor(
        ServiceBusClient client,
        IOptions<ServiceBusSettings> serviceBus,
        IOptions<ProcessorSettings> settings,
        IOptions<CircuitBreakerSettings> breakerSettings,
        DeliveryWorkflow workflow,
        WorkflowCircuitBreaker breaker,
        TimeProvider time,
        ILogger<DeliveryProcessor> logger)
    {
        _logger = logger;
        _time = time;
        _breakDuration = breakerSettings.Value.BreakDuration;
        _probeMessages = breakerSettings.Value.ProbeMessages;
        Breaker = breaker;
        Processor = client.CreateProcessor(serviceBus.Value.QueueName, CreateOptions(settings.Value));
        Processor.ProcessMessageAsync += workflow.HandleAsync;
        Processor.ProcessErrorAsync += OnErrorAsync;
        Probe = client.CreateProcessor(serviceBus.Value.QueueName, CreateOptions(new ProcessorSettings
        {
            MaxConcurrentCalls = 1,
            PrefetchCount = 0,
            MaxAutoLockRenewalDuration = settings.Value.MaxAutoLockRenewalDuration,
        }));
        Probe.ProcessMessageAsync += workflow.HandleAsync;
        Probe.ProcessErrorAsync += OnErrorAsync;
        _peeker = client.CreateReceiver(serviceBus.Value.QueueName);
    }

    /// <summary>The processor, with its effective options.</summary>
    public ServiceBusProcessor Processor { get; }

    /// <summary>The processor that takes one message at a time, without prefetch, while the processor resumes after a break.</summary>
    public ServiceBusProcessor Probe { get; }

    /// <summary>The breaker that pauses <see cref="Processor"/>.</summary>
    public WorkflowCircuitBreaker Breaker { get; }

    /// <summary>True while the breaker keeps the processor from taking messages.</summary>
    public bool PausedByBreaker { get; private set; }

    /// <summary>The processor's options as configured: the knobs of steps B3–B5.</summary>
    public static ServiceBusProcessorOptions CreateOptions(ProcessorSettings settings) => new()
    {
        MaxConcurrentCalls = settings.MaxConcurrentCalls,
        PrefetchCount = settings.PrefetchCount,
        MaxAutoLockRenewalDuration = settings.MaxAutoLockRenewalDuration,
        AutoCompleteMessages = false,
        ReceiveMode = ServiceBusReceiveMode.PeekLock,
    };

    /// <summary>
    /// Null when the queue can be read now, else why not: a peek on the processor's connection, which locks nothing
    /// (the processor itself reports a failure to receive only as an error event, and receives nothing from an empty queue).
    /// </summary>
    public async Task<string?> CheckQueueAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _peeker.PeekMessageAsync(cancellationToken: cancellationToken).ConfigureAwait(false);
            return null;
        }
        catch (Exception e)
        {
            return e is OperationCanceledException ? "no answer in time" : e.Message;
        }
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        try
        {
            await StartProcessingAsync(Processor, stoppingToken).ConfigureAwait(false);
            while (true)
            {
                await WaitUntilAsync(() => Breaker.State == BreakerState.Open, stoppingToken).ConfigureAwait(false);

                // Paused: stop taking messages — from here, not from a handler, since stopping waits for
                // the running handlers to finish and settle. The links stay open: what a link already holds
                // (prefetched, or sent into the credit of a receive the stop cancelled) is handed out on resuming.
                await Processor.StopProcessingAsync(stoppingToken).ConfigureAwait(false);
                await Probe.StopProcessingAsync(stoppingToken).ConfigureAwait(false);
                PausedByBreaker = true;
                LogPaused(_logger, Processor.EntityPath, _breakDuration.TotalSeconds);
                await Task.Delay(_breakDuration, _time, stoppingToken).ConfigureAwait(false);

                // Gently: one message at a time, none locked ahead, until ProbeMessages have succeeded — or the
                // breaker opens again (the first message is its half-open probe).
                var openings = Breaker.Openings;
                var successes = Breaker.Successes;
                await StartProcessingAsync(Probe, stoppingToken).ConfigureAwait(false);
                PausedByBreaker = false;
                await WaitUntilAsync(
                    () => Breaker.Openings != openings || (Breaker.State == BreakerState.Closed && Breaker.Successes - successes >= _probeMessages),
                    stoppingToken).ConfigureAwait(false);
                if (Breaker.Openings == openings)
                {
                    await Probe.StopProcessingAsync(stoppingToken).ConfigureAwait(false);
                    await StartProcessingAsync(Processor, stoppingToken).ConfigureAwait(false);
                    LogResumed(_logger, Processor.EntityPath, Processor.MaxConcurrentCalls);
                }
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping.
        }
    }

    private async Task WaitUntilAsync(Func<bool> condition, CancellationToken stoppingToken)
    {
        while (true)
        {
            var change = Breaker.WaitForChangeAsync(stoppingToken);
            if (condition())
            {
                return;
            }

            await change.ConfigureAwait(false);
        }
    }

    /// <summary>Starts <paramref name="processor"/> and logs the options it runs with.</summary>
    private async Task StartProcessingAsync(ServiceBusProcessor processor, CancellationToken stoppingToken)
    {
        await processor.StartProcessingAsync(stoppingToken).ConfigureAwait(false);
        LogStarted(_logger, processor.EntityPath, processor.MaxConcurrentCalls, processor.PrefetchCount, processor.MaxAutoLockRenewalDuration);
    }

    /// <summary>
    /// Stops taking messages and waits (up to Processor:ShutdownTimeout, the host's limit) for the running handlers to
    /// finish and settle what they hold, so that no message waits out its lock; prefetched messages go back to the
    /// queue as the links close. Called by the host on SIGTERM; a second call does nothing.
    /// </summary>
    public override async Task StopAsync(CancellationToken cancellationToken)
    {
        if (Interlocked.Exchange(ref _stopped, 1) == 1)
        {
            return;
        }

        await base.StopAsync(cancellationToken).ConfigureAwait(false);

        // Lets running handlers finish and settle; prefetched messages go back to the queue as the links close.
        await StopProcessingAsync(Processor, cancellationToken).ConfigureAwait(false);
        await StopProcessingAsync(Probe, cancellationToken).ConfigureAwait(false);
        await CloseAsync(Processor.DisposeAsync, Processor.EntityPath, cancellationToken).ConfigureAwait(false);
        await CloseAsync(Probe.DisposeAsync, Probe.EntityPath, cancellationToken).ConfigureAwait(false);
        await CloseAsync(_peeker.DisposeAsync, _peeker.EntityPath, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Stops a processor within the host's shutdown limit. Past it the host has stopped waiting: the stop is logged as
    /// incomplete and the shutdown goes on to close the links, which gives back what they still hold; a message whose
    /// handler had not settled it yet returns to the queue when its lock ends, as after a crash — late, never lost.
    /// </summary>
    private async Task StopProcessingAsync(ServiceBusProcessor processor, CancellationToken cancellationToken)
    {
        try
        {
            await processor.StopProcessingAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            LogStopIncomplete(_logger, processor.EntityPath);
        }
    }

    /// <summary>
    /// Closes a processor or receiver without letting the close hold up the shutdown: closing a receiver drains its
    /// credit and waits for the broker's answer (up to the client's TryTimeout, a minute by default). Nothing is lost
    /// when that wait is cut short or fails: what the handlers held is settled by then, and the broker releases
    /// whatever else a link still held when the connection closes with the client. The bound is on the system clock,
    /// like every bound on an unresponsive peer, so a test's clock that never moves cannot stretch it.
    /// </summary>
    private async Task CloseAsync(Func<ValueTask> close, string entityPath, CancellationToken cancellationToken)
    {
        try
        {
            await close().AsTask().WaitAsync(CloseBound, TimeProvider.System, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (e is TimeoutException or OperationCanceledException or ServiceBusException)
        {
            LogCloseIncomplete(_logger, entityPath, e.Message);
        }
    }

    private Task OnErrorAsync(ProcessErrorEventArgs args)
    {
        // The workflow settles messages itself and counts the locks it finds lost; what arrives here is the
        // processor's own work: receiving and renewing locks.
        if (ServiceBusClientTelemetry.IsLockLost(args.Exception))
        {
            ServiceBusClientTelemetry.Record(MessageEvent.LockLost, args.EntityPath);
            LogProcessorLockLost(_logger, args.ErrorSource.ToString());
        }
        else if (args.Exception is not OperationCanceledException)
        {
            LogProcessorError(_logger, args.ErrorSource.ToString(), args.Exception.Message);
        }

        return Task.CompletedTask;
    }

    [LoggerMessage(EventId = 4410, EventName = "ProcessorStarted", Level = LogLevel.Information,
        Message = "Processing queue {Queue} with MaxConcurrentCalls {MaxConcurrentCalls}, PrefetchCount {PrefetchCount}, MaxAutoLockRenewalDuration {MaxAutoLockRenewalDuration}")]
    private static partial void LogStarted(ILogger logger, string queue, int maxConcurrentCalls, int prefetchCount, TimeSpan maxAutoLockRenewalDuration);

    [LoggerMessage(EventId = 4416, EventName = "ProcessorCloseIncomplete", Level = LogLevel.Warning, Message = "Closing the receivers of queue {Queue} did not complete during shutdown: {Reason}")]
    private static partial void LogCloseIncomplete(ILogger logger, string queue, string reason);

    [LoggerMessage(EventId = 4417, EventName = "ProcessorStopIncomplete", Level = LogLevel.Warning,
        Message = "Stopping the processor of queue {Queue} did not complete within the shutdown timeout: messages its handlers still hold return to the queue when their locks end")]
    private static partial void LogStopIncomplete(ILogger logger, string queue);

    [LoggerMessage(EventId = 4414, EventName = "ProcessorPaused", Level = LogLevel.Warning, Message = "Circuit breaker open: queue {Queue} paused for {BreakSeconds} s")]
    private static partial void LogPaused(ILogger logger, string queue, double breakSeconds);

    [LoggerMessage(EventId = 4415, EventName = "ProcessorResumed", Level = LogLevel.Information, Message = "Circuit breaker closed: queue {Queue} processed at MaxConcurrentCalls {MaxConcurrentCalls} again")]
    private static partial void LogResumed(ILogger logger, string queue, int maxConcurrentCalls);

    [LoggerMessage(EventId = 4412, EventName = "ProcessorError", Level = LogLevel.Warning, Message = "Service Bus processor error ({Source}): {Error}")]
    private static partial void LogProcessorError(ILogger logger, string source, string error);

    [LoggerMessage(EventId = 4413, EventName = "ProcessorLockLost", Level = LogLevel.Warning, Message = "Service Bus processor: message lock lost ({Source})")]
    private static partial void LogProcessorLockLost(ILogger logger, string source);
}
