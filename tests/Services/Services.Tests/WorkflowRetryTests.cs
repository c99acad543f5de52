using System.Collections.Concurrent;
using System.Globalization;
using System.Net;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Messaging;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Ingestion;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using DroneDelivery.Workflow;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Time.Testing;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

/// <summary>
/// The Workflow's back-off, time budget and circuit breaker. Each test runs a Workflow on a Service Bus
/// emulator of its own whose clock is the Workflow's: a <see cref="FakeTimeProvider"/> that only the test
/// moves, so when a scheduled retry becomes receivable, or a break ends, is decided by the test alone.
/// The backends are the system's, behind a proxy that fails on demand.
/// </summary>
[Collection(SystemCollection.Name)]
public sealed class WorkflowRetryTests(SystemFixture system)
{
    private const string Queue = "retries";

    [Fact]
    public async Task A_transient_failure_schedules_a_retry_after_the_back_off_and_completes_the_original()
    {
        await using var bench = await Bench.StartAsync(system, new()
        {
            ["Redelivery:BaseDelay"] = "00:00:10",
            ["Redelivery:MaxDelay"] = "00:01:00",
        });
        using var metrics = new MetricRecorder(WorkflowTelemetry.Retries, ServiceBusClientTelemetry.MessagesReceived, ServiceBusClientTelemetry.MessagesSent,
            ServiceBusClientTelemetry.MessagesCompleted, ServiceBusClientTelemetry.MessagesAbandoned, ServiceBusClientTelemetry.MessagesDeadLettered);
        var id = NewId();
        var started = bench.Time.GetUtcNow();

        await bench.SendAsync(id);

        var retry = await bench.WaitForScheduledAsync(attempt: 2);
        Assert.Equal((1L, 1L, 0L), (bench.Counters.OutgoingDeliveries, bench.Counters.Completed, bench.Counters.Abandoned));
        Assert.Equal($"{id}.2", retry.MessageId);
        Assert.Equal(started.UtcDateTime.ToString("O", CultureInfo.InvariantCulture), retry.ApplicationProperties[DeliveryWorkflow.FirstAttemptProperty]);
        Assert.InRange(retry.ScheduledEnqueueTime, started + TimeSpan.FromSeconds(5), started + TimeSpan.FromSeconds(10));
        Assert.Equal(1, metrics.Sum(WorkflowTelemetry.Retries, ("operation", "delivery"), ("reason", "package_failed")));

        bench.Failing = false;
        bench.Time.Advance(retry.ScheduledEnqueueTime - bench.Time.GetUtcNow() - TimeSpan.FromMilliseconds(1));
        // A millisecond early: still scheduled, so nothing can receive it.
        var early = Assert.Single(await bench.PeekAsync());
        Assert.Equal(ServiceBusMessageState.Scheduled, early.State);
        Assert.Equal(1, bench.Counters.OutgoingDeliveries);

        bench.Time.Advance(TimeSpan.FromMilliseconds(1));
        // Due now: no longer scheduled. The emulator hands it to waiting receivers on its next sweep (every 50 ms of its clock).
        Assert.DoesNotContain(await bench.PeekAsync(), m => m.State == ServiceBusMessageState.Scheduled);
        bench.Time.Advance(bench.Bus.Options.SweepInterval);

        Assert.True(await Eventually.TrueAsync(() => bench.Counters.Completed == 2, Patience), "The retry was not processed once due.");
        await system.Delivery.WaitForStatusAsync(id, _ => true);
        Assert.Equal((2L, 0L, 0L), (bench.Counters.OutgoingDeliveries, bench.Counters.Abandoned, bench.Counters.DeadLettered));
        Assert.Equal(2, bench.PackagePuts.Count);

        // What the Workflow counts as a Service Bus client: two deliveries received and completed, one retry sent.
        double Client(string instrument) => metrics.Sum(instrument, (ServiceBusClientTelemetry.DestinationTag, Queue));
        Assert.True(await Eventually.TrueAsync(() => Client(ServiceBusClientTelemetry.MessagesCompleted) == 2, Patience));
        Assert.Equal((2.0, 1.0, 0.0, 0.0), (
            Client(ServiceBusClientTelemetry.MessagesReceived), Client(ServiceBusClientTelemetry.MessagesSent),
            Client(ServiceBusClientTelemetry.MessagesAbandoned), Client(ServiceBusClientTelemetry.MessagesDeadLettered)));
    }

