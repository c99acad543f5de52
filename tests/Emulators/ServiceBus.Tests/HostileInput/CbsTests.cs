using System.Net;
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
/// Hostile <c>$cbs</c> put-token requests: tokens that are almost shared access signatures (fields missing, repeated,
/// out of range, oddly encoded), tokens signed with another key, JWTs, hostile audiences and application properties,
/// bodies of any type. Each is answered 202, 400 or 401 with a description, as the service answers; a token signed
/// with another key is never accepted.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class CbsTests(ITestOutputHelper output)
{
    private const int OverTheWire = 1_000;

    private const string Key = ServiceBusEmulatorOptions.DevelopmentKey;

    /// <summary>One request and whether it must be refused (its signature made with another key, or no signature at all).</summary>
    public sealed record Case(Dictionary<string, object?> Properties, object? Body, bool Forged)
    {
        public AmqpMessage Request() => new() { ApplicationProperties = new Dictionary<string, object?>(Properties, StringComparer.Ordinal), Body = new ValueBody(Body) };

        public override string ToString() =>
            $"properties {string.Join(", ", Properties.Select(p => $"{p.Key}={Show(p.Value)}"))}, body {Show(Body)}{(Forged ? " (forged)" : string.Empty)}";

        private static string Show(object? value) => value switch
        {
            null => "null",
            string s => $"'{(s.Length > 200 ? s[..200] + $"...({s.Length})" : s)}'",
            _ => value.GetType().Name,
        };
    }

    private static Gen<string> Audience =>
        AmqpGen.Pick(
            (3, Gen.Elements("sb://127.0.0.1/orders", "sb://127.0.0.1/events/subscriptions/all", "amqp://127.0.0.1/orders", "orders", "/", "", "sb://", "sb://h/%2e%2e/x", "http://[::1", "sb://h/orders?x#y")),
            (2, Gen.Zip(Gen.Elements("sb://127.0.0.1/", "amqps://x/", "", "https://x:99999/"), AmqpGen.Text).Select(p => p.Item1 + p.Item2)));

    private static Gen<string> FieldValue =>
        AmqpGen.Pick(
            (3, AmqpGen.Text),
            (2, AmqpGen.Text.Select(t => WebUtility.UrlEncode(t) ?? string.Empty)),
            (2, Gen.Elements("0", "-1", "99999999999999", "-99999999999999", "9223372036854775807", "1e9", "0x10", " 1", "253402300800", "-62135596801")),
            (1, Gen.Constant(string.Empty)));

    /// <summary>An almost-token: the prefix in any case or missing, its fields in any order, repeated, missing or hostile.</summary>
    private static Gen<string> AlmostToken =>
        Gen.Zip(
                Gen.Elements("SharedAccessSignature ", "sharedaccesssignature ", "SharedAccessSignature", "SharedAccessSignature  ", "", "Bearer ", "SharedAccessSignature\t"),
                Gen.Choose(0, 6).SelectMany(n => Gen.ArrayOf(Gen.Zip(Gen.Elements("sr", "sig", "se", "skn", "SR", "x", "", "sr ", "=="), FieldValue), n)))
            .SelectMany(p => Gen.Elements("&", ";", "&&", "").Select(sep => p.Item1 + string.Join(sep, p.Item2.Select(f => $"{f.Item1}={f.Item2}"))));

    private static Gen<Case> Requests(Func<string, string, TimeSpan, string> sign) =>
        Gen.Zip(Gen.Zip(Audience, Gen.Choose(0, 5)), Gen.Zip(AmqpGen.Properties, Gen.Choose(-2, 3))).SelectMany(p =>
        {
            var ((audience, kind), (extra, validity)) = p;
            var lifetime = TimeSpan.FromMinutes(validity * 30);
            var token = kind switch
            {
                0 => Gen.Constant<(object?, bool)>((sign(audience, Key, lifetime), false)),
                1 => Gen.Constant<(object?, bool)>((sign(audience, "another-key", lifetime), true)),
                2 => AmqpGen.Mutated(Gen.Constant(System.Text.Encoding.UTF8.GetBytes(sign(audience, Key, lifetime))))
                    .Select(b => ((object?)System.Text.Encoding.UTF8.GetString(b), false)),
                3 => AlmostToken.Select(t => ((object?)t, true)),
                4 => AmqpGen.Value(2).Select(v => (v, true)),
                _ => AmqpGen.Text.Select(t => ((object?)t, true)),
            };
            var properties = Gen.Zip(Gen.Elements<object?>("put-token", "put-token", "put-token", "PUT-TOKEN", null, 42, new AmqpSymbol("put-token")),
                    Gen.Elements<object?>(ServiceBusAmqpNames.SasTokenType, ServiceBusAmqpNames.SasTokenType, ServiceBusAmqpNames.JwtTokenType, "", null, 1))
                .Select(t =>
                {
                    var map = new Dictionary<string, object?>(extra, StringComparer.Ordinal) { ["operation"] = t.Item1, ["type"] = t.Item2, ["name"] = audience };
                    return map;
                });
            return Gen.Zip(properties, token).Select(c => new Case(c.Item1, c.Item2.Item1, c.Item2.Item2));
        });

    [Fact]
    public async Task Put_token_answers_hostile_tokens_and_audiences_with_400_or_401()
    {
        await using var broker = await HostileBroker.StartAsync();
        var cbs = new Namespace(HostileBroker.Options).Cbs;
        var accepted = 0;
        string Sign(string audience, string key, TimeSpan lifetime) => SharedAccessSignature.Create(audience, ServiceBusEmulatorOptions.DefaultKeyName, key, lifetime).ToString();
        var cases = Arb.From(Requests(Sign));

        HostileInputRunner.Report(output, "$cbs put-token", "every answer 202, 400 or 401 with a description; no forged token accepted; no hang or escaped exception",
            ("through the node", () => HostileInputRunner.Run("put-token", cases, HostileInputRunner.Cases, c =>
            {
                var (answer, error) = HostileInputRunner.Bounded(c, HostileBroker.HangBound, () => cbs.PutToken(c.Request(), new ConnectionState()));
                if (error is not null)
                {
                    throw new InvalidOperationException($"{c}: {error.GetType().Name} escaped instead of a 400 or 401: {error}");
                }

                accepted += Check(c, answer.Status, answer.Description) ? 1 : 0;
            }, () => { })),
            ("over AMQP", () => HostileInputRunner.Run("put-token over AMQP", cases, OverTheWire, c =>
            {
                var (status, description, refusal) = broker.Request(ServiceBusAmqpNames.CbsNode, c.Request());
                if (refusal is not null)
                {
                    HostileBroker.CheckCondition(refusal, c.ToString());
                    return;
                }

                Check(c, status, description);
            }, broker.AssertHealthy)));

        output.WriteLine($"{accepted:N0} tokens accepted through the node");
        Assert.True(accepted > 0);
    }

    private static bool Check(Case c, int? status, string? description)
    {
        if (status is not (202 or 400 or 401) || string.IsNullOrWhiteSpace(description))
        {
            throw new InvalidOperationException($"{c}: answered {status?.ToString() ?? "without a status"} '{description}', not 202, 400 or 401 with a description.");
        }

        if (status == 202 && c.Forged)
        {
            throw new InvalidOperationException($"{c}: a token not signed with the namespace's key was accepted.");
        }

        return status == 202;
    }
}
