using System.Collections.Concurrent;
using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using DroneDelivery.TestSupport;

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
    public async Task Each_operation_is_a_span_named_as_the_sdk_names_it_and_tagged_with_the_queue()
    {
        // The names docs/observability.md and the case study's queries use ("Complete" calls per 5 s, ...). Listeners
        // are process-wide and tests run in parallel: a queue of its own keeps other tests' spans out.
        var queue = "telemetry-" + Guid.NewGuid().ToString("N");
        await using var scope = await EmulatorScope.StartAsync(q => q with { Name = queue });
        var spans = new ConcurrentQueue<Activity>();
        using var listener = new ActivityListener
        {
            ShouldListenTo = s => s.Name.StartsWith("Azure.Messaging.ServiceBus", StringComparison.Ordinal),
            Sample = (ref ActivityCreationOptions<ActivityContext> _) => ActivitySamplingResult.AllDataAndRecorded,
            ActivityStopped = spans.Enqueue,
        };
        ActivitySource.AddActivityListener(listener);
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

        var names = spans.Where(s => (string?)s.GetTagItem("messaging.destination.name") == queue).Select(s => s.OperationName).ToList();
        Assert.Contains("ServiceBusSender.Send", names);
        Assert.Contains("ServiceBusReceiver.Receive", names);
        Assert.Single(names, "ServiceBusReceiver.Complete");
        Assert.Single(names, "ServiceBusReceiver.Abandon");
        Assert.Single(names, "ServiceBusReceiver.DeadLetter");
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

        // The credit left by the timed-out calls is one message's worth, not ten: the broker hands out what credit
        // allows as the batch arrives, so one delivery with all five stored is a state piled-up credit never passes
        // through. (Without prefetch the SDK releases a message that arrives after its receive call ended, so the
        // one delivered may already be back in the queue, unlocked.)
        Assert.True(await Eventually.TrueAsync(() => scope.Metrics is { ActiveMessages: 5, Counters.OutgoingDeliveries: 1 }, TimeSpan.FromSeconds(30)), $"{scope.Metrics}");
        Assert.Equal(1, scope.Metrics.Counters.OutgoingDeliveries);
        var received = await receiver.ReceiveMessagesAsync(5, TimeSpan.FromSeconds(30));
        Assert.Equal("m0", received[0].Body.ToString());
    }
}
