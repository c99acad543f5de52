using System.Globalization;
using System.Net;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Gateway;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

[CollectionDefinition(Name)]
public sealed class HostileInputCollection : ICollectionFixture<HostileEmulator>
{
    public const string Name = "hostile input";
}

/// <summary>One request as a hostile client sends it: method, the path on the wire (percent-encoded), headers and body.</summary>
public sealed record HostileRequest(string Method, string Path, IReadOnlyList<KeyValuePair<string, string>> Headers, byte[]? Body = null, bool Sign = true)
{
    public override string ToString() =>
        $"{Method} {Path} [{string.Join("; ", Headers.Select(h => $"{h.Key}: {Show(h.Value)}"))}] body={Show(Body is null ? "<none>" : Encoding.UTF8.GetString(Body))}";

    internal static string Show(string text) => HostileGen.JsonLiteral(text.Length <= 4000 ? text : text[..4000] + "…(" + text.Length + " chars)", asciiOnly: true);
}

/// <summary>What came back: status, sub-status, the retry-after header and the body.</summary>
public sealed record HostileResponse(int Status, int SubStatus, string? RetryAfter, byte[] Body)
{
    public string Text => Encoding.UTF8.GetString(Body);

    /// <summary>The <c>message</c> of an error body, or null when the body is not the service's error shape.</summary>
    public string? ErrorMessage()
    {
        try
        {
            using var document = JsonDocument.Parse(Body);
            var root = document.RootElement;
            return root.ValueKind == JsonValueKind.Object
                && root.TryGetProperty("code", out var code) && code.ValueKind == JsonValueKind.String && code.GetString()!.Length > 0
                && root.TryGetProperty("message", out var message) && message.ValueKind == JsonValueKind.String
                ? message.GetString()
                : null;
        }
        catch (JsonException)
        {
            return null;
        }
    }

    public override string ToString() => $"{Status}/{SubStatus} {HostileRequest.Show(Text)}";
}

/// <summary>
/// One emulator for every hostile-input target, started in-process on 127.0.0.1 with no modelled
/// latency, four physical partitions per container and generous RU/s (so that the only 429s are
/// ones a case provokes on purpose). Requests go either over HTTP (one pooled client) or straight
/// into the emulator's own request pipeline with an in-memory <see cref="HttpContext"/>: the same
/// code every socket request runs, without a round trip, for the bulk of the cases.
/// </summary>
public sealed class HostileEmulator : IAsyncLifetime
{
    public const string Database = "fuzz";
    public const string Items = "items";
    public const string Hierarchical = "hier";
    public const string Offered = "offered";

    /// <summary>A database the route and metadata targets may create, change and delete things in.</summary>
    public const string Scratch = "scratch";

    public const string ItemsLink = "dbs/fuzz/colls/items";
    public const string HierarchicalLink = "dbs/fuzz/colls/hier";

    /// <summary>Only a hang takes this long: every case is answered in milliseconds.</summary>
    public static readonly TimeSpan HangTimeout = TimeSpan.FromSeconds(30);

    private readonly HashSet<string> _databaseRids = new(StringComparer.Ordinal);
    private HttpClient _http = null!;
    private int _health;

    internal CosmosEmulator Emulator { get; private set; } = null!;

    /// <summary>The RID of the offered container's offer, for the offer target.</summary>
    public string OfferRid { get; private set; } = string.Empty;

    public string ItemsRid { get; private set; } = string.Empty;

    public string DatabaseRid { get; private set; } = string.Empty;

