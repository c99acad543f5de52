using System.Collections.Concurrent;
using DroneDelivery.Contracts;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>
/// One real HTTP server on 127.0.0.1 answering as the three backends at once — each owner's summaries,
/// and the status of the deliveries it was given (others: 404) — and a gateway pointed at it.
/// </summary>
internal sealed class EdgeBackends : IAsyncDisposable
{
    private readonly StubServer _server;
    private readonly ConcurrentQueue<string> _calls;

    private EdgeBackends(StubServer server, ConcurrentQueue<string> calls, ServiceApp gateway)
    {
        _server = server;
        _calls = calls;
        Gateway = gateway;
    }

    public ServiceApp Gateway { get; }

    /// <summary>Every backend request's path and query, in arrival order.</summary>
    public IReadOnlyCollection<string> Calls => _calls;

    /// <param name="deliveries">Delivery id → owner id of the deliveries Delivery knows.</param>
    /// <param name="settings">Gateway settings on top of the backends' addresses.</param>
    /// <param name="time">The gateway's clock; the system's unless given.</param>
    public static async Task<EdgeBackends> StartAsync(
        IReadOnlyDictionary<string, string>? deliveries = null, Dictionary<string, string?>? settings = null, TimeProvider? time = null)
    {
        var known = deliveries ?? new Dictionary<string, string>();
        var calls = new ConcurrentQueue<string>();
        var server = await StubServer.StartAsync(app =>
        {
            app.Use(async (context, next) =>
            {
                calls.Enqueue(context.Request.Path + context.Request.QueryString);
                await next(context);
            });
            app.MapGet(Routes.Deliveries.Summary, (string ownerId, int year, int month) => Results.Json(new DeliverySummary(ownerId, year, month, 7), ContractJson.Options));
            app.MapGet(Routes.Packages.Summary, (string ownerId, int year, int month) => Results.Json(new PackageSummary(ownerId, year, month, 5, 12.5), ContractJson.Options));
            app.MapGet(Routes.DroneDeliveries.Utilization, (string ownerId, int year, int month) => Results.Json(new DroneUtilization(ownerId, year, month, 88.25, 6.5), ContractJson.Options));
            app.MapGet(Routes.Deliveries.Status, (string id) => known.TryGetValue(id, out var owner)
                ? Results.Json(Status(id, owner), ContractJson.Options)
                : Results.Problem(statusCode: 404, title: "Delivery not found"));
        });
        var all = new Dictionary<string, string?>
        {
            ["Backends:Delivery:BaseAddress"] = server.BaseAddress.ToString(),
            ["Backends:Package:BaseAddress"] = server.BaseAddress.ToString(),
            ["Backends:DroneScheduler:BaseAddress"] = server.BaseAddress.ToString(),
        };
        foreach (var (key, value) in settings ?? [])
        {
            all[key] = value;
        }

        try
        {
            var gateway = await ServiceApp.StartAsync(Definitions.Gateway, all, time is null ? null : services => services.AddSingleton(time));
            return new EdgeBackends(server, calls, gateway);
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
    }

    /// <summary>The status the stub answers for a known delivery.</summary>
    public static DeliveryStatus Status(string id, string owner) =>
        new(id, owner, DeliveryStage.Created, new DateTimeOffset(2025, 3, 1, 9, 0, 0, TimeSpan.Zero), new DateTimeOffset(2025, 3, 1, 15, 0, 0, TimeSpan.Zero), "drone-0001", new DateTimeOffset(2025, 2, 27, 8, 0, 0, TimeSpan.Zero));

    public async ValueTask DisposeAsync()
    {
        await Gateway.DisposeAsync();
        await _server.DisposeAsync();
    }
}
