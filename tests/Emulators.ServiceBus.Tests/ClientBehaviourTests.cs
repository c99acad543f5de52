using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using DroneDelivery.ServiceBus;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

public sealed class ClientBehaviourTests
{
    [Fact]
    public async Task Closing_a_receiver_releases_its_prefetched_messages_without_counting_a_delivery()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessagesAsync(Enumerable.Range(0, 5).Select(i => new ServiceBusMessage($"m{i}")));
        var prefetching = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { PrefetchCount = 10 });
        var first = await prefetching.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await prefetching.CompleteMessageAsync(first!);
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.LockedMessages == 4, TimeSpan.FromSeconds(30)));

        await prefetching.DisposeAsync();
        await using var next = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var rest = new List<ServiceBusReceivedMessage>();
        while (rest.Count < 4)
        {
            rest.AddRange(await next.ReceiveMessagesAsync(4, TimeSpan.FromSeconds(30)));
        }

        Assert.Equal(["m1", "m2", "m3", "m4"], rest.Select(m => m.Body.ToString()));
        Assert.All(rest, m => Assert.Equal(1, m.DeliveryCount));
    }

    [Fact]
    public async Task Client_emits_spans_named_like_the_sdks_and_counts_what_it_did()
    {
        // Listeners are process-wide and tests run in parallel: a queue of its own keeps other tests' telemetry out.
        var queue = "telemetry-" + Guid.NewGuid().ToString("N");
        await using var scope = await EmulatorScope.StartAsync(q => q with { Name = queue });
        var spans = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name == ServiceBusTelemetry.SourceName,
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = spans.Enqueue,
        };
        ActivitySource.AddActivityListener(listener);
        var counts = new ConcurrentDictionary<string, long>();
        using var meter = new MeterListener();
        meter.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == ServiceBusTelemetry.SourceName)
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        meter.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            if (tags.ToArray().Any(t => t.Key == ServiceBusTelemetry.DestinationAttribute && (string?)t.Value == queue))
            {
                counts.AddOrUpdate(instrument.Name, value, (_, n) => n + value);
            }
        });
        meter.Start();
        await using var sender = scope.Client.CreateSender(queue);
        await using var receiver = scope.Client.CreateReceiver(queue);

        await sender.SendMessagesAsync([new ServiceBusMessage("a"), new ServiceBusMessage("b")]);
        var messages = new List<ServiceBusReceivedMessage>();
        while (messages.Count < 2)
        {
            messages.AddRange(await receiver.ReceiveMessagesAsync(2, TimeSpan.FromSeconds(30)));
        }

        await receiver.CompleteMessageAsync(messages[0]);
        await receiver.AbandonMessageAsync(messages[1]);
        var again = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await receiver.DeadLetterMessageAsync(again!, "bad", "worse");

        var names = spans.Where(s => (string?)s.GetTagItem(ServiceBusTelemetry.DestinationAttribute) == queue).Select(s => s.OperationName).ToList();
        Assert.Contains(ServiceBusTelemetry.SendActivity, names);
        Assert.Contains(ServiceBusTelemetry.ReceiveActivity, names);
        Assert.Single(names, ServiceBusTelemetry.CompleteActivity);
        Assert.Contains(ServiceBusTelemetry.AbandonActivity, names);
        Assert.Contains(ServiceBusTelemetry.DeadLetterActivity, names);
        Assert.Equal(2, counts[ServiceBusTelemetry.MessagesSentCounter]);
        Assert.Equal(3, counts[ServiceBusTelemetry.MessagesReceivedCounter]);
        Assert.Equal(1, counts[ServiceBusTelemetry.MessagesCompletedCounter]);
        Assert.Equal(1, counts[ServiceBusTelemetry.MessagesAbandonedCounter]);
        Assert.Equal(1, counts[ServiceBusTelemetry.MessagesDeadLetteredCounter]);
    }

    [Fact]
    public async Task Lock_lost_settlements_and_renewals_are_counted()
    {
        var queue = "telemetry-" + Guid.NewGuid().ToString("N");
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(q => q with { Name = queue, LockDuration = TimeSpan.FromSeconds(1) }, time: time);
        var counts = new ConcurrentDictionary<string, long>();
        using var meter = new MeterListener();
        meter.InstrumentPublished = (instrument, l) =>
        {
            if (instrument.Meter.Name == ServiceBusTelemetry.SourceName)
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        meter.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            if (tags.ToArray().Any(t => (string?)t.Value == queue))
            {
                counts.AddOrUpdate(instrument.Name, value, (_, n) => n + value);
            }
        });
        meter.Start();
        await using var sender = scope.Client.CreateSender(queue);
        await using var receiver = scope.Client.CreateReceiver(queue);
        await sender.SendMessageAsync(new ServiceBusMessage("x"));
        var message = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        await receiver.RenewMessageLockAsync(message!);
        time.Advance(TimeSpan.FromSeconds(1.3));
        await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(message!));

        Assert.Equal(1, counts[ServiceBusTelemetry.LockRenewalsCounter]);
        Assert.Equal(1, counts[ServiceBusTelemetry.LockLostCounter]);
    }

    [Fact]
    public async Task Receive_calls_that_time_out_do_not_pile_up_credit()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        for (var i = 0; i < 10; i++)
        {
            Assert.Null(await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(50)));
        }

        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessagesAsync(Enumerable.Range(0, 5).Select(i => new ServiceBusMessage($"m{i}")));

        // The credit left by the timed-out calls is one message's worth, not ten. The broker hands
        // out what credit allows as messages arrive, so "all five stored, one locked" is a state
        // that piled-up credit never passes through.
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 5, LockedMessages: 1 }, TimeSpan.FromSeconds(30)), $"{scope.Metrics}");
        Assert.Equal(1, scope.Metrics.Counters.OutgoingDeliveries);
        Assert.Equal(1, scope.Metrics.LockedMessages);
        var received = await receiver.ReceiveMessagesAsync(5, TimeSpan.FromSeconds(30));
        Assert.Equal("m0", received[0].Body.ToString());
    }

    [Fact]
    public void Connection_string_parsing_recognises_the_development_emulator()
    {
        var properties = ServiceBusConnectionStringProperties.Parse("Endpoint=sb://localhost:5672;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;");
        var azure = ServiceBusConnectionStringProperties.Parse("Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=orders");

        Assert.True(properties.UseDevelopmentEmulator);
        Assert.Equal(5672, properties.Endpoint.Port);
        Assert.False(azure.UseDevelopmentEmulator);
        Assert.Equal("orders", azure.EntityPath);
        Assert.Equal("contoso.servicebus.windows.net", azure.FullyQualifiedNamespace);
        Assert.Throws<FormatException>(() => ServiceBusConnectionStringProperties.Parse("Endpoint=sb://x;SharedAccessKeyName=k"));
    }
}
