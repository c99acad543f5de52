using System.Collections.Concurrent;
using System.Net;
using DroneDelivery.Security.Tokens;
using DroneDelivery.ServiceDefaults;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Mvc.Testing;
using Microsoft.AspNetCore.TestHost;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>
/// One of the services: its name and its Program (through <see cref="CreateFactory"/>); its registrations
/// and endpoints only for <see cref="ServiceApp.Build"/>, which composes a service that is never started.
/// </summary>
public sealed record ServiceDefinition(
    string Name,
    Action<WebApplicationBuilder> AddServices,
    Action<WebApplication> MapApi,
    Func<Action<IWebHostBuilder>, IServiceFactory> CreateFactory)
{
    /// <summary>Clients call it from outside (Gateway, Ingestion): it validates bearer tokens of <see cref="TestAccess"/>'s issuer.</summary>
    public bool IsPublic { get; init; }
}

/// <summary>A service's real Program under <see cref="WebApplicationFactory{TEntryPoint}"/>.</summary>
public interface IServiceFactory : IAsyncDisposable
{
    IServiceProvider Services { get; }

    void StartServer();
}

/// <summary>Runs <typeparamref name="TProgram"/>'s assembly's Program on Kestrel at 127.0.0.1 (port chosen by the kernel).</summary>
public sealed class ServiceFactory<TProgram> : WebApplicationFactory<TProgram>, IServiceFactory
    where TProgram : class
{
    private readonly Action<IWebHostBuilder> _configure;

    public ServiceFactory(Action<IWebHostBuilder> configure)
    {
        _configure = configure;
        UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0));
    }

    protected override void ConfigureWebHost(IWebHostBuilder builder) => _configure(builder);
}

/// <summary>One service's real Program as a Kestrel app on 127.0.0.1 (port chosen by the kernel), in this process.</summary>
public sealed class ServiceApp : IAsyncDisposable
{
    private readonly IServiceFactory _factory;

    private readonly ConcurrentBag<HttpClient> _callers = [];

    private ServiceApp(IServiceFactory factory, CapturedLogs logs, bool isPublic)
    {
        _factory = factory;
        Logs = logs;
        var address = factory.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
        BaseAddress = new Uri(address.TrimEnd('/') + "/");
        Client = new HttpClient { BaseAddress = BaseAddress, Timeout = TimeSpan.FromSeconds(60) };
        if (isPublic)
        {
            // Minted on the service's own clock (a test's fake clock included), so the service finds them valid.
            Issuer = TestAccess.Issuer(factory.Services.GetRequiredService<TimeProvider>());
            Client.DefaultRequestHeaders.Authorization = new("Bearer", Issuer.Issue(DevelopmentCaller.Operator()));
        }
    }

    public CapturedLogs Logs { get; }

    public Uri BaseAddress { get; }

    /// <summary>A client of the service; for a public service it carries an application token with every role (it acts for every owner).</summary>
    public HttpClient Client { get; }

    /// <summary>
    /// The development issuer a public service trusts (unless a test configured its own <c>Authentication:Mode</c>),
    /// on the service's clock; null for internal services.
    /// </summary>
    public DevelopmentIssuer? Issuer { get; }

    /// <summary>A client whose requests carry <paramref name="caller"/>'s token, or no token when null.</summary>
    public HttpClient ClientAs(DevelopmentCaller? caller)
    {
        var client = new HttpClient { BaseAddress = BaseAddress, Timeout = TimeSpan.FromSeconds(60) };
        if (caller is not null)
        {
            client.DefaultRequestHeaders.Authorization = new("Bearer", (Issuer ?? throw new InvalidOperationException("Only a public service takes tokens.")).Issue(caller));
        }

        _callers.Add(client);
        return client;
    }

    /// <summary>A client whose requests carry <paramref name="token"/> as they are, however malformed.</summary>
    public HttpClient ClientWithToken(string authorization)
    {
        var client = new HttpClient { BaseAddress = BaseAddress, Timeout = TimeSpan.FromSeconds(60) };
        client.DefaultRequestHeaders.TryAddWithoutValidation("Authorization", authorization);
        _callers.Add(client);
        return client;
    }

    public IServiceProvider Services => _factory.Services;

    /// <summary>
    /// Composes the service as its Program does, with <paramref name="settings"/> on top of its configuration,
    /// without starting it: for settings that must be refused at start, and clients that must never be used.
    /// </summary>
    public static WebApplication Build(ServiceDefinition service, IReadOnlyDictionary<string, string?> settings, CapturedLogs? logs = null)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { EnvironmentName = "Production" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        if (service.IsPublic && !settings.ContainsKey("Authentication:Mode"))
        {
            builder.Configuration.AddInMemoryCollection(TestAccess.Settings);
        }

        builder.Configuration.AddInMemoryCollection(settings);
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(logs ?? new CapturedLogs());
        builder.AddServiceDefaults(service.Name);
        service.AddServices(builder);
        var app = builder.Build();
        app.MapDefaultEndpoints();
        service.MapApi(app);
        return app;
    }

