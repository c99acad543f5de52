using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Sdk = Azure.Messaging.ServiceBus;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>The defects the generated hostile-input tests found in the broker's parsers, one input each.</summary>
public sealed class BrokerRegressionTests
{
    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);

    [Theory]
    [InlineData("99999999999999")] // after the year 9999
    [InlineData("-99999999999999")] // before the year 1
    [InlineData("9223372036854775807")]
    public void A_token_whose_expiry_no_date_can_hold_is_not_a_shared_access_signature(string se)
    {
        // DateTimeOffset.FromUnixTimeSeconds threw, and the put-token request was never answered.
        var sas = SharedAccessSignature.TryParse($"SharedAccessSignature sr=sb%3a%2f%2fhost%2fq&sig=abc&se={se}&skn=RootManageSharedAccessKey", out var problem);

        Assert.Null(sas);
        Assert.Contains("se=", problem, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("SharedAccessSignature sr=a&sig=b&skn=c", "lacks se")]
    [InlineData("SharedAccessSignature sr=a&sig", "name=value")]
    [InlineData("Bearer x", "does not start with 'SharedAccessSignature'")]
    public void A_malformed_token_is_refused_naming_what_is_wrong(string token, string naming)
    {
        Assert.Null(SharedAccessSignature.TryParse(token, out var problem));
        Assert.Contains(naming, problem, StringComparison.Ordinal);
    }

    [Fact]
    public void A_sql_expression_longer_than_the_service_allows_is_refused()
    {
        // The service's limit is 1024 characters; without it, a deep expression exhausted the parser's stack.
        var deep = new string('(', 5_000) + "1=1" + new string(')', 5_000);

        var error = Assert.Throws<SqlRuleException>(() => new SqlFilter(deep));

        Assert.Contains("limit is 1024", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_sql_action_with_more_expressions_than_the_service_allows_is_refused()
    {
        var action = string.Join("; ", Enumerable.Range(0, SqlAction.MaxSteps + 1).Select(i => $"SET p{i} = {i}"));

        var error = Assert.Throws<SqlRuleException>(() => new SqlAction(action));

        Assert.Contains("limit is 32", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData(15, 4_000)]
    [InlineData(500, 100_000)]
    public async Task A_like_pattern_of_many_wildcards_is_matched_in_bounded_time(int wildcards, int length)
    {
        // As a backtracking regular expression, fifteen '%'s against a long property ran for ages; as a non-backtracking
        // one, five hundred (within the 1,024-character limit) took seconds per message against a few thousand
        // characters, and far longer against a large property.
        var filter = new SqlFilter("p LIKE '" + string.Concat(Enumerable.Repeat("%a", wildcards)) + "%b'");
        var message = new AmqpMessage { ApplicationProperties = new Dictionary<string, object?> { ["p"] = new string('a', length) } };

        var matches = await Task.Run(() => filter.Matches(message)).WaitAsync(Bound);

        Assert.False(matches);
    }

    [Theory]
    [InlineData("drone", "dr%", true)]
    [InlineData("drone", "dr_ne", true)]
    [InlineData("drone", "%one", true)]
    [InlineData("drone", "%o%e%", true)]
    [InlineData("drone", "d%x", false)]
    [InlineData("drone", "dron", false)]
    [InlineData("drone", "drone_", false)]
    [InlineData("", "%", true)]
    [InlineData("", "_", false)]
    [InlineData("a.b", "a.b", true)]
    [InlineData("axb", "a.b", false)]
    [InlineData("abcabd", "%ab_", true)]
    [InlineData("line\nbreak", "line%break", true)]
    public void Like_matches_any_run_for_percent_any_one_character_for_underscore_and_the_rest_literally(string value, string pattern, bool expected) =>
        Assert.Equal(expected, SqlNode.Like.Matches(value, pattern));

    [Fact]
    public async Task A_sequence_number_asked_for_twice_is_received_once()
    {
        // receive-by-sequence-number with a repeated number handed the same deferred message out twice.
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        await sender.SendMessageAsync(new Sdk.ServiceBusMessage("once") { MessageId = "d" });
        var first = await receiver.ReceiveMessageAsync(Bound);
        await receiver.DeferMessageAsync(first!);

        var deferred = await receiver.ReceiveDeferredMessagesAsync([first!.SequenceNumber, first.SequenceNumber]);
        await receiver.CompleteMessageAsync(deferred[0]);

        Assert.Single(deferred);
        Assert.Equal(0, scope.Metrics.ActiveMessages + scope.Metrics.DeferredMessages);
    }
}
