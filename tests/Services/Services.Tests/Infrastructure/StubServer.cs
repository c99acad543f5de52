using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>A small real HTTP server on 127.0.0.1 standing in for a backend whose behaviour a test controls.</summary>
internal sealed class StubServer : IAsyncDisposable
{
    private readonly WebApplication _app;

    private StubServer(WebApplication app)
    {
        _app = app;
        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
        BaseAddress = new Uri(address.TrimEnd('/') + "/");
    }

    public Uri BaseAddress { get; }

    public static async Task<StubServer> StartAsync(Action<WebApplication> map)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Logging.ClearProviders();
        var app = builder.Build();
        map(app);
        await app.StartAsync();
        return new StubServer(app);
    }

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