    [Fact]
    public async Task A_settlement_after_the_lock_expired_is_counted_as_lock_lost_and_the_message_comes_again()
    {
        // No lock renewal: the handler is held inside its first package call while the emulator's clock passes the
        // 5-minute lock, so the settlement that follows finds the lock gone.
        await using var bench = await Bench.StartAsync(system, new()
        {
            ["Processor:MaxAutoLockRenewalDuration"] = "00:00:00",
            ["Redelivery:BaseDelay"] = "00:10:00",
            ["Redelivery:MaxDelay"] = "00:10:00",
        });
        using var metrics = new MetricRecorder(WorkflowTelemetry.Messages, ServiceBusClientTelemetry.LockLost, ServiceBusClientTelemetry.MessagesCompleted);
        var held = bench.HoldNextPut();
        var id = NewId();

        await bench.SendAsync(id);
        await held.Entered.Task.WaitAsync(Patience);
        bench.Time.Advance(TimeSpan.FromMinutes(5) + bench.Bus.Options.SweepInterval);
        Assert.True(await Eventually.TrueAsync(() => bench.Counters.LockExpirations == 1, Patience), "The lock never expired.");
        bench.Failing = false;
        held.Release.SetResult();

        // The held call fails (503): a retry is scheduled, and completing the original finds the lock lost. The
        // broker delivers the original again, which now succeeds: once that settlement is in, one more sweep of the
        // broker's clock hands the message out, whichever came first, the sweep or the receiver's new credit.
        Assert.True(await Eventually.TrueAsync(() => bench.Counters.LockLostSettlements == 1, Patience), "The settlement never found the lock lost.");
        bench.Time.Advance(bench.Bus.Options.SweepInterval);
        await system.Delivery.WaitForStatusAsync(id, _ => true);
        Assert.True(await Eventually.TrueAsync(() => metrics.Sum(ServiceBusClientTelemetry.MessagesCompleted, (ServiceBusClientTelemetry.DestinationTag, Queue)) == 1, Patience));
        Assert.Equal(1, metrics.Sum(ServiceBusClientTelemetry.LockLost, (ServiceBusClientTelemetry.DestinationTag, Queue)));
        Assert.Equal(1, metrics.Sum(WorkflowTelemetry.Messages, ("operation", "delivery"), ("outcome", WorkflowTelemetry.Outcomes.LockLost)));
        Assert.Equal((1L, 2L, 1L), (bench.Counters.LockLostSettlements, bench.Counters.OutgoingDeliveries, bench.Counters.Completed));
    }

    [Fact]
    public async Task Transient_failures_are_retried_until_the_time_budget_then_dead_lettered_however_many_attempts()
    {
        await using var bench = await Bench.StartAsync(system, new()
        {
            ["Redelivery:BaseDelay"] = "00:00:01",
            ["Redelivery:MaxDelay"] = "00:00:01",
            ["Redelivery:TransientBudget"] = "00:00:10",
        });
        var id = NewId();
        var started = bench.Time.GetUtcNow();

        await bench.SendAsync(id);

        // Each retry is due 0.5 - 1 s after the last attempt: move the clock exactly there, every time.
        var attempt = 1;
        while (true)
        {
            var next = await bench.WaitForScheduledOrDeadLetteredAsync(attempt + 1);
            if (next is null)
            {
                break;
            }

            bench.Time.Advance(next.ScheduledEnqueueTime - bench.Time.GetUtcNow());
            attempt++;
            Assert.True(attempt < 100, "Never dead-lettered.");
        }

        var dead = await bench.Client.ReceiveDeadLetterAsync(Queue);
        Assert.Equal(DeliveryWorkflow.Reasons.TransientFailuresExhausted, dead.DeadLetterReason);
        Assert.Contains("package: Failed (HTTP 503)", dead.DeadLetterErrorDescription);
        Assert.Equal(attempt, dead.ApplicationProperties[DeliveryWorkflow.AttemptProperty]);
        var attempts = bench.PackagePuts.Select(p => p.At).ToList();
        Assert.Equal(attempt, attempts.Count);
        // Dead-lettered on the first attempt past the budget, not before, and far more attempts than the queue's MaxDeliveryCount.
        Assert.All(attempts[..^1], at => Assert.True(at - started < TimeSpan.FromSeconds(10)));
        Assert.True(attempts[^1] - started >= TimeSpan.FromSeconds(10));
        Assert.True(attempt > 10, $"Only {attempt} attempts in 10 s of 0.5 - 1 s back-offs.");
        Assert.Equal((0L, 1L), (bench.Counters.Abandoned, bench.Counters.DeadLettered));
    }

