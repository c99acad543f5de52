using Azure.Messaging.ServiceBus;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

public sealed class LockAndDeadLetterTests
{
    [Fact]
    public async Task Abandoned_message_comes_back_with_its_delivery_count_up()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("retry me"));

        var first = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await receiver.AbandonMessageAsync(first!, new Dictionary<string, object> { ["lastError"] = "timeout" });
        var second = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(1, first!.DeliveryCount);
        Assert.Equal(2, second!.DeliveryCount);
        Assert.Equal(first.SequenceNumber, second.SequenceNumber);
        Assert.NotEqual(first.LockToken, second.LockToken);
        Assert.Equal("timeout", second.ApplicationProperties["lastError"]);
        Assert.Equal(1, scope.Metrics.Counters.Abandoned);
        Assert.Equal(2, scope.Metrics.Counters.OutgoingDeliveries);
    }

    [Fact]
    public async Task Dead_lettered_message_lands_in_the_dead_letter_queue_with_reason_and_description()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        await sender.SendMessageAsync(new ServiceBusMessage("poison") { MessageId = "p-1" });

        var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await receiver.DeadLetterMessageAsync(received!, "InvalidPayload", "deliveryId is missing");
        var deadLettered = await dlq.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await dlq.CompleteMessageAsync(deadLettered!);

        Assert.Equal("p-1", deadLettered!.MessageId);
        Assert.Equal("InvalidPayload", deadLettered.DeadLetterReason);
        Assert.Equal("deliveryId is missing", deadLettered.DeadLetterErrorDescription);
        Assert.Equal(EmulatorScope.Queue, deadLettered.DeadLetterSource);
        Assert.Equal(received!.SequenceNumber, deadLettered.SequenceNumber);
        Assert.Equal(1, scope.Metrics.DeadLetteredByReason["InvalidPayload"]);
        Assert.Equal(0, scope.Metrics.DeadLetterMessages);
    }

    [Fact]
    public async Task Message_delivered_more_than_MaxDeliveryCount_times_moves_to_the_dead_letter_queue()
    {
        await using var scope = await EmulatorScope.StartAsync(q => q with { MaxDeliveryCount = 3 });
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await using var dlq = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        await sender.SendMessageAsync(new ServiceBusMessage("never works"));

        for (var attempt = 1; attempt <= 3; attempt++)
        {
            var message = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
            Assert.Equal(attempt, message!.DeliveryCount);
            await receiver.AbandonMessageAsync(message);
        }

        // A later marker comes next: the abandoned message, earlier in the queue, is no longer in it.
        await sender.SendMessageAsync(new ServiceBusMessage("marker"));
        var next = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        var deadLettered = await dlq.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        Assert.Equal("marker", next!.Body.ToString());
        Assert.Equal("MaxDeliveryCountExceeded", deadLettered!.DeadLetterReason);
        Assert.Equal("Message could not be consumed after 3 delivery attempts.", deadLettered.DeadLetterErrorDescription);
        Assert.Equal(1, scope.Metrics.DeadLetteredByReason["MaxDeliveryCountExceeded"]);
    }

    [Fact]
    public async Task Expired_lock_redelivers_the_message_and_settling_with_the_old_lock_fails_with_MessageLockLost()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(1) }, time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("slow"));

        var first = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        time.Advance(TimeSpan.FromSeconds(1.5));
        var second = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        var error = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(first!));
        await receiver.CompleteMessageAsync(second!);

        Assert.Equal(ServiceBusFailureReason.MessageLockLost, error.Reason);
        Assert.False(error.IsTransient);
        Assert.Equal(2, second!.DeliveryCount);
        Assert.Equal(1, scope.Metrics.Counters.LockLostSettlements);
        Assert.Equal(1, scope.Metrics.Counters.LockExpirations);
        Assert.Equal(1, scope.Metrics.Counters.Completed);
    }

    [Fact]
    public async Task Renewing_the_lock_keeps_the_message_past_its_original_expiry()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(3) }, time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("long job"));
        var message = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        var original = message!.LockedUntil;

        time.Advance(TimeSpan.FromSeconds(2));
        await receiver.RenewMessageLockAsync(message);
        time.Advance(TimeSpan.FromSeconds(2));
        await receiver.CompleteMessageAsync(message);

        Assert.Equal(original.AddSeconds(2), message.LockedUntil);
        Assert.Equal(1, scope.Metrics.Counters.LockRenewals);
        Assert.Equal(0, scope.Metrics.Counters.LockExpirations);
        Assert.Equal(1, scope.Metrics.Counters.OutgoingDeliveries);
    }

    [Fact]
    public async Task Renewing_an_expired_lock_fails_with_MessageLockLost()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(1) }, time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("late"));
        var message = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));

        time.Advance(TimeSpan.FromSeconds(1.3));
        var error = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.RenewMessageLockAsync(message!));

        Assert.Equal(ServiceBusFailureReason.MessageLockLost, error.Reason);
    }
}
