using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.Lab.Measurement;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Scheduled messages: stored at once with a sequence number, invisible to receivers until their time on the
/// emulator's clock (a fake one here), then enqueued as if sent at that moment. Absence is shown by order:
/// a marker sent after a scheduled message is received first.
/// </summary>
public sealed class ScheduledMessageTests
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    // A whole-second start, so the broker's millisecond timestamps compare exactly.
    private static FakeTimeProvider Clock() => new(DateTimeOffset.FromUnixTimeSeconds(DateTimeOffset.UtcNow.ToUnixTimeSeconds()));

    [Fact]
    public async Task Message_sent_with_a_scheduled_enqueue_time_is_peeked_as_scheduled_and_received_only_after_that_time()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var at = time.GetUtcNow().AddMinutes(5);

        await sender.SendMessageAsync(new ServiceBusMessage("later") { MessageId = "later", ScheduledEnqueueTime = at });
        await sender.SendMessageAsync(new ServiceBusMessage("marker"));
        var first = await receiver.ReceiveMessageAsync(Wait);
        await receiver.CompleteMessageAsync(first!);
        var peeked = await receiver.PeekMessagesAsync(10, fromSequenceNumber: 1);
        var before = scope.Metrics;

        time.Advance(TimeSpan.FromMinutes(5));
        var later = await receiver.ReceiveMessageAsync(Wait);
        await receiver.CompleteMessageAsync(later!);
        var after = scope.Metrics;

        Assert.Equal("marker", first!.Body.ToString());
        var scheduled = Assert.Single(peeked);
        Assert.Equal("later", scheduled.Body.ToString());
        Assert.Equal(ServiceBusMessageState.Scheduled, scheduled.State);
        Assert.Equal(1, scheduled.SequenceNumber);
        Assert.Equal(at, scheduled.ScheduledEnqueueTime);
        Assert.Equal(1, before.ScheduledMessages);
        Assert.Equal(0, before.ActiveMessages);

        Assert.Equal("later", later!.Body.ToString());
        Assert.Equal("later", later.MessageId);
        Assert.Equal(ServiceBusMessageState.Active, later.State);
        Assert.Equal(at, later.ScheduledEnqueueTime);
        Assert.Equal(at, later.EnqueuedTime);

        // Enqueued as if sent at its time: a new sequence number, after the marker's.
        Assert.True(later.SequenceNumber > first.SequenceNumber, $"{later.SequenceNumber} <= {first.SequenceNumber}");
        Assert.Equal(0, after.ScheduledMessages);
        Assert.Equal(2, after.Counters.IncomingMessages);
        Assert.Equal(2, after.Counters.Completed);
    }

    [Fact]
    public async Task ScheduleMessagesAsync_returns_a_sequence_number_per_message_and_they_arrive_in_order_after_their_time()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var at = time.GetUtcNow().AddHours(1);

        var pair = await sender.ScheduleMessagesAsync([new ServiceBusMessage("s1"), new ServiceBusMessage("s2")], at);
        var single = await sender.ScheduleMessageAsync(new ServiceBusMessage("s3") { MessageId = "s-3" }, at);
        await sender.SendMessageAsync(new ServiceBusMessage("marker"));
        var first = await receiver.ReceiveMessageAsync(Wait);
        var peeked = await receiver.PeekMessageAsync(single);
        var scheduledCount = scope.Metrics.ScheduledMessages;

        time.Advance(TimeSpan.FromHours(1));
        var arrived = new List<ServiceBusReceivedMessage>();
        while (arrived.Count < 3)
        {
            var page = await receiver.ReceiveMessagesAsync(3 - arrived.Count, Wait);
            Assert.NotEmpty(page);
            arrived.AddRange(page);
        }

        Assert.Equal(new long[] { 1, 2 }, pair);
        Assert.Equal(3, single);
        Assert.Equal("marker", first!.Body.ToString());
        Assert.Equal(4, first.SequenceNumber);
        Assert.Equal(3, scheduledCount);
        Assert.NotNull(peeked);
        Assert.Equal("s-3", peeked.MessageId);
        Assert.Equal(ServiceBusMessageState.Scheduled, peeked.State);
        Assert.Equal(at, peeked.ScheduledEnqueueTime);
        Assert.Equal(new[] { "s1", "s2", "s3" }, arrived.Select(m => m.Body.ToString()));
        Assert.All(arrived, m => Assert.Equal(at, m.ScheduledEnqueueTime));
        Assert.All(arrived, m => Assert.False(string.IsNullOrEmpty(m.MessageId)));
        Assert.Equal(0, scope.Metrics.ScheduledMessages);
    }

    [Fact]
    public async Task Cancelled_scheduled_message_is_gone_from_peek_and_never_delivered()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var at = time.GetUtcNow().AddMinutes(1);
        var cancelled = await sender.ScheduleMessageAsync(new ServiceBusMessage("cancel me"), at);
        var kept = await sender.ScheduleMessageAsync(new ServiceBusMessage("keep me"), at);

        await sender.CancelScheduledMessageAsync(cancelled);
        var peeked = await receiver.PeekMessagesAsync(10, fromSequenceNumber: 1);
        var scheduledCount = scope.Metrics.ScheduledMessages;
        time.Advance(TimeSpan.FromMinutes(1));
        await sender.SendMessageAsync(new ServiceBusMessage("marker"));
        var first = await receiver.ReceiveMessageAsync(Wait);
        var second = await receiver.ReceiveMessageAsync(Wait);

        Assert.Equal(kept, Assert.Single(peeked).SequenceNumber);
        Assert.Equal(1, scheduledCount);

        // Had the cancelled message been enqueued it would come before the marker.
        Assert.Equal("keep me", first!.Body.ToString());
        Assert.Equal("marker", second!.Body.ToString());
        Assert.Equal(0, scope.Metrics.ActiveMessages);
    }

    [Fact]
    public async Task Cancelling_a_number_that_is_not_scheduled_fails_with_MessageNotFound_and_cancels_nothing()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var scheduled = await sender.ScheduleMessageAsync(new ServiceBusMessage("scheduled"), time.GetUtcNow().AddMinutes(1));
        await sender.SendMessageAsync(new ServiceBusMessage("active"));

        var unknown = await Assert.ThrowsAsync<ServiceBusException>(() => sender.CancelScheduledMessagesAsync([scheduled, 999]));
        var enqueued = await Assert.ThrowsAsync<ServiceBusException>(() => sender.CancelScheduledMessageAsync(scheduled + 1));
        var stillScheduled = await receiver.PeekMessageAsync(scheduled);

        Assert.Equal(ServiceBusFailureReason.MessageNotFound, unknown.Reason);
        Assert.Equal(ServiceBusFailureReason.MessageNotFound, enqueued.Reason);
        Assert.Equal(ServiceBusMessageState.Scheduled, stillScheduled!.State);
        Assert.Equal(scheduled, stillScheduled.SequenceNumber);
        Assert.Equal(1, scope.Metrics.ScheduledMessages);
    }

    [Fact]
    public async Task Time_to_live_of_a_scheduled_message_counts_from_its_enqueue_time()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var at = time.GetUtcNow().AddMinutes(10);
        await sender.ScheduleMessageAsync(new ServiceBusMessage("short-lived") { TimeToLive = TimeSpan.FromMinutes(1) }, at);

        // Well past send time + TTL, but only just past the enqueue time.
        time.Advance(TimeSpan.FromMinutes(10));
        var received = await receiver.ReceiveMessageAsync(Wait);

        Assert.Equal("short-lived", received!.Body.ToString());
        Assert.Equal(at.AddMinutes(1), received.ExpiresAt);
        Assert.Equal(0, scope.Metrics.Counters.ExpiredMessages);
    }

    [Fact]
    public async Task Scheduled_enqueue_time_already_past_enqueues_the_message_at_once()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);

        await sender.SendMessageAsync(new ServiceBusMessage("overdue") { ScheduledEnqueueTime = time.GetUtcNow().AddMinutes(-1) });
        var received = await receiver.ReceiveMessageAsync(Wait);

        Assert.Equal("overdue", received!.Body.ToString());
        Assert.Equal(ServiceBusMessageState.Active, received.State);
        Assert.Equal(0, scope.Metrics.ScheduledMessages);
    }

    [Fact]
    public async Task Scheduled_count_is_a_per_queue_gauge_in_the_Prometheus_metrics()
    {
        var time = Clock();
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 }, time: time);
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);

        await sender.ScheduleMessagesAsync([new ServiceBusMessage("a"), new ServiceBusMessage("b")], time.GetUtcNow().AddDays(1));
        var text = await PrometheusScrape.TextAsync(scope.Emulator);
        var samples = PrometheusText.Parse(text);

        Assert.Contains($"# TYPE {EmulatorMetricNames.ScheduledMessages} gauge\n", text, StringComparison.Ordinal);
        Assert.Equal(2, samples.Of(EmulatorMetricNames.ScheduledMessages, EmulatorScope.Queue));
        Assert.Equal(0, samples.Of(EmulatorMetricNames.ActiveMessages, EmulatorScope.Queue));
    }
}