    public async Task InitializeAsync()
    {
        Emulator = await CosmosEmulator.StartAsync(new CosmosEmulatorOptions
        {
            Latency = new LatencyOptions { FixedMilliseconds = 0, PerDocumentMilliseconds = 0, ThrottledMilliseconds = 0 },
            DefaultPhysicalPartitions = 4,
            DefaultThroughput = 1_000_000,
            RequestLogCapacity = 1024,
            MetricsHistorySeconds = 5,
        });
        _http = new HttpClient(new SocketsHttpHandler { AllowAutoRedirect = false, UseCookies = false, AutomaticDecompression = DecompressionMethods.None })
        {
            Timeout = Timeout.InfiniteTimeSpan,
        };

        var database = Expect(201, Send(Post("dbs", Json(new { id = Database }))));
        DatabaseRid = JsonDocument.Parse(database.Body).RootElement.GetProperty("_rid").GetString()!;
        _databaseRids.Add(DatabaseRid);
        var items = Expect(201, Send(Post("dbs/fuzz/colls", Json(new { id = Items, partitionKey = new { paths = new[] { "/pk" }, kind = "Hash", version = 2 } }))));
        ItemsRid = JsonDocument.Parse(items.Body).RootElement.GetProperty("_rid").GetString()!;
        Expect(201, Send(Post("dbs/fuzz/colls", Json(new
        {
            id = Hierarchical,
            partitionKey = new { paths = new[] { "/tenant", "/user", "/session" }, kind = "MultiHash", version = 2 },
        }))));
        var offered = Expect(201, Send(Post("dbs/fuzz/colls", Json(new { id = Offered, partitionKey = new { paths = new[] { "/pk" }, kind = "Hash" } }))));
        var offeredRid = JsonDocument.Parse(offered.Body).RootElement.GetProperty("_rid").GetString()!;
        var offers = Expect(200, Send(new HostileRequest("GET", "/offers", [])));
        OfferRid = JsonDocument.Parse(offers.Body).RootElement.GetProperty("Offers").EnumerateArray()
            .First(o => o.GetProperty("offerResourceId").GetString() == offeredRid).GetProperty("_rid").GetString()!;
        EnsureScratch();
        ResetSeeds();
    }

    public async Task DisposeAsync()
    {
        _http.Dispose();
        await Emulator.DisposeAsync();
    }

    /// <summary>Seed items every target may read, patch or query: <c>seed-0</c>…<c>seed-9</c> in both containers.</summary>
    public void ResetSeeds()
    {
        for (var i = 0; i < 10; i++)
        {
            var item = Json(new { id = $"seed-{i}", pk = $"p{i % 3}", n = i, s = $"text {i}", arr = new object[] { 1, "two", new { x = i } }, obj = new { x = i, y = (string?)null } });
            Expect(201, 200, Send(Post(ItemsLink + "/docs", item, ("x-ms-documentdb-is-upsert", "True"), ("x-ms-documentdb-partitionkey", $"[\"p{i % 3}\"]"))));
            var nested = Json(new { id = $"seed-{i}", tenant = $"t{i % 2}", user = $"u{i % 3}", session = $"s{i}", n = i });
            Expect(201, 200, Send(Post(HierarchicalLink + "/docs", nested, ("x-ms-documentdb-is-upsert", "True"),
                ("x-ms-documentdb-partitionkey", $"[\"t{i % 2}\",\"u{i % 3}\",\"s{i}\"]"))));
        }
    }

    /// <summary>Lets the signing recognise a RID-based database address, as the emulator does.</summary>
    public void KnowDatabaseRid(string rid)
    {
        lock (_databaseRids)
        {
            _databaseRids.Add(rid);
        }
    }

    /// <summary>The scratch database, created again if a case deleted it.</summary>
    public void EnsureScratch()
    {
        var created = Expect(201, 409, Send(Post("dbs", Json(new { id = Scratch }))));
        if (created.Status == 201)
        {
            KnowDatabaseRid(JsonDocument.Parse(created.Body).RootElement.GetProperty("_rid").GetString()!);
        }
    }

