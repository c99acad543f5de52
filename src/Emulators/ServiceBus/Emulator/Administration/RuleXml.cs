using System.Globalization;
using System.Xml;
using System.Xml.Linq;
using DroneDelivery.Emulators.ServiceBus.Broker;
using static DroneDelivery.Emulators.ServiceBus.Administration.AtomNames;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// Rule descriptions in the administration API's XML: a <c>Filter</c> whose <c>i:type</c> is <c>SqlFilter</c>,
/// <c>TrueFilter</c>, <c>FalseFilter</c> or <c>CorrelationFilter</c>, an optional <c>Action</c> (<c>SqlRuleAction</c>
/// or <c>EmptyRuleAction</c>) and a <c>Name</c>; correlation properties are typed values (<c>i:type="d6p1:string"</c>,
/// d6p1 being XML Schema). The same SQL subset as Config.json and the rule manager holds; SQL parameters are not supported.
/// </summary>
internal static class RuleXml
{
    private const string CompatibilityLevel = "20";

    /// <summary>Reads a rule; <paramref name="name"/> is the path's (null for a subscription's default rule, named in the body).</summary>
    /// <exception cref="AdministrationException">400: a filter or action the emulator refuses, or a name that is not the path's.</exception>
    public static RuleOptions Read(XElement? description, string? name, string owner)
    {
        var named = description?.Element(Connect + "Name")?.Value;
        if (name is not null && named is not null && !string.Equals(named, name, StringComparison.OrdinalIgnoreCase))
        {
            throw AdministrationException.BadRequest("The ID in the request does not match the ID in the payload.");
        }

        var rule = Filter(description?.Element(Connect + "Filter")) with { Name = name ?? named ?? SubscriptionOptions.DefaultRuleName };
        rule = rule with { ActionSqlExpression = Action(description?.Element(Connect + "Action")) };
        try
        {
            rule.Validate(owner);
        }
        catch (EmulatorConfigurationException e)
        {
            throw AdministrationException.BadRequest(e.Message);
        }

        return rule;
    }

    public static XElement Write(SubscriptionRule rule)
    {
        var options = rule.Options;
        return new XElement(
            Connect + "RuleDescription",
            new XAttribute(XNamespace.Xmlns + "i", SchemaInstance),
            WriteFilter(options),
            string.IsNullOrWhiteSpace(options.ActionSqlExpression)
                ? new XElement(Connect + "Action", new XAttribute(SchemaInstance + "type", "EmptyRuleAction"))
                : Sql("Action", "SqlRuleAction", options.ActionSqlExpression),
            new XElement(Connect + "CreatedAt", XmlConvert.ToString(rule.CreatedAt, XmlDateTimeSerializationMode.Utc)),
            new XElement(Connect + "Name", options.Name));
    }

    private static RuleOptions Filter(XElement? filter)
    {
        NoParameters(filter, "filter");
        var type = filter is null ? "TrueFilter" : TypeOf(filter);
        var sql = filter?.Element(Connect + "SqlExpression")?.Value;
        return type switch
        {
            "TrueFilter" => new RuleOptions { Name = string.Empty },
            "FalseFilter" => new RuleOptions { Name = string.Empty, SqlExpression = "1=0" },
            "SqlFilter" when !string.IsNullOrWhiteSpace(sql) => new RuleOptions { Name = string.Empty, SqlExpression = sql.Trim() == "1=1" ? null : sql },
            "SqlFilter" => throw AdministrationException.BadRequest("A SqlFilter needs a SqlExpression."),
            "CorrelationFilter" => new RuleOptions { Name = string.Empty, CorrelationFilter = Correlation(filter!) },
            _ => throw AdministrationException.BadRequest($"The filter type '{type}' is not supported: use SqlFilter, TrueFilter, FalseFilter or CorrelationFilter."),
        };
    }

    private static string? Action(XElement? action)
    {
        NoParameters(action, "action");
        var type = action is null ? null : TypeOf(action);
        return type switch
        {
            null or "EmptyRuleAction" => null,
            "SqlRuleAction" => action!.Element(Connect + "SqlExpression")?.Value,
            _ => throw AdministrationException.BadRequest($"The action type '{type}' is not supported: use SqlRuleAction or EmptyRuleAction."),
        };
    }

