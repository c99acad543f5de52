using System.Collections.Concurrent;
using System.Diagnostics;
using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// Ingestion and delivery status on loopback, per the contract: <c>POST /api/deliveryrequests</c> answers 202
/// with a Location; the status answers 404 until <see cref="CreatedAfter"/> has passed since acceptance, then
/// 200 with stage <c>Created</c>, and stage <c>Completed</c> from <see cref="CompletedAfter"/>.
/// </summary>
internal sealed class FakeIngestion : IAsyncDisposable
{
    private readonly ConcurrentDictionary<string, long> _acceptedAt = new();
    private readonly ConcurrentQueue<JsonElement> _bodies = new();
    private LoopbackServer _server = null!;
    private int _posts;
    private int _polls;
    private int _nextId;

    public Uri BaseUri => _server.BaseUri;

    public TimeSpan CreatedAfter { get; set; } = TimeSpan.FromMilliseconds(300);

    public TimeSpan CompletedAfter { get; set; } = TimeSpan.FromMilliseconds(300);

    /// <summary>Turns a delivery id into the Location header; null sends none. Default a relative path.</summary>
    public Func<string, string?> LocationFor { get; set; } = id => $"/api/deliveries/{id}/status";

    public int Posts => Volatile.Read(ref _posts);

    public int Polls => Volatile.Read(ref _polls);

    public IReadOnlyList<JsonElement> Bodies => [.. _bodies];

    public static async Task<FakeIngestion> StartAsync()
    {
        var ingestion = new FakeIngestion();
        ingestion._server = await LoopbackServer.StartAsync(app =>
        {
            app.MapPost("/api/deliveryrequests", (Delegate)ingestion.AcceptAsync);
            app.MapGet("/api/deliveries/{id}/status", ingestion.Status);
        });
        return ingestion;
    }

    public ValueTask DisposeAsync() => _server.DisposeAsync();

    private async Task<IResult> AcceptAsync(HttpContext context)
    {
        Interlocked.Increment(ref _posts);
        if (context.Request.ContentType != "application/json")
        {
            return TypedResults.BadRequest("content type");
        }

        using var document = await JsonDocument.ParseAsync(context.Request.Body);
        _bodies.Enqueue(document.RootElement.Clone());
        var id = $"d{Interlocked.Increment(ref _nextId)}";
        _acceptedAt[id] = Stopwatch.GetTimestamp();
        if (LocationFor(id) is { } location)
        {
            context.Response.Headers.Location = location;
        }

        return TypedResults.Json(new { deliveryId = id }, statusCode: StatusCodes.Status202Accepted);
    }

    private IResult Status(string id)
    {
        Interlocked.Increment(ref _polls);
        if (!_acceptedAt.TryGetValue(id, out var acceptedAt) || Stopwatch.GetElapsedTime(acceptedAt) < CreatedAfter)
        {
            return TypedResults.NotFound();
        }

        var stage = Stopwatch.GetElapsedTime(acceptedAt) >= CompletedAfter ? "Completed" : "Created";
        return TypedResults.Json(new { deliveryId = id, stage });
    }
}
