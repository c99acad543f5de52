using System.Collections.Concurrent;
using System.Diagnostics;
using DroneDelivery.ServiceBus;
using DroneDelivery.TestSupport;

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
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(3) });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions { MaxAutoLockRenewalDuration = TimeSpan.FromMinutes(1) });
        var errors = new ConcurrentQueue<ProcessErrorEventArgs>();
        var handled = 0;
        processor.ProcessMessageAsync += async args =>
        {
            await Task.Delay(7000);
            Interlocked.Increment(ref handled);
        };
        processor.ProcessErrorAsync += args =>
        {
            errors.Enqueue(args);
            return Task.CompletedTask;
        };
        await sender.SendMessageAsync(new ServiceBusMessage("slow"));

        await processor.StartProcessingAsync();
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Counters.Completed == 1, TimeSpan.FromSeconds(20)));
        await processor.StopProcessingAsync();

        Assert.Empty(errors);
        Assert.Equal(1, handled);
        Assert.True(scope.Metrics.Counters.LockRenewals >= 2, $"renewals: {scope.Metrics.Counters.LockRenewals}");
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
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.DeadLetterMessages == 1, TimeSpan.FromSeconds(10)));
        await processor.StopProcessingAsync();

        Assert.Equal(2, scope.Metrics.Counters.Abandoned);
        Assert.All(sources, s => Assert.Equal(ServiceBusErrorSource.ProcessMessageCallback, s));
    }

    [Fact]
    public async Task Stopping_an_idle_processor_returns_promptly()
    {
        await using var scope = await EmulatorScope.StartAsync();
        var client = new ServiceBusClient(scope.Emulator.ConnectionString, new ServiceBusClientOptions { RetryOptions = new ServiceBusRetryOptions { TryTimeout = TimeSpan.FromSeconds(60) } });
        await using var _ = client;
        await using var processor = client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions { MaxConcurrentCalls = 5 });
        processor.ProcessMessageAsync += _ => Task.CompletedTask;
        processor.ProcessErrorAsync += _ => Task.CompletedTask;
        await processor.StartProcessingAsync();
        await Task.Delay(500);

        var stopwatch = Stopwatch.StartNew();
        await processor.StopProcessingAsync();

        Assert.True(stopwatch.Elapsed < TimeSpan.FromSeconds(5), $"StopProcessingAsync took {stopwatch.Elapsed}");
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
        var (traceId, name) = await processed.Task.WaitAsync(TimeSpan.FromSeconds(10));
        await processor.StopProcessingAsync();

        Assert.Equal(request.TraceId.ToString(), traceId);
        Assert.Equal(ServiceBusTelemetry.ProcessActivity, name);
    }
}
