using System.Diagnostics;
using System.Threading.Channels;
using Azure.Messaging.ServiceBus;
using DroneDelivery.ServiceClients.Messaging;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Ingestion;

/// <summary>The buffer is full: the request is refused rather than queued without bound.</summary>
public sealed class BufferFullException(int capacity) : Exception($"The send buffer holds its maximum of {capacity} messages.");

/// <summary>
/// Sends messages to the queue in batches: callers hand a message over and wait until the batch that
/// carries it has been sent (so a 202 always means "on the queue"). A batch is sent when it reaches
/// <c>Batching:MaxBatchSize</c> messages (or the queue's maximum message size), or when its first message
/// has waited <c>Batching:MaxBatchDelay</c> — whichever comes first. The buffer holds at most
/// <c>Batching:QueueCapacity</c> messages. On shutdown, buffered messages are still sent.
/// </summary>
public sealed partial class BatchingSender : BackgroundService
{
    private static readonly TimeSpan DrainTimeout = TimeSpan.FromSeconds(10);

    private readonly Channel<Pending> _buffer;
    private readonly ServiceBusSender _sender;
    private readonly BatchingSettings _settings;
    private readonly ILogger<BatchingSender> _logger;
    private readonly TimeProvider _time;
    private readonly IDisposable _gauge;

    public BatchingSender(ServiceBusClient client, IOptions<ServiceBusSettings> serviceBus, IOptions<BatchingSettings> batching, TimeProvider time, ILogger<BatchingSender> logger)
    {
        _settings = batching.Value;
        _logger = logger;
        _time = time;
        _sender = client.CreateSender(serviceBus.Value.QueueName);
        _buffer = Channel.CreateBounded<Pending>(new BoundedChannelOptions(_settings.QueueCapacity)
        {
            FullMode = BoundedChannelFullMode.Wait,
            SingleReader = true,
        });
        _gauge = IngestionTelemetry.ObserveBuffer(() => _buffer.Reader.Count);
    }

    /// <summary>The sender, for readiness checks.</summary>
    internal ServiceBusSender Sender => _sender;

    /// <summary>Buffers <paramref name="message"/> and completes once it has been sent.</summary>
    /// <exception cref="BufferFullException">The buffer is full.</exception>
    /// <exception cref="ServiceBusException">The send failed.</exception>
    public Task SendAsync(ServiceBusMessage message, CancellationToken cancellationToken)
    {
        var pending = new Pending(message, Activity.Current?.Context ?? default, _time.GetTimestamp());
        if (!_buffer.Writer.TryWrite(pending))
        {
            throw new BufferFullException(_settings.QueueCapacity);
        }

        return pending.Sent.Task.WaitAsync(cancellationToken);
    }

    public override void Dispose()
    {
        _gauge.Dispose();
        base.Dispose();
    }

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var batch = new List<Pending>(_settings.MaxBatchSize);
        try
        {
            while (await _buffer.Reader.WaitToReadAsync(stoppingToken).ConfigureAwait(false))
            {
                var flush = await CollectAsync(batch, stoppingToken).ConfigureAwait(false);
                await SendAsync(batch, flush).ConfigureAwait(false);
                batch.Clear();
            }
        }
        catch (OperationCanceledException) when (stoppingToken.IsCancellationRequested)
        {
            // Stopping: what was collected or is still buffered is sent below.
        }

        _buffer.Writer.TryComplete();
        using var drain = new CancellationTokenSource(DrainTimeout, _time);
        while (!drain.IsCancellationRequested && (batch.Count > 0 || _buffer.Reader.TryPeek(out _)))
        {
            while (batch.Count < _settings.MaxBatchSize && _buffer.Reader.TryRead(out var next))
            {
                batch.Add(next);
            }

            await SendAsync(batch, Flush.Shutdown).ConfigureAwait(false);
            batch.Clear();
        }

        var refused = new InvalidOperationException("Ingestion stopped before the message could be sent.");
        while (_buffer.Reader.TryRead(out var left))
        {
            left.Sent.TrySetException(refused);
        }

        await _sender.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Takes messages until the batch is full or its first message has waited MaxBatchDelay since it was
    /// handed over; says which. Messages already buffered when the delay ends still join the batch.
    /// </summary>
    private async Task<string> CollectAsync(List<Pending> batch, CancellationToken stoppingToken)
    {
        TakeBuffered(batch);
        if (batch.Count == 0)
        {
            return Flush.Delay;
        }

        if (batch.Count >= _settings.MaxBatchSize)
        {
            return Flush.Size;
        }

        // One timer per batch on the injected clock, due when the first message has waited MaxBatchDelay.
        var remaining = _time.GetElapsedTime(_time.GetTimestamp(), batch[0].HandedOver + (long)(_settings.MaxBatchDelay.TotalSeconds * _time.TimestampFrequency));
        if (remaining <= TimeSpan.Zero)
        {
            return Flush.Delay;
        }

        using var deadline = new CancellationTokenSource(remaining, _time);
        using var wait = CancellationTokenSource.CreateLinkedTokenSource(stoppingToken, deadline.Token);
        while (batch.Count < _settings.MaxBatchSize)
        {
            if (deadline.IsCancellationRequested)
            {
                TakeBuffered(batch);
                return batch.Count >= _settings.MaxBatchSize ? Flush.Size : Flush.Delay;
            }

            try
            {
                if (!await _buffer.Reader.WaitToReadAsync(wait.Token).ConfigureAwait(false))
                {
                    return Flush.Shutdown;
                }
            }
            catch (OperationCanceledException) when (!stoppingToken.IsCancellationRequested)
            {
                // The deadline: checked at the top of the loop.
                continue;
            }

            TakeBuffered(batch);
        }

        return Flush.Size;
    }

