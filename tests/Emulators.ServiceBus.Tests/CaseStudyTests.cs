using System.Collections.Concurrent;
using DroneDelivery.ServiceBus;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Steps B4 and B5 of the tuning case study: MaxConcurrentCalls 20 and PrefetchCount 3000 against a slow handler.
/// With a 10-second lock, prefetched messages wait in the client's buffer while their locks expire; they are
/// delivered again (outgoing exceeds incoming), settlements fail with MessageLockLost and messages end in the
/// dead-letter queue. With a 5-minute lock every message completes.
/// </summary>
internal static class CaseStudy
{
    public const int Messages = 400;
    public static readonly TimeSpan HandlerTime = TimeSpan.FromSeconds(1);

    public static async Task<(EmulatorScope Scope, int LockLostErrors)> RunAsync(TimeSpan lockDuration)
    {
        var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = lockDuration, MaxDeliveryCount = 2 });
        await using (var sender = scope.Client.CreateSender(EmulatorScope.Queue))
        {
            for (var i = 0; i < Messages; i += 100)
            {
                await sender.SendMessagesAsync(Enumerable.Range(i, 100).Select(n => new ServiceBusMessage($"delivery-{n}") { MessageId = $"delivery-{n}" }));
            }
        }

        var lockLost = 0;
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = 20,
            PrefetchCount = 3000,
            AutoCompleteMessages = false,
        });
        processor.ProcessMessageAsync += async args =>
        {
            await Task.Delay(HandlerTime);
            await args.CompleteMessageAsync(args.Message);
        };
        processor.ProcessErrorAsync += args =>
        {
            if (args.Exception is ServiceBusException { Reason: ServiceBusFailureReason.MessageLockLost })
            {
                Interlocked.Increment(ref lockLost);
            }

            return Task.CompletedTask;
        };
        await processor.StartProcessingAsync();
        var settled = await Eventually.TrueAsync(
            () => scope.Metrics is var m && m.Counters.Completed + m.DeadLetterMessages == Messages && m.ActiveMessages == 0,
            TimeSpan.FromSeconds(60), TimeSpan.FromMilliseconds(200));
        await processor.StopProcessingAsync();
        Assert.True(settled, $"not settled: {scope.Metrics}");
        return (scope, lockLost);
    }
}

public sealed class CaseStudyB4Tests
{
    [Fact]
    public async Task Ten_second_lock_with_prefetch_3000_redelivers_loses_locks_and_dead_letters()
    {
        var (scope, lockLostErrors) = await CaseStudy.RunAsync(TimeSpan.FromSeconds(10));
        await using var _ = scope;
        var metrics = scope.Metrics;

        Assert.Equal(CaseStudy.Messages, metrics.Counters.IncomingMessages);
        Assert.True(metrics.Counters.OutgoingDeliveries > metrics.Counters.IncomingMessages, $"outgoing {metrics.Counters.OutgoingDeliveries}");
        Assert.True(metrics.Counters.LockLostSettlements > 0);
        Assert.True(lockLostErrors > 0);
        Assert.True(metrics.DeadLetteredByReason.GetValueOrDefault("MaxDeliveryCountExceeded") > 0, "no dead-letters");
        Assert.Equal(CaseStudy.Messages, metrics.Counters.Completed + metrics.DeadLetterMessages);
    }
}

public sealed class CaseStudyB5Tests
{
    [Fact]
    public async Task Five_minute_lock_completes_every_message_without_dead_letters()
    {
        var (scope, lockLostErrors) = await CaseStudy.RunAsync(TimeSpan.FromMinutes(5));
        await using var _ = scope;
        var metrics = scope.Metrics;

        Assert.Equal(CaseStudy.Messages, metrics.Counters.Completed);
        Assert.Equal(CaseStudy.Messages, metrics.Counters.OutgoingDeliveries);
        Assert.Equal(0, metrics.DeadLetterMessages);
        Assert.Equal(0, metrics.Counters.LockLostSettlements);
        Assert.Equal(0, lockLostErrors);
    }
}

public sealed class NoLossTests
{
    [Fact]
    public async Task Concurrent_senders_and_receivers_with_random_abandons_lose_and_duplicate_nothing()
    {
        const int total = 2000;
        await using var scope = await EmulatorScope.StartAsync(q => q with { MaxDeliveryCount = 4 });
        var completed = new ConcurrentDictionary<string, int>();
        // Sender s sends the ids n with n % 4 == s, 25 to a batch.
        var sends = Enumerable.Range(0, 4).Select(async s =>
        {
            await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
            var ids = Enumerable.Range(0, total).Where(n => n % 4 == s).ToList();
            foreach (var chunk in ids.Chunk(25))
            {
                await sender.SendMessagesAsync(chunk.Select(n => new ServiceBusMessage(n.ToString(System.Globalization.CultureInfo.InvariantCulture)) { MessageId = n.ToString(System.Globalization.CultureInfo.InvariantCulture) }));
            }
        });
        using var done = new CancellationTokenSource();
        var receives = Enumerable.Range(0, 4).Select(async r =>
        {
            await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { PrefetchCount = r * 10 });
            var random = new Random(r);
            while (!done.IsCancellationRequested)
            {
                var messages = await receiver.ReceiveMessagesAsync(20, TimeSpan.FromMilliseconds(200));
                foreach (var message in messages)
                {
                    if (random.NextDouble() < 0.3)
                    {
                        await receiver.AbandonMessageAsync(message);
                    }
                    else
                    {
                        await receiver.CompleteMessageAsync(message);
                        completed.AddOrUpdate(message.MessageId!, 1, (_, n) => n + 1);
                    }
                }
            }
        }).ToList();

        await Task.WhenAll(sends);
        var drained = await Eventually.TrueAsync(() => completed.Count + scope.Metrics.DeadLetterMessages >= total && scope.Metrics.ActiveMessages == 0, TimeSpan.FromSeconds(60));
        await done.CancelAsync();
        await Task.WhenAll(receives);

        var metrics = scope.Metrics;
        Assert.True(drained, $"completed {completed.Count}, dead-lettered {metrics.DeadLetterMessages}");
        Assert.Equal(total, metrics.Counters.IncomingMessages);
        Assert.All(completed.Values, count => Assert.Equal(1, count));
        Assert.Equal(total, completed.Count + metrics.DeadLetterMessages);
        Assert.Equal(completed.Count, metrics.Counters.Completed);
        Assert.True(metrics.Counters.Abandoned > 0);
    }
}