    [Fact]
    public async Task A_permanent_failure_is_compensated_and_dead_lettered_at_once_without_a_retry()
    {
        await using var rejectingScheduler = await StartProxyAsync(system.DroneScheduler.BaseAddress, context =>
            context.Request.Method == "PUT" ? Results.Problem(statusCode: StatusCodes.Status400BadRequest) : null);
        await using var bench = await Bench.StartAsync(system, new()
        {
            ["Backends:DroneScheduler:BaseAddress"] = rejectingScheduler.BaseAddress.ToString(),
        });
        bench.Failing = false;
        using var metrics = new MetricRecorder(WorkflowTelemetry.Messages);
        var id = NewId();

        await bench.SendAsync(id);

        Assert.True(await Eventually.TrueAsync(() => bench.Counters.DeadLettered == 1, Patience), "Not dead-lettered.");
        Assert.Equal((1L, 0L), (bench.Counters.OutgoingDeliveries, bench.Counters.Completed));
        Assert.Empty(await bench.PeekAsync());
        var dead = await bench.Client.ReceiveDeadLetterAsync(Queue);
        Assert.Equal((id, DeliveryWorkflow.Reasons.BackendRejected), (dead.MessageId, dead.DeadLetterReason));
        Assert.Equal(HttpStatusCode.NotFound, (await system.Package.Client.GetAsync($"api/packages/{id}")).StatusCode);
        Assert.True(await Eventually.TrueAsync(() => metrics.Sum(WorkflowTelemetry.Messages, ("operation", "delivery"), ("outcome", WorkflowTelemetry.Outcomes.Compensated)) == 1, Patience));
    }