    /// <summary>
    /// Proves the emulator still serves valid requests after a batch of hostile ones, over HTTP: a
    /// create, a point read, a partition-scoped query, a cross-partition query and a change feed read.
    /// </summary>
    public void AssertHealthy()
    {
        var n = Interlocked.Increment(ref _health);
        var id = $"health-{n}";
        var key = ("x-ms-documentdb-partitionkey", "[\"health\"]");
        Expect(201, Send(Post(ItemsLink + "/docs", Json(new { id, pk = "health", n }), key)));
        var read = Expect(200, Send(new HostileRequest("GET", $"/{ItemsLink}/docs/{id}", [new(key.Item1, key.Item2)])));
        Assert.Equal(n, JsonDocument.Parse(read.Body).RootElement.GetProperty("n").GetInt32());
        var query = Expect(200, Send(Query(ItemsLink, "SELECT VALUE c.n FROM c WHERE c.id = @id", [("@id", id)], key)));
        Assert.Equal(n, JsonDocument.Parse(query.Body).RootElement.GetProperty("Documents")[0].GetInt32());
        Expect(200, Send(Query(ItemsLink, "SELECT c.id FROM c WHERE c.pk = 'p1'", [], ("x-ms-documentdb-query-enablecrosspartition", "True"))));
        Expect(200, 304, Send(new HostileRequest("GET", $"/{ItemsLink}/docs", [new("A-IM", "Incremental feed"), new("x-ms-documentdb-partitionkeyrangeid", "0")])));
        Expect(200, Send(new HostileRequest("GET", "/_emulator/health", [], Sign: false)));
    }

    /// <summary>Sends over HTTP through the listener; a hang fails the case.</summary>
    public HostileResponse Send(HostileRequest request)
    {
        using var message = new HttpRequestMessage(new HttpMethod(request.Method), new Uri(Emulator.Endpoint.GetLeftPart(UriPartial.Authority) + request.Path));
        if (request.Body is not null)
        {
            message.Content = new ByteArrayContent(request.Body);
        }

        // HTTP/1.1 header values are ASCII: other characters travel as JSON escapes, as the SDKs send them.
        foreach (var (name, value) in Signed(request))
        {
            if (!message.Headers.TryAddWithoutValidation(name, HostileGen.HeaderSafe(value)))
            {
                message.Content ??= new ByteArrayContent([]);
                message.Content.Headers.TryAddWithoutValidation(name, HostileGen.HeaderSafe(value));
            }
        }

        using var timeout = new CancellationTokenSource(HangTimeout);
        try
        {
            using var response = _http.SendAsync(message, timeout.Token).GetAwaiter().GetResult();
            var body = response.Content.ReadAsByteArrayAsync(timeout.Token).GetAwaiter().GetResult();
            var subStatus = response.Headers.TryGetValues("x-ms-substatus", out var values) ? int.Parse(values.First(), CultureInfo.InvariantCulture) : 0;
            var retryAfter = response.Headers.TryGetValues("x-ms-retry-after-ms", out var retry) ? retry.First() : null;
            return new HostileResponse((int)response.StatusCode, subStatus, retryAfter, body);
        }
        catch (OperationCanceledException) when (timeout.IsCancellationRequested)
        {
            throw new HostileInputException($"No answer within {HangTimeout.TotalSeconds} s (a hang).");
        }
        catch (HttpRequestException) when (HeaderBytes(request) > KestrelHeaderLimit)
        {
            // Kestrel answers headers beyond its limit with 431 and closes the connection while a client may still
            // be sending them; HttpClient then reports the failed send, not the answer. Read the answer itself.
            return SendRaw(request);
        }
        catch (HttpRequestException e)
        {
            throw new HostileInputException($"The connection failed: {e.Message}");
        }
    }

    /// <summary>Kestrel's default limit on a request's headers (KestrelServerLimits.MaxRequestHeadersTotalSize), which the emulator keeps.</summary>
    private const int KestrelHeaderLimit = 32 * 1024;

    private int HeaderBytes(HostileRequest request) => Signed(request).Sum(h => h.Key.Length + HostileGen.HeaderSafe(h.Value).Length + 4);

    /// <summary>What the server sends until it closes the connection; a reset after an answer ends it too.</summary>
    private static async Task<byte[]> ReadUntilClosedAsync(Stream stream, CancellationToken cancellationToken)
    {
        var received = new List<byte>();
        var buffer = new byte[4096];
        try
        {
            int n;
            while ((n = await stream.ReadAsync(buffer, cancellationToken)) > 0)
            {
                received.AddRange(buffer.AsSpan(0, n));
            }
        }
        catch (IOException)
        {
            // A reset after the answer: what arrived before it is the answer.
        }

        return [.. received];
    }

