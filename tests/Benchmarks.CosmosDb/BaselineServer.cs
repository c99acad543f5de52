using System.Net;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace DroneDelivery.Benchmarks.CosmosDb;

/// <summary>
/// The baseline: bare Kestrel on 127.0.0.1 answering GET with the stored item and POST with the query
/// page the emulator returned, byte for byte, with no protocol work at all.
/// </summary>
internal static class BaselineServer
{
    public const string ReadyLine = "Baseline ready";

    public static async Task RunAsync(int port, string readBodyPath, string queryBodyPath)
    {
        var readBody = await File.ReadAllBytesAsync(readBodyPath);
        var queryBody = await File.ReadAllBytesAsync(queryBodyPath);
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
            if (http.Request.ContentLength > 0)
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
