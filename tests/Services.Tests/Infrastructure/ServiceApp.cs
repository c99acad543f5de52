using System.Collections.Concurrent;
using DroneDelivery.ServiceDefaults;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>How to build one of the services: its name, its registrations and its endpoints, as its Program does.</summary>
public sealed record ServiceDefinition(string Name, Action<WebApplicationBuilder> AddServices, Action<WebApplication> MapApi);

/// <summary>One service as a real Kestrel app on 127.0.0.1 (port chosen by the kernel), in this process.</summary>
public sealed class ServiceApp : IAsyncDisposable
{
    private ServiceApp(WebApplication app, CapturedLogs logs)
    {
        App = app;
        Logs = logs;
        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
        BaseAddress = new Uri(address.TrimEnd('/') + "/");
        Client = new HttpClient { BaseAddress = BaseAddress, Timeout = TimeSpan.FromSeconds(60) };
    }

    public WebApplication App { get; }

    public CapturedLogs Logs { get; }

    public Uri BaseAddress { get; }

    public HttpClient Client { get; }

    public IServiceProvider Services => App.Services;

    /// <summary>Builds the service exactly as its Program does, with <paramref name="settings"/> on top of its configuration.</summary>
    public static WebApplication Build(ServiceDefinition service, IReadOnlyDictionary<string, string?> settings, CapturedLogs? logs = null)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { EnvironmentName = "Production" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
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

    public static async Task<ServiceApp> StartAsync(ServiceDefinition service, IReadOnlyDictionary<string, string?> settings)
    {
        var logs = new CapturedLogs();
        var app = Build(service, settings, logs);
        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        return new ServiceApp(app, logs);
    }

    public async ValueTask DisposeAsync()
    {
        Client.Dispose();
        await App.StopAsync();
        await App.DisposeAsync();
    }
}

/// <summary>Collects formatted log messages (Information and above) with their category and event name.</summary>
public sealed class CapturedLogs : ILoggerProvider
{
    private readonly ConcurrentQueue<CapturedLog> _entries = new();

    public IReadOnlyCollection<CapturedLog> Entries => _entries;

    public IEnumerable<string> Messages => _entries.Select(entry => entry.Message);

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
                owner._entries.Enqueue(new CapturedLog(category, logLevel, eventId.Name, formatter(state, exception)));
            }
        }
    }
}

public sealed record CapturedLog(string Category, LogLevel Level, string? EventName, string Message);
