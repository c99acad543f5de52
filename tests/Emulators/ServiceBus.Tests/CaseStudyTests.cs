using System.Collections.Concurrent;
using Azure.Messaging.ServiceBus;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Steps B4 and B5 of the tuning case study: MaxConcurrentCalls 20 and PrefetchCount 3000 against a 1-second handler,
/// with the official SDK's processor. With a 10-second lock, prefetched messages wait in the SDK's buffer while their
/// locks expire; they are delivered again (outgoing exceeds incoming), settlements fail with MessageLockLost and
/// messages end in the dead-letter queue. With a 5-minute lock every message completes.
/// </summary>
/// <remarks>
/// Time is modelled, not waited for: the emulator runs on a fake clock (locks are the broker's), and the handler's
/// second of work is a wait on a second fake clock of the test's. The SDK itself runs in real time: nothing it times
/// decides the outcome (no lock renewal, and its buffer is full from the start). The test moves the handlers' clock one
/// second at a time (handlers finish and settle, the next messages are taken from the buffer), then the emulator's
/// (locks that ran out expire), and before each move waits until the previous one has been fully acted on. So the run
/// is the same on any machine, however slow. Automatic lock renewal is off: it extends only the locks of messages
/// already in a handler, and the effect shown is on messages that wait in the prefetch buffer.
/// </remarks>
internal static class CaseStudy
{
    public const int Messages = 400;
    public const int Concurrency = 20;
    public static readonly TimeSpan HandlerTime = TimeSpan.FromSeconds(1);

    public static async Task<(EmulatorScope Scope, int LockLostErrors)> RunAsync(TimeSpan lockDuration)
    {
        var start = DateTimeOffset.FromUnixTimeMilliseconds(DateTimeOffset.UtcNow.ToUnixTimeMilliseconds());
        var emulatorTime = new FakeTimeProvider(start);
        var handlerTime = new FakeTimeProvider(start);
        var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = lockDuration, MaxDeliveryCount = 2 }, time: emulatorTime);
        await using (var sender = scope.Client.CreateSender(EmulatorScope.Queue))
        {
            for (var i = 0; i < Messages; i += 100)
            {
                await sender.SendMessagesAsync(Enumerable.Range(i, 100).Select(n => new ServiceBusMessage($"delivery-{n}") { MessageId = $"delivery-{n}" }));
            }
        }

        var lockLost = 0;
        var running = 0;
        var waiting = 0;
        await using var processor = scope.Client.CreateProcessor(EmulatorScope.Queue, new ServiceBusProcessorOptions
        {
            MaxConcurrentCalls = Concurrency,
            PrefetchCount = 3000,
            AutoCompleteMessages = false,
            MaxAutoLockRenewalDuration = TimeSpan.Zero,
        });
        processor.ProcessMessageAsync += async args =>
        {
            Interlocked.Increment(ref running);
            try
            {
                // The handler's timer exists before it counts as waiting, so a move of the clock cannot miss it.
                var work = Task.Delay(HandlerTime, handlerTime, args.CancellationToken);
                Interlocked.Increment(ref waiting);
                try
                {
                    await work;
                }
                finally
                {
                    Interlocked.Decrement(ref waiting);
                }

                await args.CompleteMessageAsync(args.Message);
            }
            finally
            {
                Interlocked.Decrement(ref running);
            }
        };
        processor.ProcessErrorAsync += args =>
        {
            if (args.Exception is ServiceBusException { Reason: ServiceBusFailureReason.MessageLockLost })
            {
                Interlocked.Increment(ref lockLost);
            }

            return Task.CompletedTask;
        };

        bool Settled() => scope.Metrics is var m && m.Counters.Completed + m.DeadLetterMessages == Messages && m.ActiveMessages == 0;

        // Every handler is waiting on the clock (none is settling), and all loops have one unless the run is over.
        async Task QuietAsync(string when)
        {
            var quiet = await Eventually.TrueAsync(
                () => Volatile.Read(ref waiting) == Volatile.Read(ref running) && (Volatile.Read(ref waiting) == Concurrency || Settled()),
                TimeSpan.FromSeconds(60));
            Assert.True(quiet, $"{when}: {running} handlers running, {waiting} waiting; {scope.Metrics}");
        }

        await processor.StartProcessingAsync();
        var samples = scope.Metrics.Series.Count;
        for (var second = 1; !Settled(); second++)
        {
            Assert.True(second <= 60, $"not settled after {second - 1} modelled seconds: {scope.Metrics}");
            await QuietAsync($"before second {second}");
            handlerTime.Advance(TimeSpan.FromSeconds(1));
            await QuietAsync($"handlers at second {second}");
            emulatorTime.Advance(TimeSpan.FromSeconds(1));
            // The emulator samples its metrics once a modelled second, after the sweep that expires locks.
            var before = samples;
            Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Series.Count > before, TimeSpan.FromSeconds(60)), $"the emulator never swept at second {second}");
            samples = scope.Metrics.Series.Count;
        }

        // Handlers still waiting on the clock end with the processor's cancellation.
        await processor.StopProcessingAsync().WaitAsync(TimeSpan.FromSeconds(60));
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

        // Modelled time makes the run exact. Seconds 1-10: 20 handlers a second complete 200 messages; at 10 s the
        // other 200 locks run out in the buffer and those messages come again. Seconds 11-20: the handlers work
        // through the 200 stale copies, every settlement lost; at 20 s the second locks run out too and, at the
        // maximum delivery count of 2, the 200 messages are dead-lettered.
        var summary = $"completed {metrics.Counters.Completed}, dead-lettered {metrics.DeadLetterMessages}, outgoing {metrics.Counters.OutgoingDeliveries}, " +
            $"lock expirations {metrics.Counters.LockExpirations}, lock-lost settlements {metrics.Counters.LockLostSettlements}, lock-lost errors {lockLostErrors}";
        Assert.True(
            metrics.Counters.Completed == 200 && metrics.DeadLetterMessages == 200 && metrics.Counters.OutgoingDeliveries == 600 &&
            metrics.Counters.LockExpirations == 400 && metrics.Counters.LockLostSettlements == 200 && lockLostErrors == 200,
            summary);
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
