using System.Net;
using System.Text.Json;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace DroneDelivery.Benchmarks.CosmosDb;

/// <summary>
/// The baseline: bare Kestrel on 127.0.0.1 answering GET with the stored item and POST with the query
/// page the emulator returned (for a cross-partition query, the page and continuation the emulator returned
/// for that query and continuation), byte for byte, with no protocol work at all.
/// </summary>
internal static class BaselineServer
{
    public const string ReadyLine = "Baseline ready";

    public static async Task RunAsync(int port, string readBodyPath, string queryBodyPath, string crossPartitionPagesPath)
    {
        var readBody = await File.ReadAllBytesAsync(readBodyPath);
        var queryBody = await File.ReadAllBytesAsync(queryBodyPath);
        // Cross-partition pages: each (query body, continuation sent) answers the emulator's page and continuation.
        var pages = JsonSerializer.Deserialize<List<RecordedPage>>(await File.ReadAllBytesAsync(crossPartitionPagesPath))!
            .ToDictionary(p => (p.Query, p.Continuation ?? ""), p => (Body: Convert.FromBase64String(p.Body), p.Next));
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.AddServerHeader = false;
            kestrel.Listen(IPAddress.Loopback, port, listen => listen.Protocols = HttpProtocols.Http1);
        });
        var app = builder.Build();
        app.Run(async http =>
        {
            var body = HttpMethods.IsGet(http.Request.Method) ? readBody : queryBody;
            if (http.Request.Headers.ContainsKey("x-ms-documentdb-query-enablecrosspartition"))
            {
                using var reader = new StreamReader(http.Request.Body);
                var (page, next) = pages[(await reader.ReadToEndAsync(), http.Request.Headers["x-ms-continuation"].ToString())];
                body = page;
                if (next is not null)
                {
                    http.Response.Headers["x-ms-continuation"] = next;
                }
            }
            else if (http.Request.ContentLength > 0)
            {
                await http.Request.Body.CopyToAsync(Stream.Null);
            }

            http.Response.ContentType = "application/json";
            http.Response.ContentLength = body.Length;
            await http.Response.Body.WriteAsync(body);
        });
        await app.StartAsync();
        Console.WriteLine(ReadyLine);
        await app.WaitForShutdownAsync();
    }
}

/// <summary>One page of a cross-partition query as the emulator answered it, for the baseline to answer alike.</summary>
internal sealed record RecordedPage(string Query, string? Continuation, string Body, string? Next);