    /// <summary>
    /// Starts the service's real Program with <paramref name="settings"/> on top of its configuration, and
    /// <paramref name="testServices"/> registered after its own (e.g. a fake clock), in <paramref name="environment"/>.
    /// </summary>
    public static async Task<ServiceApp> StartAsync(
        ServiceDefinition service, IReadOnlyDictionary<string, string?> settings, Action<IServiceCollection>? testServices = null, string environment = "Production")
    {
        var logs = new CapturedLogs();
        var factory = CreateFactory(service, settings, logs, testServices, environment);
        try
        {
            await Task.Run(factory.StartServer);
        }
        catch
        {
            await factory.DisposeAsync();
            throw;
        }

        return new ServiceApp(factory, logs, service.IsPublic);
    }

    /// <summary>
    /// The service's real Program, in Production unless <paramref name="environment"/> says otherwise, with
    /// <paramref name="settings"/> on top of its configuration and its logs captured.
    /// </summary>
    public static IServiceFactory CreateFactory(
        ServiceDefinition service, IReadOnlyDictionary<string, string?> settings, CapturedLogs logs, Action<IServiceCollection>? testServices = null, string environment = "Production") =>
        service.CreateFactory(web =>
        {
            web.UseEnvironment(environment);
            web.ConfigureAppConfiguration((_, configuration) =>
            {
                if (service.IsPublic && !settings.ContainsKey("Authentication:Mode"))
                {
                    configuration.AddInMemoryCollection(TestAccess.Settings);
                }

                configuration.AddInMemoryCollection(settings);
            });
            web.ConfigureTestServices(services =>
            {
                // The framework's console, debug and event-source loggers give way to the captured logs; OpenTelemetry's stays.
                foreach (var framework in services.Where(descriptor => descriptor.ServiceType == typeof(ILoggerProvider)
                    && descriptor.ImplementationType?.Namespace?.StartsWith("Microsoft.Extensions.Logging", StringComparison.Ordinal) == true).ToList())
                {
                    services.Remove(framework);
                }

                services.AddSingleton<ILoggerProvider>(logs);
                testServices?.Invoke(services);
            });
        });

    public async ValueTask DisposeAsync()
    {
        Client.Dispose();
        foreach (var caller in _callers)
        {
            caller.Dispose();
        }

        await _factory.DisposeAsync();
    }
}

/// <summary>Collects formatted log messages (Information and above) with their category and event name.</summary>
public sealed class CapturedLogs : ILoggerProvider
{
    private readonly ConcurrentQueue<CapturedLog> _entries = new();

    // Completed and replaced at every entry, so a waiter wakes once per new entry.
    private TaskCompletionSource _written = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public IReadOnlyCollection<CapturedLog> Entries => _entries;

    public IEnumerable<string> Messages => _entries.Select(entry => entry.Message);

    /// <summary>
    /// The first entry matching <paramref name="match"/>, waiting for it up to <paramref name="timeout"/>: a log
    /// written on another thread (e.g. by a Program after its host failed) may land after the caller saw the failure.
    /// </summary>
    public async Task<CapturedLog> WaitForAsync(Func<CapturedLog, bool> match, TimeSpan timeout)
    {
        using var deadline = new CancellationTokenSource(timeout);
        while (true)
        {
            var written = _written;
            if (_entries.FirstOrDefault(match) is { } entry)
            {
                return entry;
            }

            try
            {
                await written.Task.WaitAsync(deadline.Token);
            }
            catch (OperationCanceledException)
            {
                throw new TimeoutException($"No log entry matched within {timeout}; logged: {string.Join(" / ", Messages)}");
            }
        }
    }

    private void Add(CapturedLog entry)
    {
        _entries.Enqueue(entry);
        Interlocked.Exchange(ref _written, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
    }

    public ILogger CreateLogger(string categoryName) => new Logger(this, categoryName);

    public void Dispose()
    {
    }

    private sealed class Logger(CapturedLogs owner, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Information;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (IsEnabled(logLevel))
            {
                owner.Add(new CapturedLog(category, logLevel, eventId.Name, formatter(state, exception)));
            }
        }
    }
}

public sealed record CapturedLog(string Category, LogLevel Level, string? EventName, string Message);
