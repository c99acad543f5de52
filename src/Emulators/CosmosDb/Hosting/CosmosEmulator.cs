using System.Net;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Faults;
using DroneDelivery.Emulators.CosmosDb.Gateway;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Storage;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Emulators.CosmosDb;

/// <summary>
/// A running Cosmos DB emulator (on 127.0.0.1 unless told otherwise). Start one in-process with <see cref="StartAsync"/> and
/// point a <c>CosmosClient</c> (Gateway mode) at <see cref="Endpoint"/> with <see cref="AccountKey"/>;
/// the same type backs the command-line program.
/// </summary>
public sealed class CosmosEmulator : IAsyncDisposable
{
    private static readonly JsonSerializerOptions SnapshotJson = new(JsonSerializerDefaults.Web);

    private readonly WebApplication _app;
    private readonly RequestLog _log;
    private readonly MetricsReader _metrics;
    private readonly EmulatorInstruments _instruments;

    private CosmosEmulator(WebApplication app, Uri endpoint, CosmosEmulatorOptions options, RequestLog log, MetricsReader metrics, CosmosGateway gateway, EmulatorInstruments instruments, CosmosFaultInjector faults)
    {
        _app = app;
        _instruments = instruments;
        Faults = faults;
        Pipeline = gateway;
        _log = log;
        _metrics = metrics;
        Endpoint = endpoint;
        AccountKey = options.AccountKey;
        ConnectionString = $"AccountEndpoint={endpoint};AccountKey={options.AccountKey};"
            + (options.Https ? "DisableServerCertificateValidation=True;" : string.Empty);
    }

    /// <summary>The account endpoint, e.g. <c>http://127.0.0.1:8081/</c>.</summary>
    public Uri Endpoint { get; }

    /// <summary>The master key clients sign requests with.</summary>
    public string AccountKey { get; }

    /// <summary>A Cosmos DB connection string for <see cref="Endpoint"/> (with certificate validation disabled for HTTPS).</summary>
    public string ConnectionString { get; }

    /// <summary>
    /// The request pipeline the listener hands every Cosmos DB request to; tests drive it with an
    /// in-memory <c>HttpContext</c> to push many cases through the same code without a socket each.
    /// </summary>
    internal CosmosGateway Pipeline { get; }

    /// <summary>The faults injected into item and query requests: the rules (also <c>/_emulator/faults</c>) and what was injected.</summary>
    internal CosmosFaultInjector Faults { get; }

    /// <summary>Every fault injected so far, by container and kind (also in <c>/metrics</c> and <c>GET /_emulator/faults</c>).</summary>
    public IReadOnlyList<InjectedFaultCount> GetInjectedFaults() => Faults.Counts();

    /// <summary>The sequence number of the latest recorded request (0 before any).</summary>
    public long LastRequestSequence => _log.LastSequence;

    /// <summary>Validates <paramref name="options"/>, starts listening and returns once requests are served.</summary>
    /// <exception cref="CosmosEmulatorConfigurationException">A setting is invalid; the message names it.</exception>
    public static async Task<CosmosEmulator> StartAsync(CosmosEmulatorOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        CosmosEmulatorOptionsValidator.Validate(options);

        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        builder.Logging.AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning);
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.AddServerHeader = false;
            kestrel.Limits.MaxRequestBodySize = CosmosGateway.MaxRequestBytes + (1024 * 1024);
            var listening = CosmosEmulatorOptionsValidator.ListenAddress(options.Host)!;
            kestrel.Listen(listening, options.Port, listen =>
            {
                if (options.Https)
                {
                    listen.UseHttps(SelfSignedCertificate.Create(listening));
                    listen.Protocols = HttpProtocols.Http1AndHttp2;
                }
                else
                {
                    listen.Protocols = HttpProtocols.Http1;
                }
            });
        });
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(5));

        var store = new AccountStore(options);
        var faults = new CosmosFaultInjector();
        faults.Configure(options.Faults);
        var instruments = new EmulatorInstruments(store, faults);
        builder.Services.AddEmulatorMetrics("cosmos-emulator", instruments.Meter);
        var app = builder.Build();
        try
        {
            var log = new RequestLog(options.RequestLogCapacity);
            var metrics = new MetricsReader(store, options.TimeProvider.GetUtcNow(), options.TimeProvider);
            var gateway = new CosmosGateway(store, options, log, instruments, app.Logger, faults);
            var endpoints = new EmulatorEndpoints(metrics, log, faults, store.Latency, options.AccountKey);
            app.UseEmulatorMetrics();
            app.Run(http => http.Request.Path.StartsWithSegments(EmulatorEndpoints.Prefix, StringComparison.Ordinal)
                ? endpoints.HandleAsync(http)
                : gateway.HandleAsync(http));

            await app.StartAsync(cancellationToken).ConfigureAwait(false);
            var address = app.Services.GetRequiredService<Microsoft.AspNetCore.Hosting.Server.IServer>()
                .Features.Get<IServerAddressesFeature>()!.Addresses.First();
            var port = new Uri(address).Port;
            var endpoint = new Uri($"{(options.Https ? "https" : "http")}://{ReachableHost(options.Host)}:{port}/");
            return new CosmosEmulator(app, endpoint, options, log, metrics, gateway, instruments, faults);
        }
        catch
        {
            await app.DisposeAsync().ConfigureAwait(false);
            instruments.Dispose();
            throw;
        }
    }

    /// <summary>Per container and physical partition: RU consumed vs provisioned, 429s, requests, charges.</summary>
    /// <param name="seconds">How many recent seconds of per-second samples to include.</param>
    public EmulatorMetricsSnapshot GetMetrics(int seconds = 60) => _metrics.Snapshot(seconds);

    /// <summary>The metrics as the JSON served at <c>/_emulator/metrics</c>.</summary>
    public string GetMetricsJson(int seconds = 60) => JsonSerializer.Serialize(GetMetrics(seconds), SnapshotJson);

    /// <summary>Recorded requests with their timings, oldest first, after the given sequence number.</summary>
    public IReadOnlyList<EmulatorRequest> GetRequests(long afterSequence = 0) => _log.Since(afterSequence);

    /// <summary>Completes when the host is asked to stop (SIGTERM, Ctrl+C).</summary>
    public Task WaitForShutdownAsync(CancellationToken cancellationToken = default) => _app.WaitForShutdownAsync(cancellationToken);

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync().ConfigureAwait(false);
        await _app.DisposeAsync().ConfigureAwait(false);
        _instruments.Dispose();
    }

    internal static JsonSerializerOptions JsonOptions => SnapshotJson;

    // A client on this machine reaches a wildcard listener through loopback.
    private static string ReachableHost(string host)
    {
        var address = CosmosEmulatorOptionsValidator.ListenAddress(host)!;
        if (address.Equals(IPAddress.Any) || address.Equals(IPAddress.Loopback))
        {
            return "127.0.0.1";
        }

        if (address.Equals(IPAddress.IPv6Any) || address.Equals(IPAddress.IPv6Loopback))
        {
            return "[::1]";
        }

        return address.AddressFamily == System.Net.Sockets.AddressFamily.InterNetworkV6 ? $"[{address}]" : address.ToString();
    }
}
