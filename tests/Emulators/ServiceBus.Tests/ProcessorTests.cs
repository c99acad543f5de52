using System.Collections.Concurrent;
using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

public sealed class ProcessorTests
{
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
        // Receive calls wait up to the try timeout, five minutes here: a stop that waited for one to end would
        // outlast the bound below, which only catches such a hang.
        await using var scope = await EmulatorScope.StartAsync();
        var options = EmulatorScope.Fast();
        options.RetryOptions.TryTimeout = TimeSpan.FromMinutes(5);
        await using var client = new ServiceBusClient(scope.Emulator.ConnectionString, options);
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

        await processor.StopProcessingAsync().WaitAsync(TimeSpan.FromSeconds(60));

        Assert.False(processor.IsProcessing);
    }

    [Fact]
    public async Task Processor_continues_the_senders_trace()
    {
        // The SDK's spans, from its ActivitySources (the switch is on in this test project, as ServiceDefaults turns
        // it on in the services): sending stamps the message with the trace context, processing continues it.
        var queue = "traced-" + Guid.NewGuid().ToString("N");
        await using var scope = await EmulatorScope.StartAsync(q => q with { Name = queue });
        var spans = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name.StartsWith("Azure.Messaging.ServiceBus", StringComparison.Ordinal),
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = spans.Enqueue,
        };
        ActivitySource.AddActivityListener(listener);
        var processed = new TaskCompletionSource<(string TraceId, string? Name, ActivityKind Kind)>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var sender = scope.Client.CreateSender(queue);
        await using var processor = scope.Client.CreateProcessor(queue);
        processor.ProcessMessageAsync += args =>
        {
            processed.TrySetResult((Activity.Current!.TraceId.ToString(), Activity.Current.OperationName, Activity.Current.Kind));
            return Task.CompletedTask;
        };
        processor.ProcessErrorAsync += _ => Task.CompletedTask;
        string requestTrace;
        using (var request = new Activity("ingestion-request").Start())
        {
            requestTrace = request.TraceId.ToString();
            await sender.SendMessageAsync(new ServiceBusMessage("traced"));
        }

        await processor.StartProcessingAsync();
        var (traceId, name, kind) = await processed.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(await Eventually.TrueAsync(() => scope.Emulator.GetMetrics()[queue].Counters.Completed == 1, TimeSpan.FromSeconds(30)));
        await processor.StopProcessingAsync();

        Assert.Equal(requestTrace, traceId);
        Assert.Equal("ServiceBusProcessor.ProcessMessage", name);
        Assert.Equal(ActivityKind.Consumer, kind);
        var names = spans.Where(s => (string?)s.GetTagItem("messaging.destination.name") == queue).Select(s => s.OperationName).ToList();
        Assert.Contains("ServiceBusSender.Send", names);
        Assert.Contains("ServiceBusReceiver.Complete", names);
    }
}