    [Fact]
    public async Task The_breaker_pauses_the_processor_while_the_backends_fail_then_resumes()
    {
        await using var bench = await Bench.StartAsync(system, new()
        {
            ["Processor:MaxConcurrentCalls"] = "2",
            ["Redelivery:BaseDelay"] = "00:10:00",
            ["Redelivery:MaxDelay"] = "00:10:00",
            ["CircuitBreaker:MinimumThroughput"] = "2",
            ["CircuitBreaker:FailureRatio"] = "0.5",
            ["CircuitBreaker:SamplingDuration"] = "00:01:00",
            ["CircuitBreaker:BreakDuration"] = "00:00:30",
            ["CircuitBreaker:ProbeMessages"] = "1",
        });
        using var metrics = new MetricRecorder(WorkflowTelemetry.BreakerTransitionsName);
        var host = bench.Workflow.Services.GetRequiredService<DeliveryProcessor>();
        string[] failed = [NewId(), NewId()];
        var late = NewId();

        await bench.SendAsync(failed[0]);
        await bench.SendAsync(failed[1]);

        Assert.True(await Eventually.TrueAsync(() => host.PausedByBreaker && !host.Processor.IsProcessing, Patience), "The breaker never paused the processor.");
        var opened = bench.Time.GetUtcNow();
        Assert.Equal(BreakerState.Open, host.Breaker.State);
        Assert.True(await Eventually.TrueAsync(() => bench.Workflow.Logs.Entries.Any(e => e.EventName == "ProcessorPaused"), Patience));

        // Sent while paused: it stays in the queue and no handler sees it, however long the test waits here. (A receive
        // the pause cancelled can leave credit on the stopped processor's link, as against the real service: the broker
        // may then lock the message into that link's buffer, and the processor hands it out only when it resumes.)
        await bench.SendAsync(late);
        var waiting = (await bench.PeekAsync()).Single(m => m.State == ServiceBusMessageState.Active);
        Assert.Equal(late, waiting.MessageId);
        Assert.InRange(waiting.DeliveryCount, 0, 1);
        Assert.Equal(0L, bench.Counters.DeadLettered);
        Assert.Equal(2, bench.PackagePuts.Count);

        // The backends recover; the break ends only when the clock passes it.
        bench.Failing = false;
        Assert.True(
            await Eventually.TrueAsync(() => { if (host.Breaker.State == BreakerState.Open) { bench.Time.Advance(TimeSpan.FromSeconds(1)); } return host.Breaker.State == BreakerState.Closed; }, Patience, TimeSpan.FromMilliseconds(20)),
            "The breaker never closed.");
        Assert.True(await Eventually.TrueAsync(() => host.Processor.IsProcessing && !host.PausedByBreaker, Patience), "The processor did not resume.");
        await system.Delivery.WaitForStatusAsync(late, _ => true);

        // The retries of the failed two, due 5 - 10 min after their attempts, at full concurrency again.
        bench.Time.Advance(TimeSpan.FromMinutes(10));
        foreach (var id in failed)
        {
            await system.Delivery.WaitForStatusAsync(id, _ => true);
        }

        // The order in which the package backend saw them: both failures, the late message (only after the break), then the retries.
        // (A failed message the pause caught while its handler was still settling may be given back and taken
        // once more after the break; each failed one is retried after the late message all the same.)
        var puts = bench.PackagePuts.ToList();
        Assert.Equal(failed.Order(), puts.Take(2).Select(p => p.PackageId).Order());
        var lateAt = puts.FindIndex(p => p.PackageId == late);
        Assert.True(lateAt >= 2, $"The late message was the put number {lateAt + 1}.");
        Assert.All(puts.Take(lateAt), p => Assert.Contains(p.PackageId, failed));
        Assert.True(puts[lateAt].At >= opened + TimeSpan.FromSeconds(30), $"The late message was taken {puts[lateAt].At - opened} after the breaker opened.");
        Assert.All(puts.Skip(lateAt + 1), p => Assert.Contains(p.PackageId, failed));
        Assert.Equal(failed.Order(), puts.Skip(lateAt + 1).Select(p => p.PackageId).Distinct().Order());
        Assert.Equal(
            ["open", "half_open", "closed"],
            metrics.Of(WorkflowTelemetry.BreakerTransitionsName).Select(m => (string)m.Tags["state"]!));
    }

    [Fact]
    public async Task A_stopping_workflow_gives_back_the_messages_it_holds_before_it_stops_and_none_waits_out_its_lock()
    {
        var (bench, held, id) = await HoldOneMessageAsync();
        await using var benchScope = bench;
        Assert.Equal(1, bench.Bus.GetMetrics()[Queue].LockedMessages);

        // What the host does on SIGTERM. The handler holds the message inside a backend call.
        var processor = bench.Workflow.Services.GetRequiredService<DeliveryProcessor>();
        await processor.StopAsync(CancellationToken.None).WaitAsync(Patience);

        // By the time the stop returned the message was given back — on a clock that never moved, so its
        // 5-minute lock cannot have expired: the Workflow released it.
        var queue = bench.Bus.GetMetrics()[Queue];
        Assert.Equal((1L, 0L, 0L, 0L), (queue.Counters.Abandoned, queue.Counters.LockExpirations, queue.Counters.Completed, queue.Counters.DeadLettered));
        Assert.Equal((0L, 1L), (queue.LockedMessages, queue.ActiveMessages));
        held.Release.SetResult();

        // Nothing lost: the next Workflow takes it and completes it.
        await using var next = await StartNextWorkflowAsync(bench);
        await system.Delivery.WaitForStatusAsync(id, _ => true);
        Assert.True(await Eventually.TrueAsync(() => bench.Counters.Completed == 1, Patience));
    }

