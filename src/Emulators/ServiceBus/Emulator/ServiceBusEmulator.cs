using System.Net;
using System.Text.Json;
using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Administration;
using DroneDelivery.Emulators.ServiceBus.Broker;
using DroneDelivery.Emulators.ServiceBus.Faults;
using DroneDelivery.Emulators.ServiceBus.Metrics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Emulators.ServiceBus;

/// <summary>
/// The Service Bus emulator, in process: an AMQP listener speaking the Service Bus dialect and an optional
/// HTTP endpoint with metrics and health. The command-line program is a thin wrapper around this type.
/// </summary>
public sealed class ServiceBusEmulator : IAsyncDisposable
{
    /// <summary>The start of the line the program prints when it is ready.</summary>
    public const string ReadyLinePrefix = "Service Bus emulator ready";

    private static readonly JsonSerializerOptions Json = new(JsonSerializerDefaults.Web) { WriteIndented = false };

    private readonly Namespace _namespace;
    private readonly AmqpListener _listener;
    private readonly MetricsRecorder _metrics;
    private readonly EmulatorInstruments _instruments;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Task _sweeper;
    private WebApplication? _http;
    private HttpsListener? _https;

    private ServiceBusEmulator(ServiceBusEmulatorOptions options, Namespace ns, AmqpListener listener)
    {
        Options = options;
        _namespace = ns;
        _listener = listener;
        _metrics = new MetricsRecorder(ns.Queues, options.MetricsSeriesSeconds, options.TimeProvider, ns.Faults);
        _instruments = new EmulatorInstruments(ns.Queues, ns.Faults, options.TimeProvider);
        _sweeper = Task.Run(SweepLoopAsync);
    }

    public ServiceBusEmulatorOptions Options { get; }

    /// <summary>Where AMQP clients connect.</summary>
    public IPEndPoint AmqpEndPoint => _listener.EndPoint;

    /// <summary>The HTTP base address (metrics, health, the administration API), or null when HTTP is disabled.</summary>
    public Uri? HttpEndpoint { get; private set; }

    /// <summary>The HTTPS base address (the same endpoints over TLS), or null unless <see cref="ServiceBusEmulatorOptions.HttpsPort"/> is set.</summary>
    public Uri? HttpsEndpoint { get; private set; }

    /// <summary>The HTTPS listener's certificate in PEM (also served at <c>/_emulator/certificate</c>), or null without HTTPS.</summary>
    public string? CertificatePem => _https?.Pem;

    /// <summary>
    /// A connection string for the .NET SDK's <c>ServiceBusAdministrationClient</c>: the HTTP port in the endpoint and
    /// <c>UseDevelopmentEmulator=true</c>, with which the SDK speaks plain HTTP to that port. Null when HTTP is disabled.
    /// </summary>
    public string? AdministrationConnectionString => HttpEndpoint is null ? null :
        $"Endpoint=sb://{Options.Host}:{HttpEndpoint.Port};SharedAccessKeyName={Options.SharedAccessKeyName};SharedAccessKey={Options.SharedAccessKey};UseDevelopmentEmulator=true";

    /// <summary>A connection string for the official SDKs: plain AMQP, development emulator mode.</summary>
    public string ConnectionString =>
        $"Endpoint=sb://{Options.Host}:{AmqpEndPoint.Port};SharedAccessKeyName={Options.SharedAccessKeyName};SharedAccessKey={Options.SharedAccessKey};UseDevelopmentEmulator=true";

    /// <summary>The line printed when ready: where AMQP and HTTP listen.</summary>
    public string ReadyLine => $"{ReadyLinePrefix}: amqp={Options.Host}:{AmqpEndPoint.Port} http={(HttpEndpoint is null ? "off" : HttpEndpoint.ToString().TrimEnd('/'))}{(HttpsEndpoint is null ? string.Empty : " https=" + HttpsEndpoint.ToString().TrimEnd('/'))} queues={string.Join(',', Options.Queues.Select(q => q.Name))}{(Options.Topics.Count == 0 ? string.Empty : " topics=" + string.Join(',', Options.Topics.Select(t => t.Name)))}";

    /// <summary>Raised with a one-line description when a client connection ends with an error (malformed input, idle time-out...).</summary>
    public event Action<string>? ConnectionFailed;

    /// <summary>Number of AMQP connections currently open.</summary>
    public int ConnectionCount => _listener.Connections.Count;

