using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Configuration;
using DroneDelivery.Emulators.CosmosDb.Faults;
using DroneDelivery.Emulators.CosmosDb.Metrics;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Query;
using DroneDelivery.Emulators.CosmosDb.Storage;
using DroneDelivery.Emulators.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Logging;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// The request pipeline: authorise, route, let a handler answer, then apply the capacity model
/// (charge the partitions, wait the modelled latency) and record metrics and timings. Every failure
/// becomes a Cosmos-shaped error response; nothing a client sends can stop the process.
/// </summary>
internal sealed class CosmosGateway
{
    /// <summary>The service's item size limit; larger bodies are answered 413.</summary>
    public const int MaxRequestBytes = 2 * 1024 * 1024;

    private readonly AccountStore _store;
    private readonly MasterKeyAuthorizer _authorizer;
    private readonly MetadataHandlers _metadata;
    private readonly RequestLog _log;
    private readonly EmulatorInstruments _instruments;
    private readonly ILogger _logger;
    private readonly TimeProvider _time;
    private readonly long _startTimestamp = Stopwatch.GetTimestamp();

    private readonly CosmosFaultInjector _faults;

    public CosmosGateway(AccountStore store, CosmosEmulatorOptions options, RequestLog log, EmulatorInstruments instruments, ILogger logger, CosmosFaultInjector faults)
    {
        _store = store;
        _faults = faults;
        _time = options.TimeProvider;
        _authorizer = new MasterKeyAuthorizer(options.AccountKey, options.TimeProvider);
        _metadata = new MetadataHandlers(store, options);
        _log = log;
        _instruments = instruments;
        _logger = logger;
    }

    public async Task HandleAsync(HttpContext http)
    {
        var started = Stopwatch.GetTimestamp();
        var startedAt = DateTimeOffset.UtcNow;
        var path = http.Request.Path.Value ?? "/";
        ResourceAddress? address = null;
        GatewayResponse response;
        try
        {
            address = ResourceAddress.Parse(path, _store.IsDatabaseRid);
            var headers = http.Request.Headers;
            var failure = _authorizer.Verify(
                headers[CosmosHeaders.Authorization].ToString(),
                http.Request.Method,
                address.SignatureType,
                address.SignatureLink,
                headers.TryGetValue(CosmosHeaders.XDate, out var xDate) ? xDate.ToString() : null,
                headers.TryGetValue(CosmosHeaders.Date, out var date) ? date.ToString() : null);
            if (failure is not null)
            {
                response = GatewayResponse.Error(401, "Unauthorized", failure);
            }
            else
            {
                var body = await ReadBodyAsync(http.Request, http.RequestAborted).ConfigureAwait(false);
                response = body is null
                    ? GatewayResponse.Error(413, "RequestEntityTooLarge", $"The request is larger than the {MaxRequestBytes / (1024 * 1024)} MB item size limit.")
                    : Dispatch(new GatewayRequest(http, address, body));
            }
        }
        catch (BadRequestException e)
        {
            response = GatewayResponse.BadRequest(e.Message, e.SubStatusCode);
        }
        catch (QueryException e)
        {
            response = GatewayResponse.BadRequest(e.Message);
        }
        catch (JsonException e)
        {
            response = GatewayResponse.BadRequest($"The request is not valid JSON: {e.Message}");
        }
        catch (OperationCanceledException) when (http.RequestAborted.IsCancellationRequested)
        {
            return;
        }
        catch (BadHttpRequestException e)
        {
            // Kestrel could not read the request: a body that ended before its Content-Length (a client that
            // gave up mid-send), one too slow or too large. The client's doing, answered with Kestrel's status.
            response = GatewayResponse.Error(e.StatusCode, "BadRequest", $"The request could not be read: {e.Message}");
        }
        catch (Exception e)
        {
            _logger.LogError(e, "Unexpected failure serving {Method} {Path}", http.Request.Method, path);
            response = GatewayResponse.Error(500, "InternalServerError", $"The emulator failed to serve the request: {e.Message}");
        }

        Account(response);
        Describe(Activity.Current, response);
        var recorded = false;
        try
        {
            if (response.Latency > TimeSpan.Zero)
            {
                await ModelledDelay.AtLeastAsync(response.Latency, _time, http.RequestAborted).ConfigureAwait(false);
            }

            // Logged before the answer is written: a client that reads the log once it has its
            // answer (to count its calls or its throttled attempts) must find the request there.
            Record(http, path, address, response, started, startedAt);
            recorded = true;
            await WriteAsync(http, response).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or OperationCanceledException)
        {
            // The client went away; nothing to answer.
        }

        if (!recorded)
        {
            Record(http, path, address, response, started, startedAt);
        }
    }

