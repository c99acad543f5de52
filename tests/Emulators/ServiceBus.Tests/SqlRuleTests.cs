using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;
using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>The SQL filter and action subset, and the Config.json shape of topics.</summary>
public sealed class SqlRuleTests
{
    private static AmqpMessage Message() => new()
    {
        Properties = new MessageProperties { MessageId = "m-1", Subject = "drone", CorrelationId = "c-1", To = "hub", ReplyTo = "back", ContentType = new AmqpSymbol("application/json") },
        ApplicationProperties = new Dictionary<string, object?>(StringComparer.Ordinal) { ["priority"] = "high", ["weight"] = 12, ["fragile"] = true, ["zone"] = null },
    };

    [Theory]
    [InlineData("1=1", true)]
    [InlineData("TRUE", true)]
    [InlineData("FALSE", false)]
    [InlineData("priority = 'high'", true)]
    [InlineData("user.priority = 'high'", true)]
    [InlineData("priority <> 'high'", false)]
    [InlineData("priority != 'low'", true)]
    [InlineData("weight > 10 AND weight <= 12", true)]
    [InlineData("weight >= 12.5 OR weight < 0", false)]
    [InlineData("NOT (weight < 5)", true)]
    [InlineData("sys.Label = 'drone'", true)]
    [InlineData("sys.Subject = 'drone'", true)]
    [InlineData("sys.MessageId = 'm-1' AND sys.CorrelationId = 'c-1'", true)]
    [InlineData("sys.To = 'hub' AND sys.ReplyTo = 'back' AND sys.ContentType = 'application/json'", true)]
    [InlineData("sys.SessionId IS NULL", true)]
    [InlineData("priority IN ('low', 'high')", true)]
    [InlineData("priority NOT IN ('low', 'high')", false)]
    [InlineData("sys.Label LIKE 'dr%'", true)]
    [InlineData("sys.Label LIKE 'dr_ne'", true)]
    [InlineData("sys.Label NOT LIKE 'dr%'", false)]
    [InlineData("missing IS NULL", true)]
    [InlineData("priority IS NOT NULL", true)]
    [InlineData("EXISTS(zone) AND NOT EXISTS(missing)", true)]
    [InlineData("fragile = TRUE", true)]
    [InlineData("missing = 'x'", false)]
    [InlineData("NOT (missing = 'x')", false)]
    [InlineData("missing = 'x' OR weight = 12", true)]
    [InlineData("[priority] = 'high'", true)]
    [InlineData("priority = 'it''s'", false)]
    [InlineData("weight = -1 OR weight = 12", true)]
    public void Sql_filter_evaluates(string expression, bool expected) =>
        Assert.Equal(expected, new SqlFilter(expression).Matches(Message()));

    [Theory]
    [InlineData("priority = ", 11)]
    [InlineData("priority = 'high", 11)]
    [InlineData("priority == 'high'", 10)]
    [InlineData("weight + 1 > 2", 7)]
    [InlineData("sys.Unknown = 1", 0)]
    [InlineData("other.name = 1", 0)]
    [InlineData("(priority = 'high'", 18)]
    [InlineData("priority IN 'high'", 12)]
    [InlineData("priority LIKE high", 14)]
    [InlineData("priority IS 'x'", 12)]
    [InlineData("priority = 'high' extra", 18)]
    [InlineData("upper(priority) = 'HIGH'", 5)]
    public void Sql_filter_outside_the_subset_is_refused_with_its_position(string expression, int position)
    {
        var error = Assert.Throws<SqlRuleException>(() => new SqlFilter(expression));
        Assert.Equal(position, error.Position);
    }

    [Fact]
    public void Sql_action_sets_and_removes_properties()
    {
        var message = Message();
        new SqlAction("SET routed = 'yes', copy = priority; REMOVE weight; SET sys.Label = 'relabelled'").Apply(message);

        Assert.Equal("yes", message.ApplicationProperties!["routed"]);
        Assert.Equal("high", message.ApplicationProperties["copy"]);
        Assert.False(message.ApplicationProperties.ContainsKey("weight"));
        Assert.Equal("relabelled", message.Properties!.Subject);
    }

    [Theory]
    [InlineData("", 0)]
    [InlineData("UPDATE x = 1", 0)]
    [InlineData("SET x 1", 6)]
    [InlineData("SET x = 1 REMOVE y", 10)]
    public void Sql_action_outside_the_subset_is_refused(string expression, int position)
    {
        var error = Assert.Throws<SqlRuleException>(() => new SqlAction(expression));
        Assert.Equal(position, error.Position);
    }

    [Fact]
    public void Correlation_filter_needs_every_set_field()
    {
        var filter = new CorrelationFilter(new CorrelationFilterOptions { Label = "drone", CorrelationId = "c-1", Properties = new Dictionary<string, object?> { ["weight"] = 12L } });
        var other = new CorrelationFilter(new CorrelationFilterOptions { Label = "drone", To = "elsewhere" });

        Assert.True(filter.Matches(Message()));
        Assert.False(other.Matches(Message()));
    }

