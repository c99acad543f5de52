using System.Collections;
using System.ComponentModel;
using System.ComponentModel.DataAnnotations;
using System.Globalization;
using System.Reflection;
using System.Text.Json.Nodes;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The chart's environment variables against the services' REAL settings types: every variable
/// the chart sets is a property of a class the service registers with AddSettings (exact names,
/// so a rename on either side breaks this test), every rendered value binds and validates the way
/// the service will at start, every knob of those classes is documented in values.yaml with the
/// code's own default, and the schema bounds each numeric knob exactly as the code does.
/// </summary>
public sealed class SettingsContractTests
{
    /// <summary>Variables that are not settings sections: the host's, the exporters', the pod's.</summary>
    private static readonly string[] StandardVariables = ["ASPNETCORE_HTTP_PORTS", "POD_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "APPLICATIONINSIGHTS_CONNECTION_STRING"];

    /// <summary>What the chart wires from its topology (or, for Authentication, from the auth values) rather than from settings values.</summary>
    private static bool IsWired(string key) =>
        key.EndsWith(":ConnectionString", StringComparison.Ordinal)
        || key.StartsWith("Authentication:", StringComparison.Ordinal)
        || key is "Cosmos:AccountEndpoint" or "Cosmos:DatabaseId" or "ServiceBus:FullyQualifiedNamespace"
        || key is "Processor:MaxDeliveryCount" // the queue's own value (serviceBus.queues)
        || (key.StartsWith("Backends:", StringComparison.Ordinal) && key.EndsWith(":BaseAddress", StringComparison.Ordinal));

    /// <summary>Placeholders for connection strings the chart reads from Secrets it does not create.</summary>
    private static readonly Dictionary<string, string> ExternalSecretExamples = new()
    {
        ["cosmos-connection-string"] = "AccountEndpoint=https://example.documents.azure.com:443/;AccountKey=ZXhhbXBsZQ==;",
        ["servicebus-connection-string"] = "Endpoint=sb://example.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v",
        ["redis-connection-string"] = "example.redis.cache.windows.net:6380,password=p,ssl=True,abortConnect=False",
        ["applicationinsights-connection-string"] = "InstrumentationKey=00000000-0000-0000-0000-000000000000",
    };

    public static TheoryData<string, string> ServicesInEveryValueSet()
    {
        var data = new TheoryData<string, string>();
        foreach (var set in Chart.AllValueSets)
        {
            foreach (var service in ServiceCatalog.All)
            {
                data.Add(set.Name, service.Name);
            }
        }

        return data;
    }

    public static TheoryData<string> Services => ServiceCatalog.Names;

    [Fact]
    public void Every_service_the_chart_deploys_is_checked_against_its_settings_types()
    {
        Assert.True(ServiceCatalog.Missing.Count == 0, string.Join("; ", ServiceCatalog.Missing));
        Assert.Equal(
            PodSpecTests.Services(Chart.Template(Chart.Defaults)).Select(d => d.Name).Order(StringComparer.Ordinal),
            ServiceCatalog.All.Select(s => s.Name).Order(StringComparer.Ordinal));
    }

    [Theory]
    [MemberData(nameof(ServicesInEveryValueSet))]
    public void Every_rendered_variable_is_a_property_of_a_registered_settings_class(string valueSet, string serviceName)
    {
        var service = ServiceCatalog.Named(serviceName);
        var configuration = RenderedConfiguration(Chart.Template(Chart.ValueSet(valueSet)), service);
        var registrations = Registrations(service, configuration);

        foreach (var key in configuration.Keys)
        {
            var registration = registrations.FirstOrDefault(r => key.StartsWith(r.SectionPath + ":", StringComparison.Ordinal));
            Assert.True(registration is not null,
                $"{service} gets {key.Replace(":", "__", StringComparison.Ordinal)}, but registers no settings section for it " +
                $"(sections: {string.Join(", ", registrations.Select(r => r.SectionPath))})");
            var property = Property(registration.SettingsType, key[(registration.SectionPath.Length + 1)..].Split(':'));
            Assert.True(property is not null,
                $"{service} gets {key.Replace(":", "__", StringComparison.Ordinal)}, but {registration.SettingsType.Name} (section {registration.SectionPath}) has no property at that exact path");
        }
    }

    [Theory]
    [MemberData(nameof(ServicesInEveryValueSet))]
    public void Rendered_values_bind_and_validate_as_the_service_will_at_start(string valueSet, string serviceName)
    {
        var service = ServiceCatalog.Named(serviceName);
        var configuration = RenderedConfiguration(Chart.Template(Chart.ValueSet(valueSet)), service);
        var builder = Builder(service, configuration);
        var registrations = Registrations(builder);
        using var app = builder.Build();

        foreach (var registration in registrations)
        {
            var options = (IOptions<object>)app.Services.GetRequiredService(typeof(IOptions<>).MakeGenericType(registration.SettingsType));
            try
            {
                _ = options.Value;
            }
            catch (OptionsValidationException e)
            {
                Assert.Fail($"{service} with {valueSet} would refuse to start: {string.Join(" | ", e.Failures)}");
            }
        }
    }

    [Fact]
    public void A_misspelt_variable_is_refused_by_the_service_as_it_would_be_at_start()
    {
        // Proves the binding check above can fail: the chart's env plus one misspelt knob.
        var service = ServiceCatalog.Named("gateway");
        var configuration = RenderedConfiguration(Chart.Template(Chart.Defaults), service);
        configuration["Backends:Delivery:Timout"] = "00:00:01";
        var builder = Builder(service, configuration);
        using var app = builder.Build();

        var error = Assert.Throws<OptionsValidationException>(() => app.Services.GetRequiredService<IOptions<DroneDelivery.ServiceClients.Backends.BackendsSettings>>().Value);
        Assert.Contains("Timout", string.Join(" ", error.Failures));
    }

    [Theory]
    [MemberData(nameof(Services))]
    public void Values_document_every_knob_with_the_code_default(string serviceName)
    {
        var service = ServiceCatalog.Named(serviceName);
        var values = Yaml.Parse(File.ReadAllText(Chart.ValuesFile));
        var documented = values.Map("commonSettings")!.Leaves()
            .Concat(values.Map(service.ValuesKey, "settings")!.Leaves())
            .ToDictionary(l => l.Path.Replace('.', ':'), l => l.Value);

        foreach (var registration in Registrations(service, []))
        {
            var defaults = Activator.CreateInstance(registration.SettingsType)!;
            foreach (var (path, property, codeDefault) in Knobs(defaults, registration.SectionPath))
            {
                if (IsWired(path) || property.GetCustomAttribute<SecretAttribute>() is not null)
                {
                    continue;
                }

                Assert.True(documented.TryGetValue(path, out var text), $"values.yaml does not document {service}'s knob {path} (default {codeDefault ?? "null"})");
                if (codeDefault is IEnumerable<string> list)
                {
                    // Lists are documented as YAML lists (one environment variable per item).
                    Assert.Equal("[" + string.Join(", ", list) + "]", text);
                    continue;
                }

                var documentedValue = text is null ? null : Convert(text, property.PropertyType);
                Assert.True(Equals(documentedValue, codeDefault),
                    $"values.yaml documents {service}'s {path} as '{text ?? "null"}' but the code's default is '{codeDefault ?? "null"}'");
            }
        }
    }

    [Theory]
    [MemberData(nameof(Services))]
    public void Schema_bounds_every_numeric_knob_as_the_code_does(string serviceName)
    {
        var service = ServiceCatalog.Named(serviceName);
        var schema = JsonNode.Parse(File.ReadAllText(Path.Combine(Chart.Directory, "values.schema.json")))!;
        var common = Registrations(service, []).Where(r => schema["properties"]!["commonSettings"]!["properties"]![r.SectionPath] is not null).Select(r => r.SettingsType).ToHashSet();

        foreach (var registration in Registrations(service, []))
        {
            var root = common.Contains(registration.SettingsType)
                ? schema["properties"]!["commonSettings"]
                : schema["properties"]![service.ValuesKey]!["properties"]!["settings"];
            foreach (var (path, property, _) in Knobs(Activator.CreateInstance(registration.SettingsType)!, registration.SectionPath))
            {
                if (property.GetCustomAttribute<RangeAttribute>() is not { Minimum: int or double } range || IsWired(path))
                {
                    continue;
                }

                var node = path.Split(':').Aggregate(root, (n, part) => n?["properties"]?[part]);
                Assert.True(node is not null, $"values.schema.json has no entry for {path}");
                Assert.Equal(System.Convert.ToDouble(range.Minimum, CultureInfo.InvariantCulture), node["minimum"]?.GetValue<double>());
                Assert.Equal(System.Convert.ToDouble(range.Maximum, CultureInfo.InvariantCulture), node["maximum"]?.GetValue<double>());
            }
        }
    }

    /// <summary>The service's configuration as the pod will see it: rendered env, secrets resolved.</summary>
    private static Dictionary<string, string?> RenderedConfiguration(Render render, ChartService service)
    {
        var environment = Render.Environment(render.Get("Deployment", service.Name).Containers.Single());
        return environment
            .Where(e => !StandardVariables.Contains(e.Key) && !Rehearsal.OptionalSecretAbsent(render, e.Value))
            .ToDictionary(e => e.Key.Replace("__", ":", StringComparison.Ordinal), e => (string?)Resolve(render, e.Value));
    }

    private static string Resolve(Render render, string value)
    {
        if (!value.StartsWith("secret:", StringComparison.Ordinal) && !value.StartsWith("secret?:", StringComparison.Ordinal))
        {
            return value;
        }

        var (secret, key) = (value[(value.IndexOf(':', StringComparison.Ordinal) + 1)..].Split('/')[0], value.Split('/')[^1]);
        var rendered = render.OfKind("Secret").SingleOrDefault(s => s.Name == secret);
        return rendered?.Body.Text("stringData", key)
            ?? (ExternalSecretExamples.TryGetValue(key, out var example) ? example : throw new InvalidOperationException($"Unknown secret key {key}"));
    }

    private static WebApplicationBuilder Builder(ChartService service, Dictionary<string, string?> configuration)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { EnvironmentName = "Production" });
        // Only what the chart gives the pod: not this test process's environment.
        ((IConfigurationBuilder)builder.Configuration).Sources.Clear();
        builder.Configuration.AddInMemoryCollection(configuration);
        builder.AddServiceDefaults(service.Name);
        service.AddServices(builder);
        return builder;
    }

    private static List<SettingsRegistration> Registrations(ChartService service, Dictionary<string, string?> configuration) =>
        Registrations(Builder(service, configuration));

    private static List<SettingsRegistration> Registrations(WebApplicationBuilder builder) =>
        builder.Services
            .Where(d => d.ServiceType == typeof(SettingsRegistration))
            .Select(d => (SettingsRegistration)d.ImplementationInstance!)
            .DistinctBy(r => (r.SettingsType, r.SectionPath))
            .ToList();

    /// <summary>The property at an exact (case-sensitive) path of nested settings classes, or null.</summary>
    private static PropertyInfo? Property(Type type, IReadOnlyList<string> path)
    {
        PropertyInfo? property = null;
        foreach (var part in path)
        {
            if (property is not null)
            {
                type = property.PropertyType;
            }

            if (DictionaryValueType(type) is { } valueType)
            {
                // A dictionary section: any key, then the value type's properties.
                type = valueType;
                property = null;
                continue;
            }

            if (type.IsGenericType && type.GetGenericTypeDefinition() == typeof(List<>) && int.TryParse(part, NumberStyles.None, CultureInfo.InvariantCulture, out _))
            {
                // A list item (Section__Key__0): the list itself is the setting.
                continue;
            }

            property = type.GetProperty(part, BindingFlags.Public | BindingFlags.Instance);
            if (property is null || !property.CanWrite)
            {
                return null;
            }
        }

        return property;
    }

    /// <summary>Every leaf knob of a settings object: (Section:Key path, property, default value).</summary>
    private static IEnumerable<(string Path, PropertyInfo Property, object? Default)> Knobs(object settings, string path)
    {
        foreach (var property in settings.GetType().GetProperties(BindingFlags.Public | BindingFlags.Instance))
        {
            if (property.GetIndexParameters().Length > 0 || !property.CanWrite)
            {
                continue;
            }

            var key = $"{path}:{property.Name}";
            var value = property.GetValue(settings);
            if (value is not null and not string and not IEnumerable && property.PropertyType.Namespace?.StartsWith("DroneDelivery", StringComparison.Ordinal) == true && property.PropertyType.IsClass)
            {
                foreach (var knob in Knobs(value, key))
                {
                    yield return knob;
                }

                continue;
            }

            yield return (key, property, value);
        }
    }

    private static Type? DictionaryValueType(Type type) =>
        type.IsGenericType && type.GetGenericTypeDefinition() is var definition
        && (definition == typeof(Dictionary<,>) || definition == typeof(IDictionary<,>) || definition == typeof(IReadOnlyDictionary<,>))
            ? type.GetGenericArguments()[1]
            : null;

    private static object? Convert(string text, Type type)
    {
        var target = Nullable.GetUnderlyingType(type) ?? type;
        return TypeDescriptor.GetConverter(target).ConvertFromInvariantString(text);
    }
}