    /// <summary>
    /// Names the request's server span (present only when a tracer listens, e.g. OTLP export is on) after what the
    /// model did: operation, container, the physical partitions it charged, its RU and a throttle — what a trace
    /// of a serial or parallel fan-out, or of a 429 and its retry, is read by.
    /// </summary>
    private static void Describe(Activity? span, GatewayResponse response)
    {
        if (span is null)
        {
            return;
        }

        span.DisplayName = response.Container is { } container ? $"{response.Operation} {container.Id}" : response.Operation;
        span.SetTag("db.operation.name", response.Operation);
        span.SetTag("db.collection.name", response.Container?.Id);
        span.SetTag("db.cosmosdb.request_charge", response.RequestCharge);
        if (response.PartitionCharges.Count > 0)
        {
            span.SetTag("cosmos_emulator.partitions", string.Join(',', response.PartitionCharges.Select(p => p.Partition.Id).Distinct()));
        }

        if (response.Throttled)
        {
            span.SetTag("cosmos_emulator.throttled", true);
        }
    }

    private GatewayResponse Dispatch(GatewayRequest request)
    {
        var address = request.Address;
        switch (address.Kind)
        {
            case ResourceKind.Account:
                return request.Method == "GET"
                    ? _metadata.ReadAccount(request).Named(CosmosEmulatorOperations.ReadAccount)
                    : MetadataHandlers.MethodNotAllowed(request);
            case ResourceKind.DatabaseFeed:
                return _metadata.Databases(request);
            case ResourceKind.OfferFeed:
                return _metadata.Offers(request);
            case ResourceKind.Offer:
                return _store.FindOffer(address.Item!) is { } offer
                    ? _metadata.Offer(request, offer)
                    : GatewayResponse.NotFound().Named(CosmosEmulatorOperations.ReadOffer);
            case ResourceKind.Unsupported:
                return GatewayResponse.BadRequest($"The resource type '{address.UnsupportedType}' is not supported by this emulator.");
            case ResourceKind.Unknown:
                return GatewayResponse.NotFound($"The path '{address.SignatureLink}' does not name a Cosmos DB resource this emulator knows.");
        }

        var database = _store.FindDatabase(address.Database!, address.RidBased);
        if (database is null)
        {
            return GatewayResponse.NotFound($"Database '{address.Database}' does not exist.").Named(CosmosEmulatorOperations.ReadDatabase);
        }

        if (address.Kind == ResourceKind.Database)
        {
            return _metadata.Database(request, database);
        }

        if (address.Kind == ResourceKind.ContainerFeed)
        {
            return _metadata.Containers(request, database);
        }

        var container = (address.RidBased ? database.ContainersByRid : database.Containers).TryGetValue(address.Container!, out var found) ? found : null;
        if (container is null)
        {
            return GatewayResponse.NotFound($"Container '{address.Container}' does not exist in database '{database.Id}'.").Named(CosmosEmulatorOperations.ReadContainer);
        }

        if (address.Kind is ResourceKind.DocumentFeed or ResourceKind.Document && _faults.Draw(database.Id, container.Id) is { } fault)
        {
            return Inject(fault, container, () => Serve(request, container));
        }

        return Serve(request, container);
    }

    private GatewayResponse Serve(GatewayRequest request, ContainerResource container)
    {
        var address = request.Address;
        return address.Kind switch
        {
            ResourceKind.Container => _metadata.Container(request, container),
            ResourceKind.PartitionKeyRangeFeed => _metadata.PartitionKeyRanges(request, container),
            ResourceKind.PartitionKeyRange => GatewayResponse.BadRequest("Reading a single partition key range is not supported; read the pkranges feed."),
            ResourceKind.DocumentFeed => request.Method switch
            {
                "POST" when request.HeaderIsTrue(CosmosHeaders.IsQueryPlanRequest) => QueryHandlers.QueryPlan(request, container),
                "POST" when request.HeaderIsTrue(CosmosHeaders.IsQuery) => QueryHandlers.Query(request, container),
                "POST" => ItemHandlers.Create(request, container),
                "GET" when ChangeFeedHandlers.IsChangeFeed(request) => ChangeFeedHandlers.Read(request, container),
                "GET" => QueryHandlers.ReadFeed(request, container),
                _ => MetadataHandlers.MethodNotAllowed(request),
            },
            _ => request.Method switch
            {
                "GET" => ItemHandlers.Read(request, container, address.Item!),
                "PUT" => ItemHandlers.Replace(request, container, address.Item!),
                "DELETE" => ItemHandlers.Delete(request, container, address.Item!),
                "PATCH" => ItemHandlers.Patch(request, container, address.Item!),
                _ => MetadataHandlers.MethodNotAllowed(request),
            },
        };
    }

    /// <summary>
    /// An injected fault, as the service answers it: 503, 408, 410/1002 and 449 before any work is done; a delay
    /// after the work is done, so a client that gives up first does not know it took effect.
    /// </summary>
    private static GatewayResponse Inject(CosmosFaultRule fault, ContainerResource container, Func<GatewayResponse> serve)
    {
        const string Injected = " (a fault injected by the emulator)";
        var response = fault.Kind switch
        {
            CosmosFaultKind.ServiceUnavailable => GatewayResponse.Error(503, "ServiceUnavailable", "The service is currently unavailable." + Injected),
            CosmosFaultKind.RequestTimeout => GatewayResponse.Error(408, "RequestTimeout", "The request timed out." + Injected),
            CosmosFaultKind.PartitionKeyRangeGone => GatewayResponse.Error(410, "Gone", "The partition key range is gone: it was split." + Injected, subStatusCode: 1002),
            CosmosFaultKind.RetryWith => GatewayResponse.Error(449, "RetryWith", "The operation encountered a transient conflict; retry it." + Injected),
            _ => null,
        };
        if (response is not null)
        {
            response.Container = container;
            return response;
        }

        var served = serve();
        served.Latency += TimeSpan.FromMilliseconds(fault.DelayMilliseconds);
        return served;
    }

