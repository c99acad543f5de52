using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.TestSupport.HostileInput;
using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.TestSupport;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// Hostile <c>$management</c> requests to a queue, a session queue and a subscription: every operation, with the
/// operation's own keys holding values of any type (lock tokens that are no uuids, sequence numbers as strings,
/// counts at their edges, rule descriptions with hostile SQL), unknown keys and bodies that are no map. Each is answered
/// with a status the service uses and a description; a malformed request is a 400, never a 500, a hang or an
/// escaped exception.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class ManagementTests(ITestOutputHelper output)
{
    private const int OverTheWire = 1_000;

    private static readonly HashSet<int> Statuses = [200, 204, 400, 404, 409, 410, 413, 501];

    private static readonly string[] Nodes = [HostileBroker.Queue, "sessions", HostileBroker.Subscription, HostileBroker.Topic, HostileBroker.Queue + "/$deadletterqueue"];

    private static readonly string[] Operations =
    [
        ServiceBusAmqpNames.RenewLockOperation, ServiceBusAmqpNames.PeekMessageOperation, ServiceBusAmqpNames.UpdateDispositionOperation,
        ServiceBusAmqpNames.ReceiveBySequenceNumberOperation, ServiceBusAmqpNames.ScheduleMessageOperation, ServiceBusAmqpNames.CancelScheduledMessageOperation,
        "com.microsoft:renew-session-lock", "com.microsoft:get-session-state", "com.microsoft:set-session-state", "com.microsoft:add-rule",
        "com.microsoft:remove-rule", "com.microsoft:enumerate-rules",
    ];

    private static readonly string[] Keys =
    [
        ServiceBusAmqpNames.LockTokensKey, ServiceBusAmqpNames.FromSequenceNumberKey, ServiceBusAmqpNames.MessageCountKey, ServiceBusAmqpNames.MessagesKey,
        ServiceBusAmqpNames.MessageKey, ServiceBusAmqpNames.SequenceNumbersKey, ServiceBusAmqpNames.ReceiverSettleModeKey, ServiceBusAmqpNames.DispositionStatusKey,
        ServiceBusAmqpNames.DeadLetterReasonKey, ServiceBusAmqpNames.DeadLetterDescriptionKey, ServiceBusAmqpNames.PropertiesToModifyKey, ServiceBusAmqpNames.SessionIdKey,
        ServiceBusAmqpNames.MessageIdKey, ServiceBusAmqpNames.PartitionKeyKey, ServiceBusAmqpNames.ViaPartitionKeyKey, "session-state", "skip", "top",
        RuleCodec.RuleName, RuleCodec.RuleDescription,
    ];

    /// <summary>One request: the node it goes to, its operation, its other application properties and its body.</summary>
    public sealed record Case(string Node, object? Operation, Dictionary<string, object?> Properties, object? Body)
    {
        public AmqpMessage Request()
        {
            var properties = new Dictionary<string, object?>(Properties, StringComparer.Ordinal) { [ServiceBusAmqpNames.ManagementOperationKey] = Operation };
            return new AmqpMessage { ApplicationProperties = properties, Body = new ValueBody(Body) };
        }

        public override string ToString() =>
            $"{Node}: {Operation} with properties [{string.Join(", ", Properties.Keys)}] and body {Describe(Body)}";

        private static string Describe(object? value) => value switch
        {
            Dictionary<object, object?> map => "{" + string.Join(", ", map.Select(e => $"{e.Key}: {Describe(e.Value)}")) + "}",
            string s => $"'{(s.Length > 100 ? s[..100] + "..." : s)}'",
            null => "null",
            _ => value.GetType().Name,
        };
    }

    /// <summary>Values an operation's keys might be given: the right type at its edges, or any other.</summary>
    private static Gen<object?> KeyValue =>
        AmqpGen.Pick(
            (3, AmqpGen.Value(2)),
            (1, Gen.Elements<object?>(new[] { Guid.Empty, Guid.NewGuid() }, Array.Empty<Guid>(), new[] { 0L, -1L, long.MaxValue, long.MaxValue }, Array.Empty<long>(), new long[5000])),
            (1, Gen.Elements<object?>(0, -1, int.MaxValue, int.MinValue, 0L, long.MinValue, 0u, uint.MaxValue, "completed", "suspended", "abandoned", "defered", new AmqpSymbol("completed"))),
            (1, Gen.Elements<object?>(new DateTime(9999, 12, 31, 23, 59, 59, DateTimeKind.Utc), DateTime.UnixEpoch, DateTime.MinValue.ToUniversalTime())),
            (1, RuleDescription));

    private static Gen<object?> RuleDescription =>
        Gen.Zip(SqlGen.Expression, Gen.Elements("sql-filter", "correlation-filter", "sql-rule-action", "other"))
            .Select(p => (object?)new Dictionary<object, object?> { [p.Item2] = new Dictionary<object, object?> { ["expression"] = p.Item1, ["correlation-id"] = p.Item1 } });

    private static Gen<object?> Body =>
        AmqpGen.Pick(
            (6, Gen.Choose(0, 5).SelectMany(n => Gen.ArrayOf(Gen.Zip(Gen.Elements(Keys).Select(k => (object)k), KeyValue), n)).Select(pairs =>
            {
                var map = new Dictionary<object, object?>();
                foreach (var (key, value) in pairs)
                {
                    map.TryAdd(key, value);
                }

                return (object?)map;
            })),
            (1, AmqpGen.Map(2).Select(m => (object?)m)),
            (1, AmqpGen.Value(2)));

    private static Arbitrary<Case> Cases => Arb.From(
        Gen.Zip(Gen.Zip(Gen.Elements(Nodes), AmqpGen.Pick((6, Gen.Elements<object?>(Operations)), (1, AmqpGen.Text.Select(t => (object?)t)), (1, AmqpGen.Scalar))),
                Gen.Zip(AmqpGen.Properties, Body))
            .Select(p => new Case(p.Item1.Item1, p.Item1.Item2, p.Item2.Item1, p.Item2.Item2)));

    [Fact]
    public async Task Management_answers_hostile_requests_with_the_services_statuses()
    {
        await using var broker = await HostileBroker.StartAsync();
        var direct = new Namespace(HostileBroker.Options);
        var state = new ConnectionState();
        var badRequests = 0;

        HostileInputRunner.Report(output, "$management requests", "every answer a status the service uses with a description; no 500, hang or escaped exception",
            ("through the nodes", () => HostileInputRunner.Run("management", Cases, HostileInputRunner.Cases, c =>
            {
                var node = direct.Management(direct.Find(c.Node)!);
                var request = c.Request();
                var (result, error) = HostileInputRunner.Bounded(c, HostileBroker.HangBound, () =>
                    node.Handle(request.ApplicationProperties.Text(ServiceBusAmqpNames.ManagementOperationKey), (request.Body as ValueBody)?.Value as Dictionary<object, object?> ?? [], state));
                if (error is not null)
                {
                    throw new InvalidOperationException($"{c}: {error.GetType().Name} escaped instead of a 400: {error}");
                }

                Check(c, result!.Status, result.Description);
                badRequests += result.Status == 400 ? 1 : 0;
            }, () => { })),
            ("over AMQP", () => HostileInputRunner.Run("management over AMQP", Cases, OverTheWire, c =>
            {
                var (status, description, refusal) = broker.Request(c.Node + ServiceBusAmqpNames.ManagementNodeSuffix, c.Request());
                if (refusal is not null)
                {
                    HostileBroker.CheckCondition(refusal, c.ToString());
                    return;
                }

                Check(c, status, description);
            }, broker.AssertHealthy)));

        output.WriteLine($"{badRequests:N0} requests answered 400 through the nodes");
        Assert.True(badRequests > 0);
    }

    private static void Check(Case c, int? status, string? description)
    {
        if (status is not { } code || !Statuses.Contains(code) || string.IsNullOrWhiteSpace(description))
        {
            throw new InvalidOperationException($"{c}: answered {status?.ToString() ?? "without a status"} '{description}'.");
        }
    }
}