    [Fact]
    public void Config_json_topics_subscriptions_and_rules_load_in_the_official_shape()
    {
        var path = Path.Combine(Path.GetTempPath(), $"sb-topics-{Guid.NewGuid():N}.json");
        File.WriteAllText(path, """
        {
          "UserConfig": {
            "Namespaces": [{
              "Name": "sbemulatorns",
              "Queues": [],
              "Topics": [{
                "Name": "topic.1",
                "Properties": { "DefaultMessageTimeToLive": "PT1H", "DuplicateDetectionHistoryTimeWindow": "PT20S", "RequiresDuplicateDetection": false },
                "Subscriptions": [
                  { "Name": "subscription.1",
                    "Properties": { "DeadLetteringOnMessageExpiration": false, "DefaultMessageTimeToLive": "PT1H", "LockDuration": "PT1M", "MaxDeliveryCount": 3, "ForwardDeadLetteredMessagesTo": "", "ForwardTo": "", "RequiresSession": false },
                    "Rules": [
                      { "Name": "app-prop-filter-1", "Properties": { "FilterType": "Correlation",
                        "CorrelationFilter": { "ContentType": "application/text", "CorrelationId": "id1", "Label": "subject1", "MessageId": "msgid1", "ReplyTo": "someQueue", "ReplyToSessionId": "sessionId", "SessionId": "session1", "To": "xyz", "Properties": { "prop1": "value1" } } } },
                      { "Name": "sql", "Properties": { "FilterType": "Sql", "SqlFilter": { "SqlExpression": "sys.Label = 'x'" }, "Action": { "SqlExpression": "SET processed = true" } } }
                    ] },
                  { "Name": "subscription.2" }
                ]
              }]
            }],
            "Logging": { "Type": "File" }
          }
        }
        """);
        try
        {
            var options = ServiceBusEmulatorOptions.LoadConfigFile(path);
            options.Validate();
            var topic = Assert.Single(options.Topics);
            Assert.Equal(TimeSpan.FromHours(1), topic.DefaultMessageTimeToLive);
            Assert.Equal(3, topic.Subscriptions[0].MaxDeliveryCount);
            Assert.Equal("value1", topic.Subscriptions[0].Rules[0].CorrelationFilter!.Properties["prop1"]);
            Assert.Equal("sessionId", topic.Subscriptions[0].Rules[0].CorrelationFilter!.ReplyToSessionId);
            Assert.Equal("SET processed = true", topic.Subscriptions[0].Rules[1].ActionSqlExpression);
            Assert.Equal(SubscriptionOptions.DefaultRuleName, Assert.Single(topic.Subscriptions[1].EffectiveRules).Name);
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public void Bad_topic_entries_are_refused_at_start_up_with_a_message_naming_them()
    {
        var badSql = new ServiceBusEmulatorOptions
        {
            Topics = [new TopicOptions { Name = "t", Subscriptions = [new SubscriptionOptions { Name = "s", Rules = [new RuleOptions { Name = "r", SqlExpression = "a = = 1" }] }] }],
        };
        var twice = new ServiceBusEmulatorOptions
        {
            Topics = [new TopicOptions { Name = "t", Subscriptions = [new SubscriptionOptions { Name = "s" }, new SubscriptionOptions { Name = "S" }] }],
        };

        var sql = Assert.Throws<EmulatorConfigurationException>(badSql.Validate);
        var duplicate = Assert.Throws<EmulatorConfigurationException>(twice.Validate);

        Assert.Contains("t/Subscriptions/s", sql.Message, StringComparison.Ordinal);
        Assert.Contains("\"a = = 1\"", sql.Message, StringComparison.Ordinal);
        Assert.Contains("position 4", sql.Message, StringComparison.Ordinal);
        Assert.Contains("subscription 'S' is defined twice", duplicate.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void RequiresSession_is_read_from_Config_json_for_queues_and_subscriptions()
    {
        var path = Path.Combine(Path.GetTempPath(), $"sb-topics-{Guid.NewGuid():N}.json");
        File.WriteAllText(path, """
            { "UserConfig": { "Namespaces": [{ "Name": "ns",
              "Queues": [{ "Name": "q", "Properties": { "RequiresSession": true } }, { "Name": "plain" }],
              "Topics": [{ "Name": "t", "Subscriptions": [{ "Name": "s", "Properties": { "RequiresSession": true } }, { "Name": "other" }] }] }] } }
            """);
        try
        {
            var options = ServiceBusEmulatorOptions.LoadConfigFile(path);
            options.Validate();

            Assert.True(options.Queues[0].RequiresSession);
            Assert.False(options.Queues[1].RequiresSession);
            Assert.True(options.Topics[0].Subscriptions[0].RequiresSession);
            Assert.False(options.Topics[0].Subscriptions[1].RequiresSession);
        }
        finally
        {
            File.Delete(path);
        }
    }
}
