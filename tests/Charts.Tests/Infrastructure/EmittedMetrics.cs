using System.Diagnostics.Metrics;
using System.Reflection;
using System.Runtime.CompilerServices;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Telemetry;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>
/// The Prometheus series names the system really exposes, gathered from the code rather than
/// written down: the framework's (a real scrape of a ServiceDefaults host), our own instruments
/// (every Meter our assemblies create, named as the exporter names them) and the emulators'
/// (their metric-name constants).
/// </summary>
public static class EmittedMetrics
{
    private static readonly Lazy<Task<IReadOnlySet<string>>> All = new(CollectAsync);

    public static Task<IReadOnlySet<string>> NamesAsync() => All.Value;

    private static async Task<IReadOnlySet<string>> CollectAsync()
    {
        var names = new HashSet<string>(StringComparer.Ordinal);
        names.UnionWith(await ScrapeFrameworkMetricsAsync());
        names.UnionWith(OwnInstruments());
        names.UnionWith(EmulatorMetrics());
        return names;
    }

    /// <summary>Series names of one Prometheus text scrape (histograms expand to _bucket/_sum/_count).</summary>
    public static IEnumerable<string> ParseScrape(string text) =>
        text.Split('\n')
            .Where(line => line.StartsWith("# TYPE ", StringComparison.Ordinal))
            .Select(line => line.Split(' '))
            .SelectMany(parts => parts[3] == "histogram" ? Histogram(parts[2]) : [parts[2]]);

    /// <summary>
    /// Starts a host with the services' defaults on a loopback port, makes outgoing calls (one of
    /// them retried once, after a 503) and scrapes /metrics: HTTP server and client, Kestrel, runtime
    /// and resilience (Polly) series as a service exposes them.
    /// </summary>
    private static async Task<IEnumerable<string>> ScrapeFrameworkMetricsAsync()
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { EnvironmentName = "Production" });
        ((IConfigurationBuilder)builder.Configuration).Sources.Clear();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?> { ["Resilience:RetryBaseDelay"] = "00:00:00.010" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.AddServiceDefaults("scrape-probe");
        await using var app = builder.Build();
        app.MapDefaultEndpoints();
        app.MapGet("/ping", () => "pong");
        var flaky = 0;
        app.MapGet("/flaky", () => Interlocked.Increment(ref flaky) == 1 ? Results.StatusCode(503) : Results.Text("recovered"));
        await app.StartAsync();
        try
        {
            var address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
            var client = app.Services.GetRequiredService<IHttpClientFactory>().CreateClient("scrape-probe");
            Assert.Equal("pong", await client.GetStringAsync(new Uri($"{address}/ping")));
            Assert.Equal("recovered", await client.GetStringAsync(new Uri($"{address}/flaky")));
            return ParseScrape(await client.GetStringAsync(new Uri($"{address}/metrics"))).ToList();
        }
        finally
        {
            await app.StopAsync();
        }
    }

    /// <summary>
    /// Every instrument our assemblies create on a DroneDelivery.* Meter, named as the services'
    /// Prometheus exporter names it. The telemetry classes create their instruments statically (on a
    /// Meter of their own or a <see cref="ComponentTelemetry"/>'s), so running their type initialisers
    /// under a MeterListener publishes them all.
    /// </summary>
    private static IEnumerable<string> OwnInstruments()
    {
        var instruments = new List<Instrument>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                if (instrument.Meter.Name.StartsWith("DroneDelivery.", StringComparison.Ordinal))
                {
                    lock (instruments)
                    {
                        instruments.Add(instrument);
                    }
                }
            },
        };
        listener.Start();
        foreach (var assembly in OurAssemblies())
        {
            foreach (var type in assembly.GetTypes().Where(HoldsInstruments))
            {
                RuntimeHelpers.RunClassConstructor(type.TypeHandle);
            }
        }

        lock (instruments)
        {
            return instruments.SelectMany(PrometheusNames).ToList();
        }
    }

    private static IEnumerable<string> PrometheusNames(Instrument instrument)
    {
        var definition = instrument.GetType().IsGenericType ? instrument.GetType().GetGenericTypeDefinition() : instrument.GetType();
        var isCounter = definition == typeof(Counter<>) || definition == typeof(ObservableCounter<>);
        var isHistogram = definition == typeof(Histogram<>);
        var name = PrometheusName(instrument.Name, instrument.Unit, isCounter && !isHistogram);
        return isHistogram ? Histogram(name) : [name];
    }

    /// <summary>
    /// The name the services' Prometheus exporter (OpenTelemetry.Exporter.Prometheus.AspNetCore, its
    /// default translation) gives an instrument: dots become underscores, the unit is appended
    /// (<c>s</c> → <c>_seconds</c>, <c>By</c> → <c>_bytes</c>; annotations such as <c>{call}</c> and
    /// <c>1</c> add nothing), monotonic counters get <c>_total</c>.
    /// </summary>
    internal static string PrometheusName(string name, string? unit, bool isCounter)
    {
        var sanitized = Sanitize(name);
        var suffix = unit switch
        {
            null or "" or "1" => string.Empty,
            _ when unit.StartsWith('{') => string.Empty,
            "s" => "seconds",
            "ms" => "milliseconds",
            "us" => "microseconds",
            "ns" => "nanoseconds",
            "By" => "bytes",
            "%" => "percent",
            _ => Sanitize(unit).Trim('_'),
        };
        if (suffix.Length > 0 && !sanitized.EndsWith("_" + suffix, StringComparison.Ordinal))
        {
            sanitized += "_" + suffix;
        }

        return isCounter && !sanitized.EndsWith("_total", StringComparison.Ordinal) ? sanitized + "_total" : sanitized;
    }

    private static string Sanitize(string name) =>
        new(name.Select(c => char.IsAsciiLetterOrDigit(c) || c is '_' or ':' ? c : '_').ToArray());

    private static bool HoldsInstruments(Type type) =>
        !type.ContainsGenericParameters
        && type.GetFields(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic)
            .Any(f => f.FieldType == typeof(Meter) || f.FieldType == typeof(ComponentTelemetry) || typeof(Instrument).IsAssignableFrom(f.FieldType));

    private static IEnumerable<Assembly> OurAssemblies() =>
        Directory.GetFiles(AppContext.BaseDirectory, "DroneDelivery.*.dll")
            .Where(path => !Path.GetFileName(path).Contains(".Tests", StringComparison.Ordinal))
            .Select(path => Assembly.LoadFrom(path));

    private static IEnumerable<string> EmulatorMetrics()
    {
        foreach (var type in new[] { typeof(CosmosEmulatorMetricNames), typeof(EmulatorMetricNames) })
        {
            foreach (var field in type.GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => f.IsLiteral))
            {
                var value = (string)field.GetRawConstantValue()!;
                if (value.EndsWith("_total", StringComparison.Ordinal) || value.Contains("_emulator_", StringComparison.Ordinal))
                {
                    // A constant does not say whether it is a histogram: allow its series suffixes too.
                    yield return value;
                    foreach (var series in Histogram(value))
                    {
                        yield return series;
                    }
                }
            }
        }
    }

    private static IEnumerable<string> Histogram(string name) => [name + "_bucket", name + "_sum", name + "_count"];
}
