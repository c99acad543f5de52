using System.Diagnostics;
using System.Net;

namespace DroneDelivery.Benchmarks.CosmosDb;

/// <summary>What one series measured: throughput and the server process's CPU time per request.</summary>
/// <remarks>For paged queries a request is one page; <see cref="QueriesPerSecond"/> counts queries paged to their end.</remarks>
internal sealed record LoadResult(double RequestsPerSecond, double ServerCpuMicrosecondsPerRequest, double QueriesPerSecond = double.NaN);

/// <summary>A closed-loop load: N workers each sending the next request as soon as the last one answered.</summary>
internal sealed class LoadGenerator(int concurrency)
{
    /// <param name="next">Builds request number i.</param>
    /// <param name="serverCpu">Reads the server process's total CPU time.</param>
    /// <param name="warmUp">Load before measuring (connections, JIT), not counted.</param>
    /// <param name="measured">How long to count completed requests.</param>
    public Task<LoadResult> RunAsync(Func<int, HttpRequestMessage> next, Func<TimeSpan> serverCpu, TimeSpan warmUp, TimeSpan measured) =>
        RunAsync((i, _) => next(i), serverCpu, warmUp, measured, paged: false);

    /// <summary>
    /// Each worker pages query number i to its end, sending every page's <c>x-ms-continuation</c> back
    /// with the next request as the SDK does, then goes on with the next query.
    /// </summary>
    /// <param name="next">Builds the request for page (query i, continuation of the last page or null).</param>
    public Task<LoadResult> RunPagedAsync(Func<int, string?, HttpRequestMessage> next, Func<TimeSpan> serverCpu, TimeSpan warmUp, TimeSpan measured) =>
        RunAsync(next, serverCpu, warmUp, measured, paged: true);

    private async Task<LoadResult> RunAsync(Func<int, string?, HttpRequestMessage> next, Func<TimeSpan> serverCpu, TimeSpan warmUp, TimeSpan measured, bool paged)
    {
        using var handler = new SocketsHttpHandler
        {
            MaxConnectionsPerServer = concurrency,
            PooledConnectionLifetime = Timeout.InfiniteTimeSpan,
            UseProxy = false,
            AutomaticDecompression = DecompressionMethods.None,
        };
        using var client = new HttpMessageInvoker(handler);
        var measuring = false;
        long completed = 0;
        long queries = 0;
        long failed = 0;
        using var stop = new CancellationTokenSource();
        var workers = Enumerable.Range(0, concurrency).Select(worker => Task.Run(async () =>
        {
            var i = worker;
            string? continuation = null;
            while (!stop.IsCancellationRequested)
            {
                using var request = next(i, continuation);
                using var response = await client.SendAsync(request, CancellationToken.None);
                await response.Content.CopyToAsync(Stream.Null);
                continuation = paged && response.Headers.TryGetValues("x-ms-continuation", out var values) ? values.FirstOrDefault() : null;
                if (continuation is null)
                {
                    i += concurrency;
                }

                if (response.StatusCode != HttpStatusCode.OK)
                {
                    Interlocked.Increment(ref failed);
                    continuation = null;
                }
                else if (Volatile.Read(ref measuring))
                {
                    Interlocked.Increment(ref completed);
                    if (paged && continuation is null)
                    {
                        Interlocked.Increment(ref queries);
                    }
                }
            }
        })).ToList();

        await Task.Delay(warmUp);
        var cpuBefore = serverCpu();
        Volatile.Write(ref measuring, true);
        var started = Stopwatch.GetTimestamp();
        await Task.Delay(measured);
        Volatile.Write(ref measuring, false);
        var elapsed = Stopwatch.GetElapsedTime(started);
        var cpu = serverCpu() - cpuBefore;
        var count = Interlocked.Read(ref completed);
        var queryCount = Interlocked.Read(ref queries);
        await stop.CancelAsync();
        await Task.WhenAll(workers);
        if (Interlocked.Read(ref failed) > 0)
        {
            throw new InvalidOperationException($"{failed} requests did not answer 200; the figures would be meaningless.");
        }

        return new LoadResult(count / elapsed.TotalSeconds, count == 0 ? double.NaN : cpu.TotalMicroseconds / count,
            paged ? queryCount / elapsed.TotalSeconds : double.NaN);
    }
}