    [Fact]
    public async Task A_stop_cut_short_by_the_shutdown_timeout_is_logged_not_thrown_and_the_message_it_held_comes_back()
    {
        var (bench, held, id) = await HoldOneMessageAsync();
        await using var benchScope = bench;

        // What the host does once Processor:ShutdownTimeout has passed: the token it stops with is cancelled, while
        // the handler still holds the message inside a backend call.
        var processor = bench.Workflow.Services.GetRequiredService<DeliveryProcessor>();
        await processor.StopAsync(new CancellationToken(canceled: true)).WaitAsync(Patience);
        Assert.Contains(bench.Workflow.Logs.Entries, e => e.EventName == "ProcessorStopIncomplete");

        // Late, not lost: once the handler ends and the broker's clock passes its lock (or its scheduled retry), the
        // next Workflow takes the message and completes it.
        bench.Failing = false;
        held.Release.SetResult();
        await using var next = await StartNextWorkflowAsync(bench);
        Assert.True(
            await Eventually.TrueAsync(() => { bench.Time.Advance(TimeSpan.FromMinutes(1)); return bench.Counters.Completed >= 1; }, Patience, TimeSpan.FromMilliseconds(250)),
            "The message the cut-short stop held never came back.");
        await system.Delivery.WaitForStatusAsync(id, _ => true);
        Assert.Equal(0L, bench.Counters.DeadLettered);
    }

    [Fact]
    public async Task The_shutdown_timeout_setting_reaches_the_host()
    {
        await using var workflow = await system.StartWorkflowAsync("no-such-queue", new() { ["Processor:ShutdownTimeout"] = "00:01:15" });

        Assert.Equal(TimeSpan.FromSeconds(75), workflow.Services.GetRequiredService<Microsoft.Extensions.Options.IOptions<Microsoft.Extensions.Hosting.HostOptions>>().Value.ShutdownTimeout);
        Assert.Contains("Setting Processor:ShutdownTimeout = 00:01:15", workflow.Logs.Messages);
    }

    /// <summary>A bench whose Workflow holds one message inside its package call (a retry would be 10 minutes away).</summary>
    private async Task<(Bench Bench, Hold Held, string Id)> HoldOneMessageAsync()
    {
        var bench = await Bench.StartAsync(system, new()
        {
            ["Redelivery:BaseDelay"] = "00:10:00",
            ["Redelivery:MaxDelay"] = "00:10:00",
        });
        try
        {
            var held = bench.HoldNextPut();
            var id = NewId();
            await bench.SendAsync(id);
            await held.Entered.Task.WaitAsync(Patience);
            return (bench, held, id);
        }
        catch
        {
            await bench.DisposeAsync();
            throw;
        }
    }

    /// <summary>Another Workflow on the bench's queue, as after a restart.</summary>
    private Task<ServiceApp> StartNextWorkflowAsync(Bench bench) => system.StartWorkflowAsync(Queue, new()
    {
        ["ServiceBus:ConnectionString"] = bench.Bus.ConnectionString,
        ["Processor:MaxDeliveryCount"] = SystemFixture.MaxDeliveryCount.ToString(CultureInfo.InvariantCulture),
    });

    /// <summary>A Service Bus emulator and a Workflow sharing one fake clock; the package backend fails (503) while <see cref="Failing"/>.</summary>
    private sealed class Bench : IAsyncDisposable
    {
        private readonly List<IAsyncDisposable> _resources = [];

        private Bench(FakeTimeProvider time) => Time = time;

        public FakeTimeProvider Time { get; }

        public ServiceBusEmulator Bus { get; private set; } = null!;

        public ServiceBusClient Client { get; private set; } = null!;

        public ServiceApp Workflow { get; private set; } = null!;

        public volatile bool Failing = true;

        private Hold? _hold;

        /// <summary>The next package PUT waits until <see cref="Hold.Release"/> is set, then fails (503).</summary>
        public Hold HoldNextPut()
        {
            var hold = new Hold();
            Volatile.Write(ref _hold, hold);
            return hold;
        }

        /// <summary>Every PUT the package backend received: the package id (the delivery id here) and the clock's time.</summary>
        public ConcurrentQueue<(string PackageId, DateTimeOffset At)> PackagePuts { get; } = new();

        public Emulators.ServiceBus.Metrics.QueueCounters Counters => Bus.GetMetrics()[Queue].Counters;

        public static async Task<Bench> StartAsync(SystemFixture system, Dictionary<string, string?> settings)
        {
            var bench = new Bench(new FakeTimeProvider(DateTimeOffset.UtcNow));
            try
            {
                await bench.InitializeAsync(system, settings);
                return bench;
            }
            catch
            {
                await bench.DisposeAsync();
                throw;
            }
        }

        public Task SendAsync(string id)
        {
            var request = NewRequest(NewId(), new DateTimeOffset(2026, 3, 2, 8, 0, 0, TimeSpan.Zero), packageId: id);
            return Client.SendAsync(Queue, DeliveryRequestMessages.Delivery(id, request.Valid()));
        }

