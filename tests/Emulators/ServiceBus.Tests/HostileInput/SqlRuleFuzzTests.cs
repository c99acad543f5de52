using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.TestSupport;
using FsCheck;
using FsCheck.Fluent;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// Generated hostile text for the SQL filter and action parser: each either parses and then evaluates against a
/// message (or applies to a copy of it) without an exception, or is refused with a <see cref="SqlRuleException"/>
/// (the 400 of add-rule) naming what is wrong; nothing hangs.
/// </summary>
[Collection(HostileInputCollection.Name)]
public sealed class SqlRuleFuzzTests(ITestOutputHelper output)
{
    private static AmqpMessage Message() => new()
    {
        Properties = new MessageProperties { MessageId = "m-1", Subject = "drone", CorrelationId = "c-1", To = "hub", ContentType = new AmqpSymbol("application/json") },
        ApplicationProperties = new Dictionary<string, object?>(StringComparer.Ordinal)
        {
            ["priority"] = "high", ["weight"] = 12, ["fragile"] = true, ["zone"] = null, ["p"] = new string('a', 2_000), ["big"] = long.MaxValue, ["nan"] = double.NaN,
        },
    };

    [Fact]
    public void Sql_filters_and_actions_parse_and_run_or_are_refused_naming_the_problem()
    {
        var parsed = 0;
        HostileInputRunner.Report(output, "SQL rule filters and actions", "refused with a SqlRuleException or evaluated; no other exception or hang",
            ("filters", () => HostileInputRunner.Run("sql filters", Arb.From(SqlGen.Filter), HostileInputRunner.Cases, text => parsed += Check(text, () => new SqlFilter(text).Matches(Message())), () => { })),
            ("actions", () => HostileInputRunner.Run("sql actions", Arb.From(SqlGen.Action), HostileInputRunner.Cases, text => parsed += Check(text, () =>
            {
                new SqlAction(text).Apply(Message());
                return true;
            }), () => { })));

        output.WriteLine($"{parsed:N0} expressions parsed and ran");
        Assert.True(parsed > 0);
    }

    private static int Check(string text, Func<bool> run)
    {
        var (_, error) = HostileInputRunner.Bounded(text, TimeSpan.FromSeconds(20), run);
        return error switch
        {
            null => 1,
            SqlRuleException refused when !string.IsNullOrWhiteSpace(refused.Message) => 0,
            _ => throw new InvalidOperationException($"'{text}': {error.GetType().Name} escaped instead of a SqlRuleException: {error}"),
        };
    }
}
