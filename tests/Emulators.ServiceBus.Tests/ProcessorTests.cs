using System.Collections.Concurrent;
using System.Diagnostics;
using DroneDelivery.ServiceBus;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

public sealed class ProcessorTests
{
    [Fact]
    public async Task Processor_exposes_its_effective_options()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = 20,
            PrefetchCount = 3000,
            AutoCompleteMessages = false,
            MaxAutoLockRenewalDuration = TimeSpan.FromMinutes(2),
        });

        Assert.Equal(20, processor.MaxConcurrentCalls);
        Assert.Equal(3000, processor.PrefetchCount);
        Assert.False(processor.AutoCompleteMessages);
        Assert.Equal(TimeSpan.FromMinutes(2), processor.MaxAutoLockRenewalDuration);
        Assert.Equal(ServiceBusReceiveMode.PeekLock, processor.ReceiveMode);
    }

    [Fact]
    public async Task Auto_lock_renewal_keeps_a_slow_handlers_lock_alive()
    {
        // The emulator and the client share one fake clock: the handler outlives its 3 s lock by
        // as much modelled time as the test chooses, however slow the machine.
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        // The client times much on its clock (try timeouts, receive waits, heartbeats); only a one-shot timer
        // of about half the 3 s lock is a renewal.
        var clientTime = new TimerCountingTimeProvider(time, (due, period) => period == Timeout.InfiniteTimeSpan && due > TimeSpan.FromSeconds(1) && due < TimeSpan.FromSeconds(2));
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(3) }, time: time);
        var options = EmulatorScope.Fast();
        options.TimeProvider = clientTime;
        await using var client = new ServiceBusClient(scope.Emulator.ConnectionString, options);
        await using var sender = client.CreateSender(EmulatorScope.Queue);
        await using var processor = client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions { MaxAutoLockRenewalDuration = TimeSpan.FromMinutes(1) });
        var errors = new ConcurrentQueue<ProcessErrorEventArgs>();
        var handled = 0;
        var entered = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        processor.ProcessMessageAsync += async args =>
        {
            entered.TrySetResult();
            await release.Task;
            Interlocked.Increment(ref handled);
        };
        processor.ProcessErrorAsync += args =>
        {
            errors.Enqueue(args);
            return Task.CompletedTask;
        };
        await sender.SendMessageAsync(new ServiceBusMessage("slow"));

        await processor.StartProcessingAsync();
        await entered.Task.WaitAsync(TimeSpan.FromSeconds(30));

        // Four times: once the processor waits for its next renewal, move the clock past it (1.6 s
        // of a 3 s lock, renewed at half its remaining time) and wait until the emulator renewed.
        for (var renewal = 1; renewal <= 4; renewal++)
        {
            var expected = renewal;
            Assert.True(await Eventually.TrueAsync(() => clientTime.TimersCreated >= expected, TimeSpan.FromSeconds(30)), $"the processor never scheduled renewal {expected}");
            time.Advance(TimeSpan.FromSeconds(1.6));
            Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Counters.LockRenewals >= expected, TimeSpan.FromSeconds(30)), $"renewal {expected} never reached the emulator");
        }

        release.SetResult();
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 1, TimeSpan.FromSeconds(30)));
        await processor.StopProcessingAsync();

        Assert.Empty(errors);
        Assert.Equal(1, handled);
        Assert.Equal(0, scope.Metrics.Counters.LockExpirations);
        Assert.Equal(1, scope.Metrics.Counters.OutgoingDeliveries);
        Assert.Equal(0, scope.Metrics.Counters.LockLostSettlements);
    }

    [Fact]
    public async Task Handler_failure_abandons_the_message_and_reports_the_error()
    {
        await using var scope = await EmulatorScope.StartAsync(q => q with { MaxDeliveryCount = 2 });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue);
        var sources = new ConcurrentQueue<ServiceBusErrorSource>();
        processor.ProcessMessageAsync += _ => throw new InvalidOperationException("backend down");
        processor.ProcessErrorAsync += args =>
        {
            sources.Enqueue(args.ErrorSource);
            return Task.CompletedTask;
        };
        await sender.SendMessageAsync(new ServiceBusMessage("fails"));

        await processor.StartProcessingAsync();
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.DeadLetterMessages == 1, TimeSpan.FromSeconds(30)));
        await processor.StopProcessingAsync();

        Assert.Equal(2, scope.Metrics.Counters.Abandoned);
        Assert.All(sources, s => Assert.Equal(ServiceBusErrorSource.ProcessMessageCallback, s));
    }

    [Fact]
    public async Task Stopping_an_idle_processor_returns_promptly()
    {
        // The client's clock never moves: a stop that waited for a receive call to time out would never
        // return, and the bound below would fail the test.
        await using var scope = await EmulatorScope.StartAsync();
        var options = new ServiceBusClientOptions { RetryOptions = new ServiceBusRetryOptions { TryTimeout = TimeSpan.FromSeconds(60) } };
        options.TimeProvider = new FakeTimeProvider(DateTimeOffset.UtcNow);
        var client = new ServiceBusClient(scope.Emulator.ConnectionString, options);
        await using var _ = client;
        await using var processor = client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions { MaxConcurrentCalls = 5 });
        processor.ProcessMessageAsync += _ => Task.CompletedTask;
        processor.ProcessErrorAsync += _ => Task.CompletedTask;
        await processor.StartProcessingAsync();

        // Once a message has been handled and completed, the processor is back waiting on an empty queue.
        await using (var sender = client.CreateSender(EmulatorScope.Queue))
        {
            await sender.SendMessageAsync(new ServiceBusMessage("one"));
        }

        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 1, TimeSpan.FromSeconds(30)));

        await processor.StopProcessingAsync().WaitAsync(TimeSpan.FromSeconds(30));

        Assert.False(processor.IsProcessing);
    }

    [Fact]
    public async Task Processor_continues_the_senders_trace()
    {
        await using var scope = await EmulatorScope.StartAsync();
        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name == ServiceBusTelemetry.SourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
        };
        ActivitySource.AddActivityListener(listener);
        var processed = new TaskCompletionSource<(string TraceId, string? Name)>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue);
        processor.ProcessMessageAsync += args =>
        {
            processed.TrySetResult((Activity.Current!.TraceId.ToString(), Activity.Current.OperationName));
            return Task.CompletedTask;
        };
        processor.ProcessErrorAsync += _ => Task.CompletedTask;
        using var request = new Activity("ingestion-request").Start();

        await sender.SendMessageAsync(new ServiceBusMessage("traced"));
        await processor.StartProcessingAsync();
        var (traceId, name) = await processed.Task.WaitAsync(TimeSpan.FromSeconds(30));
        await processor.StopProcessingAsync();

        Assert.Equal(request.TraceId.ToString(), traceId);
        Assert.Equal(ServiceBusTelemetry.ProcessActivity, name);
    }
}

/// <summary>A client's view of a shared fake clock that counts the timers the client starts (those <paramref name="counts"/> selects by due time and period).</summary>
internal sealed class TimerCountingTimeProvider(TimeProvider inner, Func<TimeSpan, TimeSpan, bool>? counts = null) : TimeProvider
{
    private int _timers;

    public int TimersCreated => Volatile.Read(ref _timers);

    public override DateTimeOffset GetUtcNow() => inner.GetUtcNow();

    public override long GetTimestamp() => inner.GetTimestamp();

    public override long TimestampFrequency => inner.TimestampFrequency;

    public override TimeZoneInfo LocalTimeZone => inner.LocalTimeZone;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        if (counts is null || counts(dueTime, period))
        {
            Interlocked.Increment(ref _timers);
        }

        return inner.CreateTimer(callback, state, dueTime, period);
    }
}
