using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>
/// Rules as the management operations carry them: plain maps in add-rule requests, described lists
/// (rule description, filters, actions) in enumerate-rules answers, with the service's descriptor codes.
/// </summary>
internal static class RuleCodec
{
    public const string RuleName = "rule-name";
    public const string RuleDescription = "rule-description";

    private const ulong RuleDescriptionCode = 0x0000013700000004;
    private const ulong EmptyActionCode = 0x0000013700000005;
    private const ulong SqlActionCode = 0x0000013700000006;
    private const ulong SqlFilterCode = 0x0000001370000006;
    private const ulong TrueFilterCode = 0x0000001370000007;
    private const ulong FalseFilterCode = 0x0000001370000008;
    private const ulong CorrelationFilterCode = 0x0000001370000009;
    private const int CompatibilityLevel = 20;

    /// <summary>The correlation filter's fields in the order of its described list (that of <see cref="CorrelationFilterOptions.FieldNames"/>).</summary>
    private static readonly string[] CorrelationFields = ["correlation-id", "message-id", "to", "reply-to", "label", "session-id", "reply-to-session-id", "content-type"];

    public static RuleOptions Decode(string name, Dictionary<object, object?> description)
    {
        var action = (description.Entry("sql-rule-action") as Dictionary<object, object?>)?.Entry("expression")?.ToString();
        if (description.Entry("correlation-filter") is Dictionary<object, object?> correlation)
        {
            var properties = new Dictionary<string, object?>(StringComparer.Ordinal);
            if (correlation.Entry("properties") is Dictionary<object, object?> map)
            {
                foreach (var (key, value) in map)
                {
                    properties[key is AmqpSymbol s ? s.Value : key.ToString()!] = value;
                }
            }

            string? Field(string field) => correlation.Entry(CorrelationFields[Array.IndexOf(CorrelationFilterOptions.FieldNames, field)])?.ToString();
            return new RuleOptions { Name = name, ActionSqlExpression = action, CorrelationFilter = CorrelationFilterOptions.FromFields(Field, properties) };
        }

        var sql = (description.Entry("sql-filter") as Dictionary<object, object?>)?.Entry("expression")?.ToString();
        return new RuleOptions { Name = name, SqlExpression = sql is null or "1=1" ? null : sql, ActionSqlExpression = action };
    }

    public static DescribedValue Encode(SubscriptionRule rule)
    {
        var options = rule.Options;
        object filter;
        if (options.CorrelationFilter is { } c)
        {
            var properties = c.Properties.ToDictionary(p => (object)p.Key, p => p.Value);
            filter = new DescribedValue(CorrelationFilterCode, new List<object?>([.. c.FieldValues, properties]));
        }
        else if (string.IsNullOrWhiteSpace(options.SqlExpression))
        {
            filter = new DescribedValue(TrueFilterCode, new List<object?>());
        }
        else if (options.SqlExpression.Trim() == "1=0")
        {
            filter = new DescribedValue(FalseFilterCode, new List<object?>());
        }
        else
        {
            filter = new DescribedValue(SqlFilterCode, new List<object?> { options.SqlExpression, CompatibilityLevel });
        }

        var action = string.IsNullOrWhiteSpace(options.ActionSqlExpression)
            ? new DescribedValue(EmptyActionCode, new List<object?>())
            : new DescribedValue(SqlActionCode, new List<object?> { options.ActionSqlExpression, CompatibilityLevel });
        return new DescribedValue(RuleDescriptionCode, new List<object?> { filter, action, options.Name, rule.CreatedAt == default ? DateTime.UnixEpoch : rule.CreatedAt });
    }
}
