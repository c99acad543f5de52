using System.Globalization;

namespace DroneDelivery.Lab.Steps;

/// <summary>
/// Where a service's connections point: the backends' base addresses and the connection strings of
/// Cosmos DB, Service Bus and Redis, and the development issuer's signing keys the public services
/// accept (<c>auth.mode: developmentIssuer</c>). The chart points them at in-cluster Services and
/// Secrets; the lab at its local processes and the key it generated. A connection the service does
/// not use may be null.
/// </summary>
internal sealed record ServiceWiring(
    Func<ServiceKind, string> BackendAddress,
    string? CosmosConnectionString,
    string? ServiceBusConnectionString,
    string? RedisConnectionString,
    IReadOnlyList<string> DevelopmentSigningKeys);

/// <summary>
/// A service's environment as the chart's Deployment renders it from the values (the templates
/// <c>dd.connectionEnv</c> and <c>dd.settingsEnv</c>): the connections of its topology, the queue's
/// MaxDeliveryCount for the workflow, a public service's Authentication section (<c>dd.authenticationEnv</c>),
/// the OTLP endpoint and protocol, and <c>commonSettings</c> merged under the
/// service's own <c>settings</c>, each leaf one variable named by its keys joined with <c>__</c> (a list's
/// items numbered: <c>Cors__AllowedOrigins__0</c>).
/// The chart tests prove this equals the rendered Deployment for every step and service; the pod's
/// own variables (<c>ASPNETCORE_HTTP_PORTS</c>, <c>POD_NAME</c>) are each process's, set where it starts.
/// </summary>
internal static class ServiceEnvironment
{
    public static IReadOnlyDictionary<string, string> Render(ValuesTree values, ServiceKind service, ServiceWiring wiring)
    {
        var environment = new SortedDictionary<string, string>(StringComparer.Ordinal);
        foreach (var backend in service.Calls)
        {
            environment[$"Backends__{backend.ConfigurationSection}__BaseAddress"] = wiring.BackendAddress(backend);
        }

        if (service.Uses(Dependency.CosmosDb))
        {
            environment["Cosmos__ConnectionString"] = Required(wiring.CosmosConnectionString, service, "Cosmos DB");
            environment["Cosmos__DatabaseId"] = Scalar(values.Get("cosmosDb.databaseId"));
        }

        if (service.Uses(Dependency.ServiceBus))
        {
            environment["ServiceBus__ConnectionString"] = Required(wiring.ServiceBusConnectionString, service, "Service Bus");
        }

        if (service == ServiceKind.Workflow)
        {
            // The workflow makes the queue's last delivery final, so it is told the queue's own count.
            var queue = Scalar(values.Get($"{service.ValuesKey}.settings.ServiceBus.QueueName"));
            environment["Processor__MaxDeliveryCount"] = values.Get($"serviceBus.queues.{queue}") is Dictionary<string, object?> declared
                ? Scalar(declared.GetValueOrDefault("maxDeliveryCount"))
                : throw new InvalidDataException($"{service.ValuesKey}.settings.ServiceBus.QueueName names queue '{queue}', which serviceBus.queues does not declare.");
        }

        if (service.Uses(Dependency.Redis))
        {
            environment["Redis__ConnectionString"] = Required(wiring.RedisConnectionString, service, "Redis");
        }

        if (service.Public)
        {
            foreach (var (name, value) in Authentication(values, wiring))
            {
                environment[name] = value;
            }
        }

        if (values.Get("telemetry.otlpEndpoint") is string { Length: > 0 } otlp)
        {
            environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp;
            if (values.Get("telemetry.otlpProtocol") is string { Length: > 0 } protocol)
            {
                environment["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol;
            }
        }

        foreach (var (name, value) in Settings(values, service))
        {
            environment[name] = value;
        }

        return environment;
    }

    /// <summary>
    /// How a public service validates bearer tokens, as <c>dd.authenticationEnv</c> renders it from the
    /// <c>auth</c> values; a mode that lacks what it needs fails naming the values to set, as the chart does.
    /// </summary>
    private static SortedDictionary<string, string> Authentication(ValuesTree values, ServiceWiring wiring)
    {
        string Value(string path) => Scalar(values.Get($"auth.{path}"));
        var mode = Value("mode");
        var environment = new SortedDictionary<string, string>(StringComparer.Ordinal)
        {
            ["Authentication__Mode"] = mode switch
            {
                "developmentIssuer" => "DevelopmentIssuer",
                "entraId" => "EntraId",
                "openIdConnect" => "OpenIdConnect",
                _ => throw new InvalidDataException($"auth.mode '{mode}' is none of developmentIssuer, entraId, openIdConnect."),
            },
            ["Authentication__Audience"] = Value("audience"),
            ["Authentication__OwnerClaim"] = Value("ownerClaim"),
            ["Authentication__ClockSkew"] = Value("clockSkew"),
        };
        switch (mode)
        {
            case "developmentIssuer":
                environment["Authentication__Issuer"] = Value("developmentIssuer.issuer");
                for (var i = 0; i < wiring.DevelopmentSigningKeys.Count; i++)
                {
                    environment[$"Authentication__SigningKeys__{i}"] = wiring.DevelopmentSigningKeys[i];
                }

                break;
            case "openIdConnect":
                environment["Authentication__Authority"] = Value("authority") is { Length: > 0 } authority
                    ? authority
                    : throw new InvalidDataException("auth.mode openIdConnect needs auth.authority (the issuer's https URL)");
                if (Value("issuer") is { Length: > 0 } issuer)
                {
                    environment["Authentication__Issuer"] = issuer;
                }

                break;
            case "entraId":
                var tenant = Value("entraId.tenantId") is { Length: > 0 } own ? own : Scalar(values.Get("azure.tenantId"));
                environment["Authentication__Authority"] = Value("authority") is { Length: > 0 } entraAuthority ? entraAuthority
                    : tenant.Length > 0 ? $"https://login.microsoftonline.com/{tenant}/v2.0"
                    : throw new InvalidDataException("auth.mode entraId needs auth.entraId.tenantId (or azure.tenantId, or auth.authority)");
                environment["Authentication__ClientId"] = Value("entraId.clientId") is { Length: > 0 } clientId
                    ? clientId
                    : throw new InvalidDataException("auth.mode entraId needs auth.entraId.clientId (the API's application (client) id)");
                break;
        }

        return environment;
    }

    /// <summary>The service's settings alone: <c>commonSettings</c> with <c>&lt;service&gt;.settings</c> merged over them, flattened.</summary>
    public static IReadOnlyDictionary<string, string> Settings(ValuesTree values, ServiceKind service)
    {
        var common = ValuesTree.From(values.Get("commonSettings") as Dictionary<string, object?> ?? []);
        var own = ValuesTree.From(values.Get($"{service.ValuesKey}.settings") as Dictionary<string, object?> ?? []);
        var variables = new SortedDictionary<string, string>(StringComparer.Ordinal);
        Flatten(common.MergedWith(own).ToMap(), string.Empty, variables);
        return variables;
    }

    /// <summary>
    /// A value as the chart writes it into an environment variable (<c>dd.scalar</c>): a whole number
    /// without a fraction or exponent, any other number as Go prints it, booleans in lower case.
    /// </summary>
    public static string Scalar(object? value) => value switch
    {
        null => string.Empty,
        string text => text,
        bool b => b ? "true" : "false",
        long l => l.ToString(CultureInfo.InvariantCulture),
        double d when d == Math.Floor(d) && Math.Abs(d) < 9.2e18 => ((long)d).ToString(CultureInfo.InvariantCulture),
        double d => GoFloat(d),
        // A list is printed as Go prints a slice (settings' lists are numbered variables, not this).
        List<object?> list => "[" + string.Join(' ', list.Select(item => item is double d ? GoFloat(d) : Scalar(item))) + "]",
        _ => ValuesTree.Display(value),
    };

    /// <summary>A float as Go's <c>%v</c> prints it: the shortest digits that read back the same, in exponent form below 1e-4 and from 1e6 (<c>1.5e+06</c>).</summary>
    internal static string GoFloat(double value)
    {
        if (double.IsNaN(value))
        {
            return "NaN";
        }

        if (double.IsInfinity(value))
        {
            return value > 0 ? "+Inf" : "-Inf";
        }

        if (value == 0)
        {
            return double.IsNegative(value) ? "-0" : "0";
        }

        var text = Math.Abs(value).ToString("R", CultureInfo.InvariantCulture);
        var exponent = 0;
        if (text.IndexOf('E', StringComparison.Ordinal) is var e and >= 0)
        {
            exponent = int.Parse(text[(e + 1)..], NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture);
            text = text[..e];
        }

        var point = text.IndexOf('.', StringComparison.Ordinal);
        var whole = point < 0 ? text : text[..point];
        var all = whole + (point < 0 ? string.Empty : text[(point + 1)..]);
        var digits = all.TrimStart('0');
        var decimalPoint = whole.Length + exponent - (all.Length - digits.Length);
        digits = digits.TrimEnd('0');

        var sign = value < 0 ? "-" : string.Empty;
        var x = decimalPoint - 1;
        if (x < -4 || x >= 6)
        {
            var mantissa = digits.Length > 1 ? $"{digits[0]}.{digits[1..]}" : digits;
            return $"{sign}{mantissa}e{(x < 0 ? '-' : '+')}{Math.Abs(x):00}";
        }

        return sign + (decimalPoint <= 0
            ? "0." + new string('0', -decimalPoint) + digits
            : decimalPoint >= digits.Length
                ? digits + new string('0', decimalPoint - digits.Length)
                : digits[..decimalPoint] + "." + digits[decimalPoint..]);
    }

    private static void Flatten(Dictionary<string, object?> map, string prefix, IDictionary<string, string> into)
    {
        foreach (var (key, value) in map)
        {
            var name = prefix.Length == 0 ? key : $"{prefix}__{key}";
            switch (value)
            {
                case Dictionary<string, object?> child:
                    Flatten(child, name, into);
                    break;
                case List<object?> items:
                    // One variable per item, as ASP.NET Core binds a list (an empty list: none).
                    for (var i = 0; i < items.Count; i++)
                    {
                        into[$"{name}__{i}"] = Scalar(items[i]);
                    }

                    break;
                case null:
                    // Documented in the values but not set: the service's own default applies.
                    break;
                default:
                    into[name] = Scalar(value);
                    break;
            }
        }
    }

    private static string Required(string? connection, ServiceKind service, string what) =>
        connection ?? throw new InvalidOperationException($"{service.Name} needs {what}, which is not running.");
}