    /// <summary>Charges the partitions' RU budgets and updates the model's metrics.</summary>
    private void Account(GatewayResponse response)
    {
        var container = response.Container;
        if (container is not null)
        {
            foreach (var (partition, charge) in response.PartitionCharges)
            {
                if (charge > 0 && !response.BudgetsCharged)
                {
                    container.Pool.Charge(partition.Index, charge);
                }

                partition.Metrics.Record(charge, response.Throttled, container.Pool.PerPartition);
            }
        }

        _instruments.Request(container, response.Operation, response.StatusCode, response.RequestCharge);
    }

    private static async Task<byte[]?> ReadBodyAsync(HttpRequest request, CancellationToken cancellationToken)
    {
        if (request.ContentLength is > MaxRequestBytes)
        {
            return null;
        }

        if (request.ContentLength is { } length)
        {
            var exact = new byte[length];
            await request.Body.ReadExactlyAsync(exact, cancellationToken).ConfigureAwait(false);
            return exact;
        }

        if (!request.Headers.ContainsKey("Transfer-Encoding"))
        {
            return [];
        }

        // Chunked: read up to one byte past the limit to tell "too large" from "exactly at the limit".
        var buffer = System.Buffers.ArrayPool<byte>.Shared.Rent(MaxRequestBytes + 1);
        try
        {
            var total = 0;
            int read;
            while (total <= MaxRequestBytes
                && (read = await request.Body.ReadAsync(buffer.AsMemory(total, MaxRequestBytes + 1 - total), cancellationToken).ConfigureAwait(false)) > 0)
            {
                total += read;
            }

            return total > MaxRequestBytes ? null : buffer.AsSpan(0, total).ToArray();
        }
        finally
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    private static async Task WriteAsync(HttpContext http, GatewayResponse response)
    {
        var headers = http.Response.Headers;
        http.Response.StatusCode = response.StatusCode;
        headers[CosmosHeaders.ActivityId] = http.Request.Headers.TryGetValue(CosmosHeaders.ActivityId, out var activity) && activity.Count > 0
            ? activity.ToString()
            : Guid.NewGuid().ToString();
        headers[CosmosHeaders.RequestCharge] = response.RequestCharge.ToString("0.##", CultureInfo.InvariantCulture);
        headers[CosmosHeaders.GatewayVersion] = "version=2.14.0";
        headers[CosmosHeaders.ServiceVersion] = "version=2.14.0.0";
        if (response.SubStatusCode != 0)
        {
            headers[CosmosHeaders.SubStatus] = response.SubStatusCode.ToString(CultureInfo.InvariantCulture);
        }

        if (response.Container is { } container)
        {
            headers[CosmosHeaders.AltContentPath] = container.AltLink;
        }

        foreach (var (name, value) in response.Headers)
        {
            headers[name] = value;
        }

        if (response.Body.Length > 0 && response.StatusCode is not (204 or 304))
        {
            http.Response.ContentType = "application/json";
            http.Response.ContentLength = response.Body.Length;
            await http.Response.Body.WriteAsync(response.Body, http.RequestAborted).ConfigureAwait(false);
        }
        else
        {
            http.Response.ContentLength = 0;
        }
    }

    private void Record(HttpContext http, string path, ResourceAddress? address, GatewayResponse response, long started, DateTimeOffset startedAt)
    {
        var ended = Stopwatch.GetTimestamp();
        var partitions = response.PartitionCharges;
        _log.Add(new EmulatorRequest(
            _log.NextSequence(),
            startedAt,
            Stopwatch.GetElapsedTime(_startTimestamp, started).TotalMilliseconds,
            Stopwatch.GetElapsedTime(started, ended).TotalMilliseconds,
            response.Latency.TotalMilliseconds,
            http.Request.Method,
            path,
            response.Operation,
            response.Container?.Database.Id ?? (address?.RidBased == false ? address.Database : null),
            response.Container?.Id,
            partitions.Count == 1 ? partitions[0].Partition.Id : null,
            response.StatusCode,
            response.SubStatusCode,
            response.RequestCharge,
            response.DocumentCount,
            http.Request.Headers[CosmosHeaders.ActivityId].ToString() is { Length: > 0 } activity ? activity : null,
            http.Request.Headers[CosmosHeaders.CorrelatedActivityId].ToString() is { Length: > 0 } correlated ? correlated : null,
            partitions.Count,
            http.Request.Headers[CosmosHeaders.PartitionKeyRangeId].ToString() is { Length: > 0 } range ? range : null));
    }
}
