using System.Diagnostics;
using System.Net;
using Microsoft.Extensions.Options;
using StackExchange.Redis;

namespace DroneDelivery.Delivery.Store;

/// <summary>Why Redis could not do what was asked; answered as 503 by <see cref="Apis.StoreUnavailableHandler"/>.</summary>
public enum StoreFailure
{
    /// <summary>Redis refused a write: "OOM command not allowed when used memory &gt; 'maxmemory'".</summary>
    OutOfMemory,

    /// <summary>No connection to Redis.</summary>
    Unreachable,

    /// <summary>Redis did not answer in time.</summary>
    Timeout,
}

/// <summary>The delivery store cannot serve the request for a reason outside the request.</summary>
public sealed class StoreUnavailableException(StoreFailure failure, string message, Exception inner) : Exception(message, inner)
{
    public StoreFailure Failure { get; } = failure;
}

/// <summary>
/// The process's one <see cref="ConnectionMultiplexer"/>, and the one way to call Redis: every call is
/// a client span and is counted by command and outcome, and Redis' own failures become a
/// <see cref="StoreUnavailableException"/> that names them.
/// </summary>
public sealed partial class RedisConnection : IAsyncDisposable
{
    private readonly Lazy<Task<ConnectionMultiplexer>> _multiplexer;
    private readonly ILogger<RedisConnection> _logger;
    private readonly string _serverAddress;
    private readonly int? _serverPort;

    public RedisConnection(IOptions<RedisSettings> settings, ILogger<RedisConnection> logger)
    {
        _logger = logger;
        var options = ConfigurationOptions.Parse(settings.Value.ConnectionString!);

        // Start even while Redis is down; readiness and each call report it instead.
        options.AbortOnConnectFail = false;
        (_serverAddress, _serverPort) = options.EndPoints[0] switch
        {
            DnsEndPoint dns => (dns.Host, dns.Port),
            IPEndPoint ip => (ip.Address.ToString(), ip.Port),
            var other => (other.ToString() ?? "redis", (int?)null),
        };
        _multiplexer = new Lazy<Task<ConnectionMultiplexer>>(() => ConnectionMultiplexer.ConnectAsync(options));
    }

    /// <summary>Runs one Redis command (or script) as a traced, counted dependency call.</summary>
    /// <param name="command">The Redis command, e.g. <c>GET</c> or <c>EVAL</c>.</param>
    /// <param name="summary">What the call does, for the span name (e.g. the script's name); null for plain commands.</param>
    public async Task<T> ExecuteAsync<T>(string command, string? summary, Func<IDatabase, Task<T>> call)
    {
        var multiplexer = await _multiplexer.Value.ConfigureAwait(false);
        using var activity = DeliveryTelemetry.Source.StartActivity(summary is null ? command : $"{command} {summary}", ActivityKind.Client);
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag("db.system.name", "redis");
            activity.SetTag("db.operation.name", command);
            activity.SetTag("db.namespace", "0");
            activity.SetTag("server.address", _serverAddress);
            activity.SetTag("server.port", _serverPort);
            if (summary is not null)
            {
                activity.SetTag("db.query.summary", summary);
            }
        }

        var started = Stopwatch.GetTimestamp();
        var outcome = DeliveryTelemetry.Outcomes.Success;
        try
        {
            return await call(multiplexer.GetDatabase()).ConfigureAwait(false);
        }
        catch (RedisServerException e) when (e.Message.StartsWith("OOM ", StringComparison.Ordinal) || e.Message.Contains(" OOM command not allowed", StringComparison.Ordinal))
        {
            outcome = DeliveryTelemetry.Outcomes.OutOfMemory;
            DeliveryTelemetry.OutOfMemory.Add(1, new KeyValuePair<string, object?>("db.operation.name", command));
            LogOutOfMemory(_logger, command, summary ?? command, e.Message);
            Fail(activity, DeliveryTelemetry.OutOfMemoryErrorType, e);
            throw new StoreUnavailableException(StoreFailure.OutOfMemory, $"Redis is out of memory: {e.Message}", e);
        }
        catch (RedisTimeoutException e)
        {
            outcome = DeliveryTelemetry.Outcomes.Timeout;
            LogUnavailable(_logger, command, e.Message);
            Fail(activity, "RedisTimeout", e);
            throw new StoreUnavailableException(StoreFailure.Timeout, $"Redis did not answer in time: {e.Message}", e);
        }
        catch (RedisConnectionException e)
        {
            outcome = DeliveryTelemetry.Outcomes.Unavailable;
            LogUnavailable(_logger, command, e.Message);
            Fail(activity, "RedisConnection", e);
            throw new StoreUnavailableException(StoreFailure.Unreachable, $"Redis is unreachable: {e.Message}", e);
        }
        catch (Exception e)
        {
            outcome = DeliveryTelemetry.Outcomes.Error;
            Fail(activity, e.GetType().Name, e);
            throw;
        }
        finally
        {
            var tags = new TagList
            {
                { "db.operation.name", command },
                { "outcome", outcome },
            };
            DeliveryTelemetry.Calls.Add(1, tags);
            DeliveryTelemetry.Duration.Record(Stopwatch.GetElapsedTime(started).TotalSeconds, tags);
        }
    }

    public async ValueTask DisposeAsync()
    {
        if (_multiplexer.IsValueCreated && _multiplexer.Value.IsCompletedSuccessfully)
        {
            await _multiplexer.Value.Result.CloseAsync(allowCommandsToComplete: true).ConfigureAwait(false);
            _multiplexer.Value.Result.Dispose();
        }
    }

    private static void Fail(Activity? activity, string errorType, Exception e)
    {
        if (activity is null)
        {
            return;
        }

        activity.SetStatus(ActivityStatusCode.Error, e.Message);
        activity.SetTag("error.type", errorType);
        activity.AddEvent(new ActivityEvent("exception", tags: new ActivityTagsCollection
        {
            { "exception.type", e.GetType().FullName },
            { "exception.message", e.Message },
        }));
    }

    [LoggerMessage(EventId = 4100, EventName = "RedisOutOfMemory", Level = LogLevel.Error,
        Message = "Redis is out of memory: {Command} ({Operation}) refused: {RedisError} Raise Redis maxmemory or set key TTLs (Redis:DeliveryTtl, Redis:TrackingEventTtl).")]
    private static partial void LogOutOfMemory(ILogger logger, string command, string operation, string redisError);

    [LoggerMessage(EventId = 4101, EventName = "RedisUnavailable", Level = LogLevel.Warning, Message = "Redis call {Command} failed: {RedisError}")]
    private static partial void LogUnavailable(ILogger logger, string command, string redisError);
}
