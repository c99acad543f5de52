using System.Text;
using Azure.Messaging.ServiceBus;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

public sealed class RoundTripTests
{
    [Fact]
    public async Task Sent_message_is_received_with_its_properties_and_broker_annotations_and_completes()
    {
        // A whole-second start, so the broker's millisecond timestamps are exact.
        var time = new FakeTimeProvider(DateTimeOffset.FromUnixTimeSeconds(DateTimeOffset.UtcNow.ToUnixTimeSeconds()));
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var message = new ServiceBusMessage("{\"deliveryId\":\"d-1\"}")
        {
            MessageId = "d-1",
            CorrelationId = "corr-1",
            Subject = "delivery",
            ContentType = "application/json",
            ApplicationProperties = { ["operation"] = "delivery", ["attempt"] = 3, ["when"] = new DateTime(2024, 5, 1, 12, 0, 0, DateTimeKind.Utc) },
        };
        await sender.SendMessageAsync(message);
        var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        Assert.NotNull(received);
        Assert.Equal("{\"deliveryId\":\"d-1\"}", received.Body.ToString());
        Assert.Equal("d-1", received.MessageId);
        Assert.Equal("corr-1", received.CorrelationId);
        Assert.Equal("delivery", received.Subject);
        Assert.Equal("application/json", received.ContentType);
        Assert.Equal("delivery", received.ApplicationProperties["operation"]);
        Assert.Equal(3, received.ApplicationProperties["attempt"]);
        Assert.Equal(new DateTime(2024, 5, 1, 12, 0, 0, DateTimeKind.Utc), received.ApplicationProperties["when"]);
        Assert.Equal(1, received.DeliveryCount);
        Assert.Equal(1, received.SequenceNumber);
        Assert.NotEqual(Guid.Empty.ToString(), received.LockToken);
        Assert.Equal(time.GetUtcNow(), received.EnqueuedTime);
        Assert.Equal(time.GetUtcNow().AddSeconds(30), received.LockedUntil);

        await receiver.CompleteMessageAsync(received);

        // A later marker comes next: the completed message is gone.
        await sender.SendMessageAsync(new ServiceBusMessage("marker"));
        var marker = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        Assert.Equal("marker", marker!.Body.ToString());
        await receiver.CompleteMessageAsync(marker);
        Assert.Equal(2, scope.Metrics.Counters.Completed);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Message_batch_respects_the_links_max_message_size_and_every_message_arrives()
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { MaxMessageSizeBytes = 16 * 1024 });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { PrefetchCount = 100 });
        using var batch = await sender.CreateMessageBatchAsync();
        var body = new string('x', 1000);
        var added = 0;
        while (batch.TryAddMessage(new ServiceBusMessage(body) { MessageId = $"m-{added}" }))
        {
            added++;
        }

        await sender.SendMessagesAsync(batch);
        var ids = new List<string>();
        while (ids.Count < added)
        {
            var messages = await receiver.ReceiveMessagesAsync(100, TimeSpan.FromSeconds(30));
            Assert.NotEmpty(messages);
            foreach (var m in messages)
            {
                ids.Add(m.MessageId!);
                await receiver.CompleteMessageAsync(m);
            }
        }

        Assert.Equal(16 * 1024, batch.MaxSizeInBytes);
        Assert.InRange(added, 10, 16);
        Assert.True(batch.SizeInBytes <= batch.MaxSizeInBytes);
        Assert.Equal(Enumerable.Range(0, added).Select(i => $"m-{i}"), ids);
        Assert.Equal(added, scope.Metrics.Counters.IncomingMessages);
    }

    [Fact]
    public async Task Sending_a_list_sends_one_batch_whose_messages_are_stored_separately()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });

        await sender.SendMessagesAsync(Enumerable.Range(0, 5).Select(i => new ServiceBusMessage($"body-{i}") { MessageId = i.ToString(System.Globalization.CultureInfo.InvariantCulture) }));

        var received = new List<ServiceBusReceivedMessage>();
        while (received.Count < 5)
        {
            received.AddRange(await receiver.ReceiveMessagesAsync(5, TimeSpan.FromSeconds(30)));
        }

        Assert.Equal(["0", "1", "2", "3", "4"], received.Select(m => m.MessageId));
        Assert.Equal([1L, 2, 3, 4, 5], received.Select(m => m.SequenceNumber));
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Message_larger_than_the_limit_fails_with_MessageSizeExceeded()
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { MaxMessageSizeBytes = 4096 });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);

        var error = await Assert.ThrowsAsync<ServiceBusException>(() => sender.SendMessageAsync(new ServiceBusMessage(new byte[10_000])));

        Assert.Equal(ServiceBusFailureReason.MessageSizeExceeded, error.Reason);
        Assert.Equal(0, scope.Metrics.Counters.IncomingMessages);
    }

    [Fact]
    public async Task Connection_string_with_localhost_reaches_the_emulator()
    {
        await using var scope = await EmulatorScope.StartAsync();
        var localhost = scope.Emulator.ConnectionString.Replace("sb://127.0.0.1", "sb://localhost", StringComparison.Ordinal);
        await using var client = EmulatorScope.CreateClient(localhost);
        await using var sender = client.CreateSender(EmulatorScope.Queue);

        await sender.SendMessageAsync(new ServiceBusMessage("via localhost"));

        Assert.Equal(1, scope.Metrics.Counters.IncomingMessages);
    }

    [Fact]
    public async Task Receive_and_delete_removes_the_message_on_delivery()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        await sender.SendMessageAsync(new ServiceBusMessage("gone"));

        var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        Assert.Equal("gone", received!.Body.ToString());
        Assert.Equal(Guid.Empty.ToString(), received.LockToken);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
        await Assert.ThrowsAsync<InvalidOperationException>(() => receiver.CompleteMessageAsync(received));
    }

    [Fact]
    public async Task Peek_returns_messages_in_order_without_locking_them()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessagesAsync([new ServiceBusMessage("a"), new ServiceBusMessage("b"), new ServiceBusMessage("c")]);

        var first = await receiver.PeekMessagesAsync(2);
        var rest = await receiver.PeekMessagesAsync(10);
        var none = await receiver.PeekMessagesAsync(10);
        var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(["a", "b"], first.Select(m => m.Body.ToString()));
        Assert.Equal(["c"], rest.Select(m => m.Body.ToString()));
        Assert.Empty(none);
        Assert.Equal(0, first[0].DeliveryCount);
        Assert.Equal("a", received!.Body.ToString());
        Assert.Equal(1, received.DeliveryCount);
    }

    [Fact]
    public async Task Deferred_message_is_received_again_only_by_sequence_number()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("later"));
        var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        await receiver.DeferMessageAsync(received!);
        // A later marker comes next: the deferred message, earlier in the queue, is not handed out.
        await sender.SendMessageAsync(new ServiceBusMessage("marker"));
        var next = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await receiver.CompleteMessageAsync(next!);
        var deferred = await receiver.ReceiveDeferredMessageAsync(received!.SequenceNumber);
        await receiver.CompleteMessageAsync(deferred);

        Assert.Equal("marker", next!.Body.ToString());
        Assert.Equal("later", deferred.Body.ToString());
        Assert.Equal(ServiceBusMessageState.Deferred, deferred.State);
        Assert.Equal(2, scope.Metrics.Counters.Completed);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Expired_message_moves_to_the_dead_letter_queue_when_configured()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(q => q with { DeadLetteringOnMessageExpiration = true }, time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });

        await sender.SendMessageAsync(new ServiceBusMessage("short-lived") { TimeToLive = TimeSpan.FromMinutes(5) });
        Assert.Equal(1, scope.Metrics.ActiveMessages);
        // Expired messages are swept once a second of the emulator's clock.
        time.Advance(TimeSpan.FromMinutes(5) + TimeSpan.FromSeconds(1));
        var deadLettered = await dlq.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        Assert.Equal("short-lived", deadLettered!.Body.ToString());
        Assert.Equal("TTLExpiredException", deadLettered.DeadLetterReason);
        Assert.Equal(1, scope.Metrics.Counters.ExpiredMessages);
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }
}
