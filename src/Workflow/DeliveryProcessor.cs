using DroneDelivery.Contracts.Messaging;
using DroneDelivery.ServiceBus;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Workflow;

/// <summary>
/// Runs the <see cref="ServiceBusProcessor"/> over the delivery-request queue with the options of the
/// <c>Processor</c> section — MaxConcurrentCalls, PrefetchCount, MaxAutoLockRenewalDuration — and
/// AutoCompleteMessages off: <see cref="DeliveryWorkflow"/> settles every message itself. If the queue
/// cannot be reached at start it keeps trying, backing off on the injected clock from 1 s to 30 s (and is
/// not ready meanwhile).
/// </summary>
public sealed partial class DeliveryProcessor : BackgroundService
{
    private static readonly TimeSpan MaxStartDelay = TimeSpan.FromSeconds(30);

    private readonly ILogger<DeliveryProcessor> _logger;
    private readonly TimeProvider _time;

    public DeliveryProcessor(ServiceBusClient client, IOptions<ServiceBusSettings> serviceBus, IOptions<ProcessorSettings> settings, DeliveryWorkflow workflow, TimeProvider time, ILogger<DeliveryProcessor> logger)
    {
        _logger = logger;
        _time = time;
        Processor = client.CreateProcessor(serviceBus.Value.QueueName, CreateOptions(settings.Value));
        Processor.ProcessMessageAsync += workflow.HandleAsync;
        Processor.ProcessErrorAsync += OnErrorAsync;
    }

    /// <summary>The processor, with its effective options.</summary>
    public ServiceBusProcessor Processor { get; }

    /// <summary>Why the last attempt to start failed, while not processing.</summary>
    public string? StartError { get; private set; }

    /// <summary>The processor's options as configured: the knobs of steps B3–B5.</summary>
    public static ServiceBusProcessorOptions CreateOptions(ProcessorSettings settings) => new()
    {
        MaxConcurrentCalls = settings.MaxConcurrentCalls,
        PrefetchCount = settings.PrefetchCount,
        MaxAutoLockRenewalDuration = settings.MaxAutoLockRenewalDuration,
        AutoCompleteMessages = false,
        ReceiveMode = ServiceBusReceiveMode.PeekLock,
    };

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var delay = TimeSpan.FromSeconds(1);
        while (!stoppingToken.IsCancellationRequested)
        {
            try
            {
                await Processor.StartProcessingAsync(stoppingToken).ConfigureAwait(false);
                StartError = null;
                LogStarted(_logger, Processor.EntityPath, Processor.MaxConcurrentCalls, Processor.PrefetchCount, Processor.MaxAutoLockRenewalDuration);
                break;
            }
            catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e)
            {
                StartError = e.Message;
                LogStartFailed(_logger, Processor.EntityPath, delay.TotalSeconds, e.Message);
                try
                {
                    await Task.Delay(delay, _time, stoppingToken).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }

                delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, MaxStartDelay.Ticks));
            }
        }

        try
        {
            await Task.Delay(Timeout.Infinite, stoppingToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }

    public override async Task StopAsync(CancellationToken cancellationToken)
    {
        await base.StopAsync(cancellationToken).ConfigureAwait(false);

        // Lets running handlers finish and settle; prefetched messages go back to the queue as their locks expire.
        await Processor.StopProcessingAsync(cancellationToken).ConfigureAwait(false);
        await Processor.DisposeAsync().ConfigureAwait(false);
    }

    private Task OnErrorAsync(ProcessErrorEventArgs args)
    {
        if (args.Exception is ServiceBusException { Reason: ServiceBusFailureReason.MessageLockLost })
        {
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

    [LoggerMessage(EventId = 4411, EventName = "ProcessorStartFailed", Level = LogLevel.Error, Message = "Cannot process queue {Queue}; retrying in {DelaySeconds} s: {Error}")]
    private static partial void LogStartFailed(ILogger logger, string queue, double delaySeconds, string error);

    [LoggerMessage(EventId = 4412, EventName = "ProcessorError", Level = LogLevel.Warning, Message = "Service Bus processor error ({Source}): {Error}")]
    private static partial void LogProcessorError(ILogger logger, string source, string error);

    [LoggerMessage(EventId = 4413, EventName = "ProcessorLockLost", Level = LogLevel.Warning, Message = "Service Bus processor: message lock lost ({Source})")]
    private static partial void LogProcessorLockLost(ILogger logger, string source);
}