    private static void NoParameters(XElement? element, string what)
    {
        if (element?.Element(Connect + "Parameters") is { HasElements: true })
        {
            throw AdministrationException.BadRequest($"The {what}'s Parameters are not supported by this emulator: write the values into the SQL expression.");
        }
    }

    private static CorrelationFilterOptions Correlation(XElement filter)
    {
        string? Field(string name) => filter.Element(Connect + name)?.Value is { Length: > 0 } value ? value : null;
        var properties = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var pair in filter.Element(Connect + "Properties")?.Elements(Connect + "KeyValueOfstringanyType") ?? [])
        {
            var key = pair.Element(Connect + "Key")?.Value;
            var value = pair.Element(Connect + "Value");
            if (string.IsNullOrEmpty(key) || value is null)
            {
                throw AdministrationException.BadRequest("Each correlation filter property needs a Key and a Value.");
            }

            if (!properties.TryAdd(key, ValueOf(value, key)))
            {
                throw AdministrationException.BadRequest($"The correlation filter property '{key}' is given twice.");
            }
        }

        return CorrelationFilterOptions.FromFields(Field, properties);
    }

    /// <summary>A typed property value, as the .NET SDK writes them (string, int, long, boolean, double, dateTime, duration).</summary>
    private static object ValueOf(XElement value, string key)
    {
        var text = value.Value;
        try
        {
            return TypeOf(value) switch
            {
                null or "string" => text,
                "int" => XmlConvert.ToInt32(text),
                "long" => XmlConvert.ToInt64(text),
                "boolean" => XmlConvert.ToBoolean(text),
                "double" => XmlConvert.ToDouble(text),
                "dateTime" => XmlConvert.ToDateTime(text, XmlDateTimeSerializationMode.Utc),
                "duration" => XmlConvert.ToTimeSpan(text),
                var other => throw AdministrationException.BadRequest($"The correlation filter property '{key}' has the type '{other}', which is not supported."),
            };
        }
        catch (Exception e) when (e is FormatException or OverflowException)
        {
            throw AdministrationException.BadRequest($"The correlation filter property '{key}' does not hold a value of its type: {e.Message}");
        }
    }

    private static XElement WriteFilter(RuleOptions options)
    {
        if (options.CorrelationFilter is { } c)
        {
            return new XElement(
                Connect + "Filter",
                new XAttribute(SchemaInstance + "type", "CorrelationFilter"),
                CorrelationFilterOptions.FieldNames.Zip(c.FieldValues).Where(f => f.Second is not null).Select(f => new XElement(Connect + f.First, f.Second)),
                new XElement(Connect + "Properties", c.Properties.Select(p => new XElement(
                    Connect + "KeyValueOfstringanyType",
                    new XElement(Connect + "Key", p.Key),
                    WriteValue(p.Value)))));
        }

        var sql = options.SqlExpression;
        return string.IsNullOrWhiteSpace(sql) ? Sql("Filter", "TrueFilter", "1=1")
            : sql.Trim() == "1=0" ? Sql("Filter", "FalseFilter", "1=0")
            : Sql("Filter", "SqlFilter", sql);
    }

    private static XElement Sql(string element, string type, string expression) => new(
        Connect + element,
        new XAttribute(SchemaInstance + "type", type),
        new XElement(Connect + "SqlExpression", expression),
        new XElement(Connect + "CompatibilityLevel", CompatibilityLevel));

    private static XElement WriteValue(object? value)
    {
        var (type, text) = value switch
        {
            int i => ("int", XmlConvert.ToString(i)),
            long l => ("long", XmlConvert.ToString(l)),
            bool b => ("boolean", XmlConvert.ToString(b)),
            double d => ("double", XmlConvert.ToString(d)),
            DateTime t => ("dateTime", XmlConvert.ToString(t, XmlDateTimeSerializationMode.Utc)),
            TimeSpan t => ("duration", XmlConvert.ToString(t)),
            _ => ("string", Convert.ToString(value, CultureInfo.InvariantCulture) ?? string.Empty),
        };
        // The service's own prefix: the JavaScript SDK reads the type as what follows the first five characters of i:type.
        return new XElement(Connect + "Value", new XAttribute(XNamespace.Xmlns + "d6p1", Schema), new XAttribute(SchemaInstance + "type", "d6p1:" + type), text);
    }
}
