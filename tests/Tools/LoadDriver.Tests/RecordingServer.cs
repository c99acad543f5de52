using System.Collections.Concurrent;
using System.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// A loopback gateway stand-in that serves <c>GET /api/invoices/{ownerId}</c> after an optional delay and
/// records what it saw: every request's path and query, when each arrived and how many it was then
/// handling, and the most requests it was handling at once.
/// </summary>
internal sealed class RecordingServer : IAsyncDisposable
{
    private readonly ConcurrentQueue<string> _requests = new();
    private readonly ConcurrentQueue<Arrival> _arrivals = new();
    private readonly ConcurrentDictionary<int, TaskCompletionSource> _reached = new();
    private LoopbackServer _server = null!;
    private int _concurrent;
    private int _maxConcurrent;

    private RecordingServer()
    {
    }

    public Uri BaseUri => _server.BaseUri;

    /// <summary>Path and query of every request received, in arrival order.</summary>
    public IReadOnlyList<string> Requests => [.. _requests];

    public int MaxConcurrent => Volatile.Read(ref _maxConcurrent);

    /// <summary>Every request's arrival (Stopwatch timestamp) and how many requests were then in hand, itself included, in arrival order.</summary>
    public IReadOnlyList<Arrival> Arrivals => [.. _arrivals];

    public TimeSpan Delay { get; set; }

    /// <summary>When above 0, each response waits (at most a minute) until this many requests have been in hand at once.</summary>
    public int HoldUntilConcurrent { get; set; }

    /// <summary>When set, each response waits for it (at most a minute) before it is written.</summary>
    public Task? Gate { get; set; }

    /// <summary>Chooses the status of each response from its 1-based arrival number; default 200.</summary>
    public Func<int, int> StatusFor { get; set; } = _ => StatusCodes.Status200OK;

    public static async Task<RecordingServer> StartAsync()
    {
        var recording = new RecordingServer();
        recording._server = await LoopbackServer.StartAsync(app => app.MapGet("/api/invoices/{ownerId}", recording.HandleAsync));
        return recording;
    }

    public ValueTask DisposeAsync() => _server.DisposeAsync();

    /// <summary>Completes once <paramref name="count"/> requests have been in hand at once.</summary>
    public Task Reached(int count)
    {
        var reached = _reached.GetOrAdd(count, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
        if (MaxConcurrent >= count)
        {
            reached.TrySetResult();
        }

        return reached.Task;
    }

    private async Task HandleAsync(HttpContext context)
    {
        var arrived = Stopwatch.GetTimestamp();
        _requests.Enqueue(context.Request.Path + context.Request.QueryString);
        var number = _requests.Count;
        var concurrent = Interlocked.Increment(ref _concurrent);
        try
        {
            _arrivals.Enqueue(new Arrival(arrived, concurrent));
            int seen;
            while ((seen = Volatile.Read(ref _maxConcurrent)) < concurrent && Interlocked.CompareExchange(ref _maxConcurrent, concurrent, seen) != seen)
            {
            }

            foreach (var (count, reached) in _reached)
            {
                if (concurrent >= count)
                {
                    reached.TrySetResult();
                }
            }

            if (HoldUntilConcurrent > 0)
            {
                await Task.WhenAny(Reached(HoldUntilConcurrent), Task.Delay(TimeSpan.FromMinutes(1), context.RequestAborted));
            }

            if (Delay > TimeSpan.Zero)
            {
                await Task.Delay(Delay, context.RequestAborted);
            }

            if (Gate is { } gate)
            {
                await Task.WhenAny(gate, Task.Delay(TimeSpan.FromMinutes(1), context.RequestAborted));
            }

            context.Response.StatusCode = StatusFor(number);
            await context.Response.WriteAsJsonAsync(new { ownerId = context.Request.RouteValues["ownerId"], deliveries = new { count = 3 } });
        }
        finally
        {
            Interlocked.Decrement(ref _concurrent);
        }
    }
}

/// <summary>A request's arrival: its Stopwatch timestamp and how many requests were in hand, itself included.</summary>
internal sealed record Arrival(long Timestamp, int Concurrent);
