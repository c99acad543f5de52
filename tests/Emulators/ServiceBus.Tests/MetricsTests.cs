using System.Reflection;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.Lab.Measurement;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// <c>GET /metrics</c> as Prometheus, the chart's dashboards and KEDA read it: a real scrape after real traffic from
/// the official SDK, read with the lab's parser.
/// </summary>
public sealed class MetricsTests
{
    private const string Queue = EmulatorScope.Queue;
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan LockDuration = TimeSpan.FromSeconds(30);

    /// <summary>Every series name the emulator publishes (<see cref="EmulatorMetricNames"/>).</summary>
    private static readonly string[] Names = [.. typeof(EmulatorMetricNames).GetFields(BindingFlags.Public | BindingFlags.Static)
        .Where(f => f.IsLiteral).Select(f => (string)f.GetRawConstantValue()!).Where(n => n.StartsWith("servicebus_emulator_", StringComparison.Ordinal))];

    /// <summary>Each per-queue series and the figure of the emulator's own snapshot (the JSON on /_emulator/metrics) it exports.</summary>
    private static readonly Dictionary<string, Func<QueueMetricsSnapshot, double>> PerQueue = new(StringComparer.Ordinal)
    {
        [EmulatorMetricNames.IncomingMessages] = q => q.Counters.IncomingMessages,
        [EmulatorMetricNames.OutgoingDeliveries] = q => q.Counters.OutgoingDeliveries,
        [EmulatorMetricNames.CompletedMessages] = q => q.Counters.Completed,
        [EmulatorMetricNames.AbandonedMessages] = q => q.Counters.Abandoned,
        [EmulatorMetricNames.DeferredMessages] = q => q.Counters.Deferred,
        [EmulatorMetricNames.LockLostSettlements] = q => q.Counters.LockLostSettlements,
        [EmulatorMetricNames.LockRenewals] = q => q.Counters.LockRenewals,
        [EmulatorMetricNames.LockExpirations] = q => q.Counters.LockExpirations,
        [EmulatorMetricNames.ExpiredMessages] = q => q.Counters.ExpiredMessages,
        [EmulatorMetricNames.SessionLockRenewals] = q => q.Counters.SessionLockRenewals,
        [EmulatorMetricNames.SessionLockExpirations] = q => q.Counters.SessionLockExpirations,
        [EmulatorMetricNames.ActiveMessages] = q => q.ActiveMessages,
        [EmulatorMetricNames.LockedMessages] = q => q.LockedMessages,
        [EmulatorMetricNames.ScheduledMessages] = q => q.ScheduledMessages,
        [EmulatorMetricNames.DeadLetterMessages] = q => q.DeadLetterMessages,
        [EmulatorMetricNames.OldestMessageAgeSeconds] = q => q.OldestMessageAgeSeconds,
        [EmulatorMetricNames.ActiveSessions] = q => q.ActiveSessions,
        [EmulatorMetricNames.LockedSessions] = q => q.LockedSessions,
    };

