using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Benchmarks.GatewayAuth;

/// <summary>
/// Delivery's, Package's and DroneScheduler's monthly summaries from one Kestrel app, answered at once
/// with the contracts' shapes: the benchmark measures the gateway's own work, not the backends'.
/// </summary>
internal sealed class InstantBackends : IAsyncDisposable
{
    private readonly WebApplication _app;

    private InstantBackends(WebApplication app, Uri baseAddress)
    {
        _app = app;
        BaseAddress = baseAddress;
    }

    public Uri BaseAddress { get; }

    public static async Task<InstantBackends> StartAsync()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0));
        var app = builder.Build();
        app.MapGet("/api/deliveries/summary", (string ownerId, int year, int month) => Results.Json(new { ownerId, year, month, count = 7 }));
        app.MapGet("/api/packages/summary", (string ownerId, int year, int month) => Results.Json(new { ownerId, year, month, count = 5, totalWeight = 12.5 }));
        app.MapGet("/api/dronedeliveries/utilization", (string ownerId, int year, int month) => Results.Json(new { ownerId, year, month, traveledMiles = 88.25, assignedHours = 6.5 }));
        await app.StartAsync();
        var address = app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
        return new InstantBackends(app, new Uri(address.TrimEnd('/') + "/"));
    }

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
