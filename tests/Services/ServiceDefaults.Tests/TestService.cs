using System.Collections.Concurrent;
using DroneDelivery.ServiceDefaults;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Configuration;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.ServiceDefaults.Tests;

/// <summary>A real Kestrel service on 127.0.0.1 with the service defaults, for one test.</summary>
internal sealed class TestService : IAsyncDisposable
{
    private TestService(WebApplication app, CapturedLogs logs)
    {
        App = app;
        Logs = logs;
        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
        BaseAddress = new Uri(address);
        Client = new HttpClient { BaseAddress = BaseAddress };
    }

    public WebApplication App { get; }

    public CapturedLogs Logs { get; }

    public Uri BaseAddress { get; }

    public HttpClient Client { get; }

    /// <summary>Builds the app without starting it, so a test can start it and observe a failure.</summary>
    public static WebApplication Build(
        Dictionary<string, string?>? settings = null,
        Action<WebApplicationBuilder>? configure = null,
        Action<WebApplication>? map = null,
        CapturedLogs? logs = null)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { EnvironmentName = "Production" });
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Configuration.AddInMemoryCollection(settings ?? new Dictionary<string, string?>());
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(logs ?? new CapturedLogs());
        builder.AddServiceDefaults("test-service");
        configure?.Invoke(builder);
        var app = builder.Build();
        app.MapDefaultEndpoints();
        map?.Invoke(app);
        return app;
    }

    public static async Task<TestService> StartAsync(
        Dictionary<string, string?>? settings = null,
        Action<WebApplicationBuilder>? configure = null,
        Action<WebApplication>? map = null)
    {
        var logs = new CapturedLogs();
        var app = Build(settings, configure, map, logs);
        await app.StartAsync();
        return new TestService(app, logs);
    }

    public async ValueTask DisposeAsync()
    {
        Client.Dispose();
        await App.StopAsync();
        await App.DisposeAsync();
    }
}

/// <summary>Collects formatted log messages.</summary>
internal sealed class CapturedLogs : ILoggerProvider
{
    private readonly ConcurrentQueue<string> _messages = new();

    public IReadOnlyCollection<string> Messages => _messages;

    public ILogger CreateLogger(string categoryName) => new Logger(this);

    public void Dispose()
    {
    }

    private sealed class Logger(CapturedLogs owner) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Information;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (IsEnabled(logLevel))
            {
                owner._messages.Enqueue(formatter(state, exception));
            }
        }
    }
}