    private void TakeBuffered(List<Pending> batch)
    {
        while (batch.Count < _settings.MaxBatchSize && _buffer.Reader.TryRead(out var next))
        {
            batch.Add(next);
        }
    }

    /// <summary>Sends the collected messages in as few sends as the queue's message size allows, settling each caller.</summary>
    private async Task SendAsync(List<Pending> collected, string flush)
    {
        if (collected.Count == 0)
        {
            return;
        }

        using var activity = IngestionTelemetry.Source.StartActivity(
            ActivityKind.Internal,
            name: "send delivery requests",
            links: collected.Where(p => p.Context != default).Select(p => new ActivityLink(p.Context)));
        activity?.SetTag("messaging.batch.message_count", collected.Count);
        var inBatch = new List<Pending>(collected.Count);
        ServiceBusMessageBatch? batch = null;
        try
        {
            batch = await _sender.CreateMessageBatchAsync().ConfigureAwait(false);
            foreach (var pending in collected)
            {
                if (batch.TryAddMessage(pending.Message))
                {
                    inBatch.Add(pending);
                    continue;
                }

                if (batch.Count > 0)
                {
                    await SendBatchAsync(batch, inBatch, Flush.Bytes).ConfigureAwait(false);
                    batch.Dispose();
                    batch = await _sender.CreateMessageBatchAsync().ConfigureAwait(false);
                    if (batch.TryAddMessage(pending.Message))
                    {
                        inBatch.Add(pending);
                        continue;
                    }
                }

                pending.Sent.TrySetException(new ServiceBusException(
                    $"The message is larger than the queue accepts ({batch.MaxSizeInBytes} bytes).", ServiceBusFailureReason.MessageSizeExceeded));
            }

            await SendBatchAsync(batch, inBatch, flush).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            // Creating a batch failed (no link to the queue): nobody collected here has been sent.
            activity?.SetStatus(ActivityStatusCode.Error, e.Message);
            LogSendFailed(_logger, collected.Count, e.Message);
            foreach (var pending in collected)
            {
                pending.Sent.TrySetException(e);
            }
        }
        finally
        {
            batch?.Dispose();
        }
    }

    private async Task SendBatchAsync(ServiceBusMessageBatch batch, List<Pending> inBatch, string flush)
    {
        if (inBatch.Count == 0)
        {
            return;
        }

        var started = Stopwatch.GetTimestamp();
        var outcome = "success";
        try
        {
            await _sender.SendMessagesAsync(batch).ConfigureAwait(false);
            ServiceBusClientTelemetry.Record(MessageEvent.Sent, _sender.EntityPath, inBatch.Count);
            foreach (var pending in inBatch)
            {
                pending.Sent.TrySetResult();
            }
        }
        catch (Exception e)
        {
            outcome = "failure";
            LogSendFailed(_logger, inBatch.Count, e.Message);
            foreach (var pending in inBatch)
            {
                pending.Sent.TrySetException(e);
            }
        }
        finally
        {
            var queue = new KeyValuePair<string, object?>("messaging.destination.name", _sender.EntityPath);
            IngestionTelemetry.BatchSizes.Record(inBatch.Count, queue, new KeyValuePair<string, object?>("flush", flush));
            IngestionTelemetry.SendDurations.Record(Stopwatch.GetElapsedTime(started).TotalSeconds, queue, new KeyValuePair<string, object?>("outcome", outcome));
            inBatch.Clear();
        }
    }

    [LoggerMessage(EventId = 4300, EventName = "QueueSendFailed", Level = LogLevel.Warning, Message = "Sending {Count} delivery request messages failed: {Reason}")]
    private static partial void LogSendFailed(ILogger logger, int count, string reason);

    /// <summary>Why a batch was sent: the <c>flush</c> tag of <see cref="IngestionTelemetry.BatchSize"/>.</summary>
    internal static class Flush
    {
        /// <summary>MaxBatchSize messages were buffered.</summary>
        public const string Size = "size";

        /// <summary>The first message had waited MaxBatchDelay.</summary>
        public const string Delay = "delay";

        /// <summary>The next message would have exceeded the queue's maximum message size.</summary>
        public const string Bytes = "bytes";

        /// <summary>Ingestion is stopping.</summary>
        public const string Shutdown = "shutdown";
    }

    /// <summary>A message waiting to be sent, the request's trace context, when it was handed over, and the request waiting for it.</summary>
    private sealed class Pending(ServiceBusMessage message, ActivityContext context, long handedOver)
    {
        public ServiceBusMessage Message { get; } = message;

        public ActivityContext Context { get; } = context;

        /// <summary>Timestamp of the injected clock when the caller handed the message over.</summary>
        public long HandedOver { get; } = handedOver;

        public TaskCompletionSource Sent { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