    /// <summary>
    /// Completes, an explicit dead-letter, abandons up to MaxDeliveryCount (dead-lettered with
    /// <c>MaxDeliveryCountExceeded</c>, as on Azure), a settlement on an expired lock (<c>MessageLockLost</c>), a deferral, a
    /// renewal, a held lock, a waiting and a scheduled message and one dropped connection; then one scrape has each
    /// published name, in the classic text format, typed counter or gauge, with the labels the dashboards group by and
    /// the values of the emulator's own snapshot.
    /// </summary>
    [Fact]
    public async Task Scrape_after_real_traffic_has_every_name_the_dashboard_labels_and_the_emulators_own_figures()
    {
        var time = new FakeTimeProvider(DateTimeOffset.FromUnixTimeSeconds(DateTimeOffset.UtcNow.ToUnixTimeSeconds()));
        await using var scope = await EmulatorScope.StartAsync(
            q => q with { MaxDeliveryCount = 2, LockDuration = LockDuration },
            o => o with
            {
                HttpPort = 0,
                Faults = new ServiceBusFaultOptions { Rules = [new() { Kind = ServiceBusFaultKind.ConnectionDrop, Entity = Queue, Probability = 1, MaxCount = 1 }] },
            },
            time);
        await using var sender = scope.Client.CreateSender(Queue);
        await using var receiver = scope.Client.CreateReceiver(Queue);

        // The first send meets the dropped connection; the SDK retries it on a new one.
        await sender.SendMessagesAsync([new ServiceBusMessage("c1"), new ServiceBusMessage("c2"), new ServiceBusMessage("c3")]);
        for (var completed = 0; completed < 3;)
        {
            foreach (var message in await receiver.ReceiveMessagesAsync(3 - completed, Wait))
            {
                await receiver.CompleteMessageAsync(message);
                completed++;
            }
        }

        await sender.SendMessageAsync(new ServiceBusMessage("poison"));
        await receiver.DeadLetterMessageAsync((await receiver.ReceiveMessageAsync(Wait))!, "InvalidPayload", "deliveryId is missing");
        await sender.SendMessageAsync(new ServiceBusMessage("retry"));
        await receiver.AbandonMessageAsync((await receiver.ReceiveMessageAsync(Wait))!);
        await receiver.AbandonMessageAsync((await receiver.ReceiveMessageAsync(Wait))!);

        // The lock runs out on the emulator's clock: the message comes again (not "retry", which is dead-lettered),
        // and completing it with the first lock fails.
        await sender.SendMessageAsync(new ServiceBusMessage("slow"));
        var slow = await receiver.ReceiveMessageAsync(Wait);
        time.Advance(LockDuration + TimeSpan.FromSeconds(1));
        var again = await receiver.ReceiveMessageAsync(Wait);
        var lockLost = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(slow!));
        await receiver.CompleteMessageAsync(again!);

        await sender.SendMessageAsync(new ServiceBusMessage("later"));
        await receiver.DeferMessageAsync((await receiver.ReceiveMessageAsync(Wait))!);
        await sender.SendMessageAsync(new ServiceBusMessage("held"));
        var held = await receiver.ReceiveMessageAsync(Wait);
        await receiver.RenewMessageLockAsync(held!);
        await sender.SendMessageAsync(new ServiceBusMessage("waiting"));
        await sender.ScheduleMessageAsync(new ServiceBusMessage("tomorrow"), time.GetUtcNow().AddDays(1));
        time.Advance(TimeSpan.FromSeconds(7));

        using var http = new HttpClient();
        using var response = await http.GetAsync(new Uri(scope.Emulator.HttpEndpoint!, EmulatorMetricNames.PrometheusPath));
        var text = await response.Content.ReadAsStringAsync();
        var model = scope.Emulator.GetMetrics();
        var samples = PrometheusText.Parse(text);
        var orders = samples.Where(s => s.Label(EmulatorMetricNames.QueueLabel) == Queue).ToList();

        Assert.Equal(("slow", ServiceBusFailureReason.MessageLockLost), (again!.Body.ToString(), lockLost.Reason));
        Assert.Equal("text/plain", response.Content.Headers.ContentType!.MediaType);
        Assert.Contains("version=0.0.4", response.Content.Headers.ContentType.ToString(), StringComparison.Ordinal);

        // Every name, typed as Prometheus reads it, and no instrumentation-scope labels.
        foreach (var name in Names)
        {
            Assert.Contains(samples, s => s.Name == name);
            Assert.Contains($"# TYPE {name} {(name.EndsWith("_total", StringComparison.Ordinal) ? "counter" : "gauge")}\n", text, StringComparison.Ordinal);
        }

        Assert.DoesNotContain(samples, s => s.Labels.Keys.Any(label => label.StartsWith("otel_scope", StringComparison.Ordinal)));
        Assert.Equal("servicebus-emulator", Assert.Single(samples, s => s.Name == "target_info").Label("service_name"));