        public async Task<IReadOnlyList<ServiceBusReceivedMessage>> PeekAsync()
        {
            await using var receiver = Client.CreateReceiver(Queue);
            return await receiver.PeekMessagesAsync(10, fromSequenceNumber: 0);
        }

        /// <summary>The scheduled retry that is attempt <paramref name="attempt"/>, once it is scheduled and its original completed.</summary>
        public async Task<ServiceBusReceivedMessage> WaitForScheduledAsync(int attempt) =>
            await WaitForScheduledOrDeadLetteredAsync(attempt) ?? throw new Xunit.Sdk.XunitException("Dead-lettered instead of retried.");

        /// <summary>The retry that is attempt <paramref name="attempt"/> once scheduled (and its original completed); null once the message is dead-lettered.</summary>
        public async Task<ServiceBusReceivedMessage?> WaitForScheduledOrDeadLetteredAsync(int attempt)
        {
            ServiceBusReceivedMessage? found = null;
            var dead = false;
            Assert.True(await Eventually.TrueAsync(async () =>
            {
                dead = Counters.DeadLettered > 0;
                found = (await PeekAsync()).FirstOrDefault(m =>
                    m.State == ServiceBusMessageState.Scheduled && Equals(m.ApplicationProperties.GetValueOrDefault(DeliveryWorkflow.AttemptProperty), attempt));
                return dead || (found is not null && Counters.Completed >= attempt - 1);
            }, Patience), $"Attempt {attempt} was never scheduled.");
            return dead ? null : found;
        }

        public async ValueTask DisposeAsync()
        {
            for (var i = _resources.Count - 1; i >= 0; i--)
            {
                await _resources[i].DisposeAsync();
            }
        }

        private async Task InitializeAsync(SystemFixture system, Dictionary<string, string?> settings)
        {
            Bus = Track(await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
            {
                Queues = [new QueueOptions { Name = Queue, LockDuration = TimeSpan.FromMinutes(5), MaxDeliveryCount = SystemFixture.MaxDeliveryCount }],
                TimeProvider = Time,
            }));
            Client = Track(new ServiceBusClient(Bus.ConnectionString));
            var package = Track(await StartProxyAsync(system.Package.BaseAddress, context =>
            {
                if (context.Request.Method != "PUT")
                {
                    return null;
                }

                PackagePuts.Enqueue((context.Request.Path.Value!.Split('/')[^1], Time.GetUtcNow()));
                if (Interlocked.Exchange(ref _hold, null) is { } hold)
                {
                    return hold;
                }

                return Failing ? Results.StatusCode(StatusCodes.Status503ServiceUnavailable) : null;
            }));
            var all = new Dictionary<string, string?>
            {
                ["ServiceBus:ConnectionString"] = Bus.ConnectionString,
                ["ServiceBus:QueueName"] = Queue,
                ["Processor:MaxDeliveryCount"] = SystemFixture.MaxDeliveryCount.ToString(CultureInfo.InvariantCulture),
                ["Backends:Package:BaseAddress"] = package.BaseAddress.ToString(),
                ["Backends:DroneScheduler:BaseAddress"] = system.DroneScheduler.BaseAddress.ToString(),
                ["Backends:Delivery:BaseAddress"] = system.Delivery.BaseAddress.ToString(),
                // No HTTP retries: their delays would wait on the fake clock.
                ["Resilience:MaxRetryAttempts"] = "0",
            };
            foreach (var (key, value) in settings)
            {
                all[key] = value;
            }

            Workflow = Track(await ServiceApp.StartAsync(Definitions.Workflow, all, services => services.AddSingleton<TimeProvider>(Time)));
        }

        private T Track<T>(T resource)
            where T : IAsyncDisposable
        {
            _resources.Add(resource);
            return resource;
        }
    }

    /// <summary>A backend answer that signals it has been reached, waits to be released, then is a 503.</summary>
    private sealed class Hold : IResult
    {
        public TaskCompletionSource Entered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource Release { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public async Task ExecuteAsync(HttpContext context)
        {
            Entered.TrySetResult();
            await Release.Task;
            context.Response.StatusCode = StatusCodes.Status503ServiceUnavailable;
        }
    }
}