    /// <summary>Validates the options, binds the AMQP (and HTTP) ports and starts serving.</summary>
    /// <exception cref="EmulatorConfigurationException">A setting is invalid; the message names it.</exception>
    public static async Task<ServiceBusEmulator> StartAsync(ServiceBusEmulatorOptions options, CancellationToken cancellationToken = default)
    {
        options.Validate();
        var ns = new Namespace(options);
        var address = IPAddress.TryParse(options.Host, out var ip) ? ip : (await Dns.GetHostAddressesAsync(options.Host, cancellationToken).ConfigureAwait(false))[0];
        ServiceBusEmulator? started = null;
        var listener = AmqpListener.Start(new IPEndPoint(address, options.Port), new AmqpListenerOptions
        {
            Connection = new AmqpConnectionOptions
            {
                ContainerId = "servicebus-emulator-" + options.NamespaceName,
                MaxFrameSize = 256 * 1024,
                IdleTimeout = TimeSpan.FromMinutes(4),
                Gate = ns.Faults.Gate,
            },
            SaslMechanisms = [SaslMechanism.MsSbCbs, SaslMechanism.Anonymous],
            RequireSasl = false,
            HandlerFactory = connection =>
            {
                var state = new ConnectionState();
                connection.Context = state;
                return new EmulatorLinkHandler(ns, state, connection);
            },
            ConnectionFailed = (connection, error) => started?.ConnectionFailed?.Invoke($"connection from {connection.RemoteEndPoint} ended: {error}"),
        });
        var emulator = started = new ServiceBusEmulator(options, ns, listener);
        try
        {
            if (options.HttpPort is { } httpPort)
            {
                await emulator.StartHttpAsync(address, httpPort, cancellationToken).ConfigureAwait(false);
            }
        }
        catch
        {
            await emulator.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        return emulator;
    }

    /// <summary>Every queue's counters, current counts and per-second series.</summary>
    public EmulatorMetricsSnapshot GetMetrics() => _metrics.Snapshot();

    /// <summary>The faults injected into the namespace: set the rules, pause it, read what was injected (also over HTTP).</summary>
    internal FaultInjector Faults => _namespace.Faults;

    /// <summary>The round trips the emulator adds to sends, receives and settlements now.</summary>
    internal LatencyModel Latency => _namespace.Latency;

    public async ValueTask DisposeAsync()
    {
        await _stopping.CancelAsync().ConfigureAwait(false);
        await _sweeper.ConfigureAwait(false);
        if (_http is not null)
        {
            await _http.StopAsync().ConfigureAwait(false);
            await _http.DisposeAsync().ConfigureAwait(false);
        }

        await _listener.DisposeAsync().ConfigureAwait(false);
        _https?.Dispose();
        _instruments.Dispose();
        _stopping.Dispose();
    }

    private async Task StartHttpAsync(IPAddress address, int port, CancellationToken cancellationToken)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();

        // The emulator is a library too (tests host it in-process): the program owning the process
        // decides what Ctrl+C and SIGTERM do, not this endpoint's host.
        builder.Services.AddSingleton<IHostLifetime, ProcessSignalsIgnored>();
        _https = HttpsListener.For(Options, address);
        builder.WebHost.UseKestrel(k =>
        {
            k.Listen(address, port);
            _https?.Listen(k, address);
        });
        builder.Services.AddEmulatorMetrics("servicebus-emulator", _instruments.Meter);
        var app = builder.Build();

        // First, so that an administration request for an entity named like an endpoint (a queue "metrics") is the API's.
        AdministrationEndpoint.Map(app, _namespace, Options);
        app.UseEmulatorMetrics();
        _https?.MapCertificate(app);
        app.MapGet(EmulatorMetricNames.JsonPath, () => Results.Text(JsonSerializer.Serialize(_metrics.Snapshot(), Json), "application/json"));
        app.MapGet(EmulatorMetricNames.HealthPath, () => Results.Json(new { status = "healthy", message = "Service is healthy." }));
        FaultAdminEndpoints.Map(app, _namespace, Options);
        LatencyAdminEndpoint.Map(app, _namespace, Options);
        await app.StartAsync(cancellationToken).ConfigureAwait(false);
        var bound = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses;
        Uri Reachable(string address) => new(address.Replace("[::]", Options.Host, StringComparison.Ordinal).Replace("0.0.0.0", Options.Host, StringComparison.Ordinal) + "/");
        HttpEndpoint = Reachable(bound.First(a => a.StartsWith("http:", StringComparison.Ordinal)));
        HttpsEndpoint = bound.FirstOrDefault(a => a.StartsWith("https:", StringComparison.Ordinal)) is { } secure ? Reachable(secure) : null;
        _http = app;
    }

    private async Task SweepLoopAsync()
    {
        var time = Options.TimeProvider;
        using var timer = new PeriodicTimer(Options.SweepInterval, time);
        var lastMessageSweep = time.GetUtcNow().UtcDateTime;
        var lastSample = time.GetUtcNow();
        try
        {
            while (await timer.WaitForNextTickAsync(_stopping.Token).ConfigureAwait(false))
            {
                var now = time.GetUtcNow().UtcDateTime;
                var sweepMessages = now - lastMessageSweep >= TimeSpan.FromSeconds(1);
                if (sweepMessages)
                {
                    lastMessageSweep = now;
                }

                foreach (var entity in _namespace.AllEntities)
                {
                    entity.Sweep(now, sweepMessages);
                }

                var wall = time.GetUtcNow();
                if (wall - lastSample >= TimeSpan.FromSeconds(1))
                {
                    lastSample = wall;
                    _metrics.Sample(wall);
                }
            }
        }
        catch (OperationCanceledException)
        {
        }
    }
}

/// <summary>A host lifetime that leaves process signals to the program.</summary>
internal sealed class ProcessSignalsIgnored : IHostLifetime
{
    public Task WaitForStartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;
}