    private string Head(HostileRequest request, int contentLength)
    {
        var head = new StringBuilder($"{request.Method} {request.Path} HTTP/1.1\r\nHost: 127.0.0.1:{Emulator.Endpoint.Port}\r\n");
        foreach (var (name, value) in Signed(request))
        {
            head.Append(name).Append(": ").Append(HostileGen.HeaderSafe(value)).Append("\r\n");
        }

        head.Append(CultureInfo.InvariantCulture, $"Content-Length: {contentLength}\r\nConnection: close\r\n\r\n");
        return head.ToString();
    }

    /// <summary>
    /// Sends the request over a plain socket while reading the answer at the same time, so an answer the server
    /// gives before the request is fully sent is still seen. Only the status line is kept.
    /// </summary>
    private HostileResponse SendRaw(HostileRequest request)
    {
        using var timeout = new CancellationTokenSource(HangTimeout);
        using var client = new System.Net.Sockets.TcpClient();
        client.Connect("127.0.0.1", Emulator.Endpoint.Port);
        var stream = client.GetStream();
        var head = Head(request, request.Body?.Length ?? 0);
        var answer = Task.Run(async () => Encoding.ASCII.GetString(await ReadUntilClosedAsync(stream, timeout.Token)));
        try
        {
            stream.Write(Encoding.ASCII.GetBytes(head));
            stream.Write(request.Body ?? []);
        }
        catch (IOException)
        {
            // The server stopped reading: its answer is what counts.
        }

        try
        {
            var text = answer.GetAwaiter().GetResult();
            var statusLine = text.Split("\r\n", 2)[0].Split(' ');
            return statusLine is [_, var code, ..] && int.TryParse(code, NumberStyles.None, CultureInfo.InvariantCulture, out var status)
                ? new HostileResponse(status, 0, null, [])
                : throw new HostileInputException($"The connection failed with no answer (headers of {HeaderBytes(request)} bytes): \"{HostileRequest.Show(text)}\"");
        }
        catch (OperationCanceledException) when (timeout.IsCancellationRequested)
        {
            throw new HostileInputException($"No answer within {HangTimeout.TotalSeconds} s (a hang).");
        }
    }

    /// <summary>
    /// Runs the request through the emulator's own pipeline with an in-memory HTTP context: the code
    /// every HTTP request runs (authorisation, routing, handlers, error mapping, accounting), without
    /// the socket. Exceptions escaping the pipeline and hangs fail the case.
    /// </summary>
    public HostileResponse Direct(HostileRequest request) => Direct(request, request.Body is null ? null : (new MemoryStream(request.Body, writable: false), request.Body.Length));

    /// <summary>
    /// <see cref="Direct(HostileRequest)"/> with a body stream of its own and the Content-Length it declares:
    /// a stream that fails as Kestrel's does when a client stops mid-body.
    /// </summary>
    public HostileResponse Direct(HostileRequest request, (Stream Stream, long ContentLength)? body)
    {
        var http = new DefaultHttpContext();
        http.Request.Method = request.Method;
        http.Request.Scheme = "http";
        http.Request.Host = new HostString("127.0.0.1", Emulator.Endpoint.Port);
        http.Request.Path = new PathString(ServerPath(request.Path));
        foreach (var (name, value) in Signed(request))
        {
            http.Request.Headers.Append(name, value);
        }

        if (body is { } given)
        {
            http.Request.Body = given.Stream;
            http.Request.ContentLength = given.ContentLength;
        }

        var responseBody = new MemoryStream();
        http.Response.Body = responseBody;
        var (_, escaped) = Fuzz.Bounded(request, () =>
        {
            Emulator.Pipeline.HandleAsync(http).GetAwaiter().GetResult();
            return true;
        });
        if (escaped is not null)
        {
            throw new HostileInputException($"{request}: an exception escaped the request pipeline: {escaped}");
        }

        var headers = http.Response.Headers;
        var subStatus = headers.TryGetValue("x-ms-substatus", out var values) ? int.Parse(values.ToString(), CultureInfo.InvariantCulture) : 0;
        var retryAfter = headers.TryGetValue("x-ms-retry-after-ms", out var retry) ? retry.ToString() : null;
        return new HostileResponse(http.Response.StatusCode, subStatus, retryAfter, responseBody.ToArray());
    }