        // Per queue: the emulator's own figures, and what this traffic makes them.
        Assert.Equal([.. PerQueue.Keys.Order()], Names.Where(n => orders.Any(s => s.Name == n && s.Labels.Count == 1)).Order());
        foreach (var (name, figure) in PerQueue)
        {
            Assert.Equal(figure(model[Queue]), orders.Of(name, Queue));
        }

        Assert.Equal(
            (10.0, 4.0, 2.0, 1.0, 1.0, 1.0, 1.0),
            (orders.Of(EmulatorMetricNames.IncomingMessages, Queue), orders.Of(EmulatorMetricNames.CompletedMessages, Queue), orders.Of(EmulatorMetricNames.AbandonedMessages, Queue),
                orders.Of(EmulatorMetricNames.DeferredMessages, Queue), orders.Of(EmulatorMetricNames.LockLostSettlements, Queue), orders.Of(EmulatorMetricNames.LockExpirations, Queue),
                orders.Of(EmulatorMetricNames.LockRenewals, Queue)));
        Assert.Equal(
            (2.0, 1.0, 1.0, 2.0, 7.0),
            (orders.Of(EmulatorMetricNames.ActiveMessages, Queue), orders.Of(EmulatorMetricNames.LockedMessages, Queue), orders.Of(EmulatorMetricNames.ScheduledMessages, Queue),
                orders.Of(EmulatorMetricNames.DeadLetterMessages, Queue), orders.Of(EmulatorMetricNames.OldestMessageAgeSeconds, Queue)));

        // Dead-lettered by reason, as the scenario B dashboard sums them.
        var deadLettered = orders.Where(s => s.Name == EmulatorMetricNames.DeadLetteredMessages).ToDictionary(s => s.Label(EmulatorMetricNames.ReasonLabel)!, s => s.Value);
        Assert.Equal(model[Queue].DeadLetteredByReason.ToDictionary(r => r.Key, r => (double)r.Value), deadLettered);
        Assert.Equal(new Dictionary<string, double> { ["InvalidPayload"] = 1, [EmulatorMetricNames.MaxDeliveryCountExceededReason] = 1 }, deadLettered);

        // Injected faults by entity and kind.
        var fault = Assert.Single(samples, s => s.Name == EmulatorMetricNames.InjectedFaults);
        Assert.Equal((Queue, nameof(ServiceBusFaultKind.ConnectionDrop), 1.0), (fault.Label(EmulatorMetricNames.EntityLabel), fault.Label(EmulatorMetricNames.KindLabel), fault.Value));
        Assert.Equal(model.Faults.Single().Count, fault.Value);

        // Every emulator metric a dashboard reads is there with the queue it filters on and the labels it groups by.
        foreach (var (metric, labels) in DashboardReads.Of("servicebus_emulator_"))
        {
            Assert.Contains(orders, s => s.Name == metric && labels.All(s.Labels.ContainsKey));
        }
    }

    /// <summary>
    /// Every scrape is collected anew (the exporter would otherwise answer from a 300 ms cache): a reader that scrapes
    /// right before and after a step sees the step.
    /// </summary>
    [Fact]
    public async Task A_scrape_right_after_another_sees_the_message_sent_in_between()
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 });
        await using var sender = scope.Client.CreateSender(Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("first"));

        var before = await PrometheusScrape.SamplesAsync(scope.Emulator);
        await sender.SendMessageAsync(new ServiceBusMessage("second"));
        var after = await PrometheusScrape.SamplesAsync(scope.Emulator);

        Assert.Equal((1.0, 2.0), (before.Of(EmulatorMetricNames.IncomingMessages, Queue), after.Of(EmulatorMetricNames.IncomingMessages, Queue)));
        Assert.Equal((1.0, 2.0), (before.Of(EmulatorMetricNames.ActiveMessages, Queue), after.Of(EmulatorMetricNames.ActiveMessages, Queue)));
    }
}
