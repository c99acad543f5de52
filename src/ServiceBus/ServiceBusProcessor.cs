using System.Diagnostics;
using DroneDelivery.ServiceBus.Transport;

namespace DroneDelivery.ServiceBus;

/// <summary>
/// Receives and dispatches messages to a handler (the SDK's processor): one receive link, <see cref="MaxConcurrentCalls"/>
/// loops each receiving one message at a time, optional prefetch, automatic lock renewal while a handler runs and
/// automatic completion. Stopping cancels the receive loops, waits for running handlers, drains the link and
/// releases what was prefetched but not handed out.
/// </summary>
public class ServiceBusProcessor : IAsyncDisposable
{
    /// <summary>Renewal starts at most this long before the lock expires (the SDK's buffer).</summary>
    private static readonly TimeSpan MaximumRenewBuffer = TimeSpan.FromSeconds(10);

    private readonly ServiceBusClient _client;
    private readonly ServiceBusProcessorOptions _options;
    private readonly SemaphoreSlim _stateGate = new(1, 1);
    private readonly string _queueName;
    private Func<ProcessMessageEventArgs, Task>? _processMessage;
    private Func<ProcessErrorEventArgs, Task>? _processError;
    private ServiceBusReceiver? _receiver;
    private CancellationTokenSource? _running;
    private Task[] _loops = [];

