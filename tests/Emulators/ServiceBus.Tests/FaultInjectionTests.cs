using System.Collections.Concurrent;
using System.Net;
using System.Text;
using System.Text.Json;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.Time.Testing;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// The emulator's injected faults, met by the official SDK: each fault is one the service itself produces
/// (a dropped or force-closed connection, <c>com.microsoft:server-busy</c>, a settlement whose answer never comes,
/// a namespace that stops answering), the SDK recovers by its documented retry policy, and no message is lost.
/// Every fault injected is counted in the emulator's metrics.
/// </summary>
public sealed class FaultInjectionTests
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(120);

    private const string Queue = EmulatorScope.Queue;

    private static ServiceBusFaultRule Rule(ServiceBusFaultKind kind, double probability, long? maxCount) =>
        new() { Kind = kind, Entity = Queue, Probability = probability, MaxCount = maxCount };

    /// <summary>
    /// Retries as an application would configure them, with a short try timeout: a settlement whose answer is lost
    /// is retried after it (the SDK cannot tell a lost answer from a slow one).
    /// </summary>
    private static ServiceBusClient Client(ServiceBusEmulator emulator, TimeSpan? tryTimeout = null) => new(emulator.ConnectionString, new ServiceBusClientOptions
    {
        RetryOptions = new ServiceBusRetryOptions
        {
            Mode = ServiceBusRetryMode.Fixed,
            MaxRetries = 5,
            Delay = TimeSpan.FromMilliseconds(100),
            TryTimeout = tryTimeout ?? TimeSpan.FromSeconds(30),
        },
    });

    private static long Injected(ServiceBusEmulator emulator, ServiceBusFaultKind kind, string entity = Queue) =>
        emulator.GetMetrics().Faults.Where(f => f.Kind == kind.ToString() && f.Entity == entity).Sum(f => f.Count);

    [Fact]
    public async Task A_sender_recovers_from_a_dropped_connection_and_a_server_busy_refusal_and_stores_each_message_once()
    {
        // Documented: ServerBusyException (com.microsoft:server-busy) is transient, the client waits and retries;
        // a connection lost under a send is retried on a new connection.
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with
        {
            HttpPort = 0,
            Faults = new ServiceBusFaultOptions
            {
                Rules = [Rule(ServiceBusFaultKind.ConnectionDrop, 1, 1), Rule(ServiceBusFaultKind.ServerBusySend, 1, 1)],
            },
        });
        await using var client = Client(scope.Emulator);
        await using var sender = client.CreateSender(Queue);

        foreach (var body in new[] { "m1", "m2", "m3" })
        {
            await sender.SendMessageAsync(new ServiceBusMessage(body) { MessageId = body });
        }

        await using var receiver = client.CreateReceiver(Queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var received = new List<string>();
        Assert.True(await Eventually.TrueAsync(async () =>
        {
            received.AddRange((await receiver.ReceiveMessagesAsync(10, TimeSpan.FromSeconds(1))).Select(m => m.Body.ToString()));
            return received.Count >= 3;
        }, Patience), $"Received only [{string.Join(", ", received)}].");
        Assert.Equal(["m1", "m2", "m3"], received.Order());
        Assert.Equal(3, scope.Metrics.Counters.IncomingMessages);
        Assert.Equal((1L, 1L), (Injected(scope.Emulator, ServiceBusFaultKind.ConnectionDrop), Injected(scope.Emulator, ServiceBusFaultKind.ServerBusySend)));
        var faults = (await PrometheusScrape.SamplesAsync(scope.Emulator)).Where(s => s.Name == EmulatorMetricNames.InjectedFaults && s.Label(EmulatorMetricNames.EntityLabel) == Queue);
        Assert.Equal([("ConnectionDrop", 1.0), ("ServerBusySend", 1.0)], faults.Select(s => (s.Label(EmulatorMetricNames.KindLabel)!, s.Value)).Order());
    }

    [Fact]
    public async Task A_lost_settlement_answer_is_retried_by_the_client_and_the_message_is_completed_once_not_lost()
    {
        // The first complete neither takes effect nor is answered: the SDK times out (TryTimeout) and retries it,
        // on a lock that still holds. The second takes effect but its answer is lost: the retry finds the message
        // gone (MessageLockLost) — completed, not lost and not delivered again.
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with
        {
            Faults = new ServiceBusFaultOptions
            {
                Rules = [Rule(ServiceBusFaultKind.SettlementLostUnapplied, 1, 1)],
            },
        });
        await using var client = Client(scope.Emulator, tryTimeout: TimeSpan.FromSeconds(3));
        await using var sender = client.CreateSender(Queue);
        await sender.SendMessagesAsync([new ServiceBusMessage("a"), new ServiceBusMessage("b")]);
        await using var receiver = client.CreateReceiver(Queue);

        var first = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        await receiver.CompleteMessageAsync(first);
        Assert.Equal(1, Injected(scope.Emulator, ServiceBusFaultKind.SettlementLostUnapplied));
        Assert.Equal(1, scope.Metrics.Counters.Completed);

        scope.Emulator.Faults.Configure(new ServiceBusFaultOptions { Rules = [Rule(ServiceBusFaultKind.SettlementLostApplied, 1, 1)] });
        var second = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
        var retried = await Assert.ThrowsAsync<ServiceBusException>(() => receiver.CompleteMessageAsync(second));
        Assert.Equal(ServiceBusFailureReason.MessageLockLost, retried.Reason);
        Assert.Equal(1, Injected(scope.Emulator, ServiceBusFaultKind.SettlementLostApplied));

        Assert.Equal((2L, 2L, 0L), (scope.Metrics.Counters.Completed, scope.Metrics.Counters.OutgoingDeliveries, scope.Metrics.ActiveMessages));
        Assert.Null(await receiver.PeekMessageAsync());
    }

    [Fact]
    public async Task A_processor_under_dropped_connections_server_busy_and_lost_settlements_processes_every_message()
    {
        const int Count = 40;
        await using var scope = await EmulatorScope.StartAsync(q => q with { LockDuration = TimeSpan.FromSeconds(5), MaxDeliveryCount = 50 }, o => o with
        {
            Faults = new ServiceBusFaultOptions
            {
                Seed = 7,
                Rules =
                [
                    Rule(ServiceBusFaultKind.ServerBusyReceive, 1, 1),
                    Rule(ServiceBusFaultKind.ConnectionDrop, 0.25, 2),
                    Rule(ServiceBusFaultKind.ConnectionForced, 0.25, 2),
                    Rule(ServiceBusFaultKind.SettlementLostApplied, 0.25, 2),
                    Rule(ServiceBusFaultKind.SettlementLostUnapplied, 0.25, 2),
                ],
            },
        });

        // The messages go in before the faults hit the receive side: the sender has its own test.
        await using (var setup = EmulatorScope.CreateClient(scope.Emulator.ConnectionString))
        {
            var rules = scope.Emulator.Faults.Options;
            scope.Emulator.Faults.Configure(ServiceBusFaultOptions.None);
            await using var sender = setup.CreateSender(Queue);
            await sender.SendMessagesAsync(Enumerable.Range(0, Count).Select(i => new ServiceBusMessage($"m{i}") { MessageId = $"m{i}" }));
            scope.Emulator.Faults.Configure(rules);
        }

        await using var client = Client(scope.Emulator, tryTimeout: TimeSpan.FromSeconds(3));
        await using var processor = client.CreateProcessor(Queue, new ServiceBusProcessorOptions { MaxConcurrentCalls = 4, AutoCompleteMessages = false });
        var handled = new ConcurrentDictionary<string, int>();
        processor.ProcessMessageAsync += async args =>
        {
            handled.AddOrUpdate(args.Message.MessageId, 1, (_, n) => n + 1);
            await args.CompleteMessageAsync(args.Message);
        };
        processor.ProcessErrorAsync += _ => Task.CompletedTask;

        await processor.StartProcessingAsync();
        Assert.True(
            await Eventually.TrueAsync(() => scope.Metrics.ActiveMessages == 0 && handled.Count == Count, Patience),
            $"{scope.Metrics.ActiveMessages} messages left; handled {handled.Count} of {Count}.");
        await processor.StopProcessingAsync();

        // None lost: every message handled at least once (some twice: at-least-once), none dead-lettered.
        Assert.Equal(Enumerable.Range(0, Count).Select(i => $"m{i}").Order(), handled.Keys.Order());
        Assert.Equal(0, scope.Metrics.DeadLetterMessages);
        var faults = scope.Emulator.GetMetrics().Faults.Where(f => f.Entity == Queue).ToDictionary(f => f.Kind, f => f.Count);
        Assert.Equal(1, faults.GetValueOrDefault(nameof(ServiceBusFaultKind.ServerBusyReceive)));
        Assert.True(faults.Values.Sum() >= 3, $"Injected: {string.Join(", ", faults.Select(f => $"{f.Key}={f.Value}"))}.");
    }

    [Fact]
    public async Task A_paused_namespace_holds_a_send_until_the_pause_ends_then_stores_it()
    {
        var time = new FakeTimeProvider(DateTimeOffset.UtcNow);
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 }, time: time);
        using var http = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };
        var admin = new ServiceBusFaultClient(http, scope.Emulator.Options.SharedAccessKeyName, scope.Emulator.Options.SharedAccessKey);
        await using var sender = scope.Client.CreateSender(Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("before"));

        var paused = await admin.PauseAsync(TimeSpan.FromSeconds(60));
        Assert.Equal(time.GetUtcNow() + TimeSpan.FromSeconds(60), paused.PausedUntil);
        var gate = scope.Emulator.Faults.Gate;
        var held = gate.HeldFrames;
        var send = sender.SendMessageAsync(new ServiceBusMessage("during"));

        // The transfer reached the emulator and is held there: not stored while the namespace is paused.
        Assert.True(await Eventually.TrueAsync(() => gate.HeldFrames > held, Patience), "The send never reached the paused emulator.");
        Assert.Equal(1, scope.Metrics.Counters.IncomingMessages);
        Assert.False(send.IsCompleted);

        time.Advance(TimeSpan.FromSeconds(60));
        await send.WaitAsync(Patience);
        await using var receiver = scope.Client.CreateReceiver(Queue);
        var messages = await receiver.PeekMessagesAsync(10, fromSequenceNumber: 0);
        Assert.Equal(["before", "during"], messages.Select(m => m.Body.ToString()));
        // AMQP timestamps are whole milliseconds.
        var pauseEnd = DateTimeOffset.FromUnixTimeMilliseconds(paused.PausedUntil!.Value.ToUnixTimeMilliseconds());
        Assert.True(messages[1].EnqueuedTime >= pauseEnd, $"Stored at {messages[1].EnqueuedTime:O}, during the pause (until {paused.PausedUntil:O}).");
        Assert.Equal(1, Injected(scope.Emulator, ServiceBusFaultKind.NamespacePause, entity: string.Empty));
        Assert.Null((await admin.GetAsync()).PausedUntil);
    }

    [Fact]
    public async Task The_admin_endpoint_sets_reads_and_clears_the_rules()
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 });
        using var http = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };
        var admin = new ServiceBusFaultClient(http, scope.Emulator.Options.SharedAccessKeyName, scope.Emulator.Options.SharedAccessKey);

        var set = await admin.SetAsync(new ServiceBusFaultOptions { Seed = 3, Rules = [Rule(ServiceBusFaultKind.ServerBusySend, 0.5, 10)] });
        var rule = Assert.Single(set.Faults.Rules);
        Assert.Equal((3, ServiceBusFaultKind.ServerBusySend, Queue, 0.5, (long?)10), (set.Faults.Seed, rule.Kind, rule.Entity, rule.Probability, rule.MaxCount));
        var read = await admin.GetAsync();
        Assert.Equal((3, ServiceBusFaultKind.ServerBusySend), (read.Faults.Seed, Assert.Single(read.Faults.Rules).Kind));
        Assert.Single(scope.Emulator.Faults.Options.Rules);

        Assert.Empty((await admin.ClearAsync()).Faults.Rules);
        Assert.Empty(scope.Emulator.Faults.Options.Rules);
    }

    [Theory]
    [InlineData("""{"rules": [{"kind": "Meteor", "probability": 0.1}]}""", "faults.rules[0].kind must be one of")]
    [InlineData("""{"rules": [{"kind": "ServerBusySend", "probability": 1.5}]}""", "faults.rules[0].probability must be a number between 0 and 1")]
    [InlineData("""{"rules": [{"kind": "ServerBusySend"}]}""", "faults.rules[0].probability is required")]
    [InlineData("""{"rules": [{"kind": "ServerBusySend", "probability": 0.1, "entity": "nope"}]}""", "the namespace has no entity 'nope'")]
    [InlineData("""{"rules": [{"kind": "NamespacePause", "probability": 0.1}]}""", "faults.rules[0].kind must be one of")]
    [InlineData("""{"ruels": []}""", "faults.ruels is not a fault setting")]
    [InlineData("""not json""", "The body must be a JSON object")]
    [InlineData("""{"seed": 1, "rules": [], "seed": 2}""", "Duplicate property 'seed'")]
    [InlineData("""{"seed": 1, "Seed": 2}""", "faults.Seed is given twice")]
    [InlineData("""{"rules": [{"kind": "ServerBusySend", "probability": 0.1, "probability": 1}]}""", "Duplicate property 'probability'")]
    [InlineData("""{"rules": [{"kind": "ServerBusySend", "probability": 0.1, "Probability": 1}]}""", "faults.rules[0].Probability is given twice")]
    public async Task A_bad_fault_setting_is_a_400_naming_it_and_changes_nothing(string body, string expected)
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 });

        using var response = await SendSignedAsync(scope, HttpMethod.Put, "_emulator/faults", body);

        await AssertRefusedNamingAsync(response, expected);
        Assert.Empty(scope.Emulator.Faults.Options.Rules);
    }

    [Theory]
    [InlineData("""{"seconds": 1, "seconds": 600}""", "Duplicate property 'seconds'")]
    [InlineData("""{"seconds": 1, "Seconds": 600}""", "pause.Seconds is given twice")]
    public async Task A_pause_naming_its_length_twice_is_a_400_naming_it_and_pauses_nothing(string body, string expected)
    {
        // Which of the two lengths would win is up to the reader; neither is taken.
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 });

        using var response = await SendSignedAsync(scope, HttpMethod.Post, "_emulator/faults/pause", body);

        await AssertRefusedNamingAsync(response, expected);
        Assert.False(scope.Emulator.Faults.Gate.IsHeld);
    }

    [Fact]
    public async Task A_change_without_a_valid_signature_is_a_401_and_changes_nothing()
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 });
        using var http = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };
        var forged = new ServiceBusFaultClient(http, scope.Emulator.Options.SharedAccessKeyName, Convert.ToBase64String(new byte[32]));

        var refused = await Assert.ThrowsAsync<HttpRequestException>(() => forged.PauseAsync(TimeSpan.FromSeconds(5)));
        using var unsigned = await http.DeleteAsync("_emulator/faults");

        Assert.Equal((HttpStatusCode.Unauthorized, HttpStatusCode.Unauthorized), (refused.StatusCode, unsigned.StatusCode));
        Assert.False(scope.Emulator.Faults.Gate.IsHeld);
        Assert.Empty(scope.Emulator.GetMetrics().Faults);
    }

    [Fact]
    public void Faults_given_at_start_are_read_from_config_and_a_bad_one_names_its_path()
    {
        var config = """
            {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [{"Name": "orders"}]}]},
             "Emulator": {"Faults": {"seed": 5, "rules": [{"kind": "ConnectionForced", "entity": "orders", "probability": 0.2, "maxCount": 3}]}}}
            """;
        var path = Path.Combine(Path.GetTempPath(), $"servicebus-faults-{Guid.NewGuid():N}.json");
        File.WriteAllText(path, config);
        var options = ServiceBusEmulatorOptions.LoadConfigFile(path);
        var rule = Assert.Single(options.Faults.Rules);
        Assert.Equal((5, ServiceBusFaultKind.ConnectionForced, "orders", 0.2, (long?)3), (options.Faults.Seed, rule.Kind, rule.Entity, rule.Probability, rule.MaxCount));

        File.WriteAllText(path, config.Replace("0.2", "2", StringComparison.Ordinal));
        var bad = Assert.Throws<EmulatorConfigurationException>(() => ServiceBusEmulatorOptions.LoadConfigFile(path));
        File.Delete(path);
        Assert.Contains("Emulator.Faults.rules[0].probability must be a number between 0 and 1", bad.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_rule_given_at_start_for_an_entity_the_namespace_lacks_stops_the_start()
    {
        var failure = await Assert.ThrowsAsync<EmulatorConfigurationException>(() => EmulatorScope.StartAsync(emulator: o => o with
        {
            Faults = new ServiceBusFaultOptions { Rules = [new ServiceBusFaultRule { Kind = ServiceBusFaultKind.ServerBusySend, Entity = "missing", Probability = 1 }] },
        }));
        Assert.Contains("the namespace has no entity 'missing'", failure.Message, StringComparison.Ordinal);
    }

    /// <summary>A change to the faults, signed with the namespace's key as <see cref="ServiceBusFaultClient"/> signs it, with a raw body.</summary>
    private static async Task<HttpResponseMessage> SendSignedAsync(EmulatorScope scope, HttpMethod method, string path, string body)
    {
        using var http = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };
        using var request = new HttpRequestMessage(method, path) { Content = new StringContent(body, Encoding.UTF8, "application/json") };
        request.Headers.TryAddWithoutValidation("Authorization", Broker.SharedAccessSignature.Create("emulator", scope.Emulator.Options.SharedAccessKeyName, scope.Emulator.Options.SharedAccessKey, TimeSpan.FromMinutes(5)).ToString());
        return await http.SendAsync(request);
    }

    private static async Task AssertRefusedNamingAsync(HttpResponseMessage response, string expected)
    {
        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        using var problem = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        Assert.Contains(expected, problem.RootElement.GetProperty("detail").GetString(), StringComparison.Ordinal);
    }
}