    /// <summary>The path as Kestrel hands it to the application: percent-decoded, except an encoded '/'.</summary>
    public static string ServerPath(string wirePath)
    {
        var pathOnly = wirePath.Split('?', 2)[0];
        var parts = pathOnly.Split("%2F", StringSplitOptions.None)
            .Select(p => p.Split("%2f").Select(Uri.UnescapeDataString));
        return string.Join("%2F", parts.Select(p => string.Join("%2f", p)));
    }

    public static HostileRequest Post(string link, byte[] body, params (string Name, string Value)[] headers) =>
        new("POST", "/" + link, [.. headers.Select(h => new KeyValuePair<string, string>(h.Name, h.Value))], body);

    public static HostileRequest Query(string link, string sql, (string Name, object? Value)[] parameters, params (string Name, string Value)[] headers) =>
        new("POST", $"/{link}/docs",
            [new("x-ms-documentdb-isquery", "True"), new("Content-Type", "application/query+json"), .. headers.Select(h => new KeyValuePair<string, string>(h.Name, h.Value))],
            Json(new { query = sql, parameters = parameters.Select(p => new { name = p.Name, value = p.Value }) }));

    public static byte[] Json<T>(T value) => JsonSerializer.SerializeToUtf8Bytes(value);

    public static HostileResponse Expect(int status, HostileResponse response) => Expect(status, status, response);

    public static HostileResponse Expect(int status, int orStatus, HostileResponse response)
    {
        if (response.Status != status && response.Status != orStatus)
        {
            throw new HostileInputException($"A valid request was answered {response}; expected {status}.");
        }

        return response;
    }

    /// <summary>The request's headers plus a valid master-key signature for the resource the emulator will parse from its path.</summary>
    private IEnumerable<KeyValuePair<string, string>> Signed(HostileRequest request)
    {
        if (!request.Sign)
        {
            return request.Headers;
        }

        var names = new HashSet<string>(request.Headers.Select(h => h.Key), StringComparer.OrdinalIgnoreCase);
        var added = new List<KeyValuePair<string, string>>();
        var date = names.Contains("x-ms-date")
            ? request.Headers.First(h => string.Equals(h.Key, "x-ms-date", StringComparison.OrdinalIgnoreCase)).Value
            : DateTime.UtcNow.ToString("r", CultureInfo.InvariantCulture);
        if (!names.Contains("x-ms-date"))
        {
            added.Add(new("x-ms-date", date));
        }

        if (!names.Contains("authorization"))
        {
            ResourceAddress address;
            lock (_databaseRids)
            {
                address = ResourceAddress.Parse(ServerPath(request.Path), _databaseRids.Contains);
            }

            var payload = $"{request.Method.ToLowerInvariant()}\n{address.SignatureType.ToLowerInvariant()}\n{address.SignatureLink}\n{date.ToLowerInvariant()}\n\n";
            var signature = Convert.ToBase64String(HMACSHA256.HashData(Convert.FromBase64String(Emulator.AccountKey), Encoding.UTF8.GetBytes(payload)));
            added.Add(new("authorization", Uri.EscapeDataString($"type=master&ver=1.0&sig={signature}")));
        }

        if (!names.Contains("x-ms-version"))
        {
            added.Add(new("x-ms-version", "2020-07-15"));
        }

        return [.. request.Headers, .. added];
    }
}

/// <summary>A case the emulator answered wrongly (a 5xx, a hang, an escaped exception, a malformed error).</summary>
public sealed class HostileInputException(string message) : Exception(message);