    internal ServiceBusProcessor(ServiceBusClient client, string queueName, ServiceBusProcessorOptions options)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(options.MaxConcurrentCalls, 1, nameof(options.MaxConcurrentCalls));
        ArgumentOutOfRangeException.ThrowIfNegative(options.PrefetchCount, nameof(options.PrefetchCount));
        if (options.MaxAutoLockRenewalDuration < TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "MaxAutoLockRenewalDuration must not be negative.");
        }

        if (options.MaxReceiveWaitTime is { } wait && wait <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(options), "MaxReceiveWaitTime must be positive.");
        }

        _client = client;
        _queueName = queueName;
        _options = new ServiceBusProcessorOptions
        {
            ReceiveMode = options.ReceiveMode,
            PrefetchCount = options.PrefetchCount,
            AutoCompleteMessages = options.AutoCompleteMessages,
            MaxAutoLockRenewalDuration = options.MaxAutoLockRenewalDuration,
            MaxConcurrentCalls = options.MaxConcurrentCalls,
            MaxReceiveWaitTime = options.MaxReceiveWaitTime,
            SubQueue = options.SubQueue,
            Identifier = options.Identifier,
        };
        EntityPath = options.SubQueue == SubQueue.DeadLetter ? queueName + Primitives.ServiceBusAmqpNames.DeadLetterQueueSuffix : queueName;
        Identifier = options.Identifier ?? $"{EntityPath}-{Guid.NewGuid()}";
    }

    public string EntityPath { get; }

    public string FullyQualifiedNamespace => _client.FullyQualifiedNamespace;

    public string Identifier { get; }

    /// <summary>Effective setting: handlers running at once.</summary>
    public int MaxConcurrentCalls => _options.MaxConcurrentCalls;

    /// <summary>Effective setting: messages fetched ahead.</summary>
    public int PrefetchCount => _options.PrefetchCount;

    public ServiceBusReceiveMode ReceiveMode => _options.ReceiveMode;

    public bool AutoCompleteMessages => _options.AutoCompleteMessages;

    public TimeSpan MaxAutoLockRenewalDuration => _options.MaxAutoLockRenewalDuration;

    public TimeSpan? MaxReceiveWaitTime => _options.MaxReceiveWaitTime;

    public bool IsProcessing => _running is { IsCancellationRequested: false };

    public bool IsClosed { get; private set; }

    public event Func<ProcessMessageEventArgs, Task> ProcessMessageAsync
    {
        add => _processMessage = _processMessage is null ? value : throw new NotSupportedException("A handler for ProcessMessageAsync is already registered.");
        remove => _processMessage = _processMessage == value ? null : throw new ArgumentException("That handler is not registered.");
    }

    public event Func<ProcessErrorEventArgs, Task> ProcessErrorAsync
    {
        add => _processError = _processError is null ? value : throw new NotSupportedException("A handler for ProcessErrorAsync is already registered.");
        remove => _processError = _processError == value ? null : throw new ArgumentException("That handler is not registered.");
    }

    public virtual async Task StartProcessingAsync(CancellationToken cancellationToken = default)
    {
        await _stateGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ObjectDisposedException.ThrowIf(IsClosed, this);
            if (IsProcessing)
            {
                throw new InvalidOperationException("The processor is already running.");
            }

            if (_processMessage is null || _processError is null)
            {
                throw new InvalidOperationException("Register ProcessMessageAsync and ProcessErrorAsync handlers before starting the processor.");
            }

            _receiver = new ServiceBusReceiver(_client, _queueName, new ServiceBusReceiverOptions
            {
                ReceiveMode = _options.ReceiveMode,
                PrefetchCount = _options.PrefetchCount,
                SubQueue = _options.SubQueue,
                Identifier = Identifier,
            });
            // Attach now so a missing entity or bad credentials surface from StartProcessingAsync, as with the SDK.
            await _client.Scope.Retry.RunAsync((_, token) => _receiver.GetLinkAsync(token), EntityPath, cancellationToken).ConfigureAwait(false);
            _running = new CancellationTokenSource();
            var token = _running.Token;
            _loops = [.. Enumerable.Range(0, _options.MaxConcurrentCalls).Select(_ => Task.Run(() => ReceiveLoopAsync(_receiver, token), CancellationToken.None))];
        }
        finally
        {
            _stateGate.Release();
        }
    }

    /// <summary>Stops receiving, waits for running handlers and closes the receive link (drain first, so this returns promptly).</summary>
    public virtual async Task StopProcessingAsync(CancellationToken cancellationToken = default)
    {
        await _stateGate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (_running is null)
            {
                return;
            }

            await _running.CancelAsync().ConfigureAwait(false);
            await Task.WhenAll(_loops).WaitAsync(cancellationToken).ConfigureAwait(false);
            _running.Dispose();
            _running = null;
            _loops = [];
            if (_receiver is not null)
            {
                await _receiver.CloseAsync(cancellationToken).ConfigureAwait(false);
                _receiver = null;
            }
        }
        finally
        {
            _stateGate.Release();
        }
    }

    public virtual async Task CloseAsync(CancellationToken cancellationToken = default)
    {
        if (IsClosed)
        {
            return;
        }

        await StopProcessingAsync(cancellationToken).ConfigureAwait(false);
        IsClosed = true;
    }

    public async ValueTask DisposeAsync()
    {
        await CloseAsync().ConfigureAwait(false);
        GC.SuppressFinalize(this);
    }

    private async Task ReceiveLoopAsync(ServiceBusReceiver receiver, CancellationToken stopping)
    {
        var wait = _options.MaxReceiveWaitTime ?? _client.Scope.Options.RetryOptions.TryTimeout;
        var failures = 0;
        while (!stopping.IsCancellationRequested)
        {
            IReadOnlyList<ServiceBusReceivedMessage> messages;
            try
            {
                messages = await receiver.ReceiveMessagesAsync(1, wait, stopping).ConfigureAwait(false);
                failures = 0;
            }
            catch (OperationCanceledException) when (stopping.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e)
            {
                await RaiseErrorAsync(e, ServiceBusErrorSource.Receive, stopping).ConfigureAwait(false);
                try
                {
                    await Task.Delay(TimeSpan.FromMilliseconds(Math.Min(5000, 100 * (1 << Math.Min(6, failures++)))), _client.Scope.Time, stopping).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }

                continue;
            }

            foreach (var message in messages)
            {
                await ProcessOneAsync(receiver, message, stopping).ConfigureAwait(false);
            }
        }
    }

    private async Task ProcessOneAsync(ServiceBusReceiver receiver, ServiceBusReceivedMessage message, CancellationToken stopping)
    {
        var peekLock = _options.ReceiveMode == ServiceBusReceiveMode.PeekLock;
        using var lockLost = CancellationTokenSource.CreateLinkedTokenSource(stopping);
        using var renewalStop = new CancellationTokenSource();
        var renewal = peekLock && _options.MaxAutoLockRenewalDuration > TimeSpan.Zero
            ? RenewLockAsync(receiver, message, lockLost, renewalStop.Token)
            : Task.CompletedTask;
        using var activity = ServiceBusTelemetry.Start(ServiceBusTelemetry.ProcessActivity, ActivityKind.Consumer, EntityPath, FullyQualifiedNamespace, "process",
            Transport.MessageConverter.ParentContext(message));
        activity?.SetTag(ServiceBusTelemetry.MessageIdAttribute, message.MessageId);
        activity?.SetTag(ServiceBusTelemetry.DeliveryCountAttribute, message.DeliveryCount);
        try
        {
            await _processMessage!(new ProcessMessageEventArgs(message, receiver, Identifier, lockLost.Token)).ConfigureAwait(false);
            if (peekLock && _options.AutoCompleteMessages && !message.IsSettled)
            {
                await StopRenewalAsync().ConfigureAwait(false);
                try
                {
                    await receiver.CompleteMessageAsync(message, CancellationToken.None).ConfigureAwait(false);
                }
                catch (Exception e)
                {
                    ServiceBusTelemetry.Fail(activity, e);
                    await RaiseErrorAsync(e, ServiceBusErrorSource.Complete, stopping).ConfigureAwait(false);
                }
            }
        }
        catch (Exception e)
        {
            ServiceBusTelemetry.Fail(activity, e);
            await RaiseErrorAsync(e, ServiceBusErrorSource.ProcessMessageCallback, stopping).ConfigureAwait(false);
            // A settled message, or one whose lock is gone, is not abandoned.
            if (peekLock && !message.IsSettled && !ServiceBusErrors.IsLockLost(e) && !lockLost.IsCancellationRequested)
            {
                await StopRenewalAsync().ConfigureAwait(false);
                try
                {
                    await receiver.AbandonMessageAsync(message, cancellationToken: CancellationToken.None).ConfigureAwait(false);
                }
                catch (Exception abandonError)
                {
                    await RaiseErrorAsync(abandonError, ServiceBusErrorSource.Abandon, stopping).ConfigureAwait(false);
                }
            }
        }
        finally
        {
            await StopRenewalAsync().ConfigureAwait(false);
        }

        async Task StopRenewalAsync()
        {
            await renewalStop.CancelAsync().ConfigureAwait(false);
            await renewal.ConfigureAwait(false);
        }
    }

    /// <summary>Renews the lock shortly before it expires until the handler ends or MaxAutoLockRenewalDuration passes.</summary>
    private async Task RenewLockAsync(ServiceBusReceiver receiver, ServiceBusReceivedMessage message, CancellationTokenSource lockLost, CancellationToken stop)
    {
        var time = _client.Scope.Time;
        var renewUntil = time.GetUtcNow() + _options.MaxAutoLockRenewalDuration;
        while (!stop.IsCancellationRequested)
        {
            var remaining = message.LockedUntil - time.GetUtcNow();
            var buffer = TimeSpan.FromTicks(Math.Min(remaining.Ticks / 2, MaximumRenewBuffer.Ticks));
            var delay = remaining < TimeSpan.FromMilliseconds(400) ? TimeSpan.Zero : remaining - buffer;
            if (time.GetUtcNow() + delay > renewUntil)
            {
                return;
            }

            try
            {
                await Task.Delay(delay, time, stop).ConfigureAwait(false);
                await receiver.RenewMessageLockAsync(message, stop).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e)
            {
                await RaiseErrorAsync(e, ServiceBusErrorSource.RenewLock, CancellationToken.None).ConfigureAwait(false);
                if (e is not ServiceBusException { IsTransient: true })
                {
                    if (ServiceBusErrors.IsLockLost(e))
                    {
                        await lockLost.CancelAsync().ConfigureAwait(false);
                    }

                    return;
                }
            }
        }
    }

    private async Task RaiseErrorAsync(Exception exception, ServiceBusErrorSource source, CancellationToken cancellationToken)
    {
        try
        {
            await _processError!(new ProcessErrorEventArgs(exception, source, FullyQualifiedNamespace, EntityPath, Identifier, cancellationToken)).ConfigureAwait(false);
        }
        catch (Exception handlerError) when (handlerError is not OutOfMemoryException)
        {
            // The SDK ignores failures of the error handler itself; so does this client.
            Trace.TraceError($"ProcessErrorAsync handler failed: {handlerError}");
        }
    }
}
