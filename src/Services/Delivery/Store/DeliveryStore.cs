using System.Globalization;
using System.Text.Json;
using DroneDelivery.Contracts;
using Microsoft.Extensions.Options;
using StackExchange.Redis;

namespace DroneDelivery.Delivery.Store;

/// <summary>What a <c>PUT</c> of a delivery did.</summary>
public enum PutResult
{
    Created,

    /// <summary>The same delivery already existed (a redelivered message): nothing changed.</summary>
    Unchanged,

    /// <summary>The delivery existed with other values and was replaced (recorded as rescheduled).</summary>
    Replaced,

    /// <summary>The delivery was cancelled; it cannot be scheduled again.</summary>
    Cancelled,
}

/// <summary>What a change to an existing delivery did.</summary>
public enum ChangeResult
{
    Changed,
    NotFound,

    /// <summary>Cancelled deliveries cannot be rescheduled.</summary>
    Cancelled,

    /// <summary>The change would put the deadline at or before the pickup time; nothing was written.</summary>
    DeadlineNotAfterPickup,
}

/// <summary>
/// Deliveries in Redis. Keys: <c>delivery:{id}</c> (the delivery as JSON, TTL <c>Redis:DeliveryTtl</c>),
/// <c>delivery:{id}:events</c> (its tracking events, a list, TTL <c>Redis:TrackingEventTtl</c>) and
/// <c>deliveries:{ownerId}:{yyyy-MM}</c> (the set of the owner's scheduled, not cancelled delivery ids in
/// a billing month; TTL <c>Redis:DeliveryTtl</c>), whose size is the invoice's delivery count. Every
/// change is one Lua script, so it is atomic, costs one round trip, and an out-of-memory Redis reports
/// its own error (a MULTI/EXEC would only say EXECABORT).
/// </summary>
public sealed class DeliveryStore(RedisConnection redis, IOptions<RedisSettings> settings, TimeProvider time)
{
    private const int MaxOptimisticAttempts = 8;

    // KEYS: delivery, events, month set. ARGV: delivery json, delivery ttl ms, events ttl ms, event json, id.
    // Returns the existing delivery's JSON, or nothing when it was created.
    private const string CreateScript = """
        local existing = redis.call('GET', KEYS[1])
        if existing then return existing end
        if ARGV[2] ~= '0' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) else redis.call('SET', KEYS[1], ARGV[1]) end
        redis.call('RPUSH', KEYS[2], ARGV[4])
        if ARGV[3] ~= '0' then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
        redis.call('SADD', KEYS[3], ARGV[5])
        if ARGV[2] ~= '0' then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
        return false
        """;

    // KEYS: delivery, events, old month set, new month set.
    // ARGV: expected json, new json, delivery ttl ms, events ttl ms, event json, id, '1' to be in the new set.
    // Returns 1 when changed, 0 when the delivery is gone, -1 when it changed meanwhile (retry).
    private const string UpdateScript = """
        local current = redis.call('GET', KEYS[1])
        if not current then return 0 end
        if current ~= ARGV[1] then return -1 end
        if ARGV[3] ~= '0' then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2]) end
        redis.call('RPUSH', KEYS[2], ARGV[5])
        if ARGV[4] ~= '0' then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
        redis.call('SREM', KEYS[3], ARGV[6])
        if ARGV[7] == '1' then
          redis.call('SADD', KEYS[4], ARGV[6])
          if ARGV[3] ~= '0' then redis.call('PEXPIRE', KEYS[4], ARGV[3]) end
        end
        return 1
        """;

    private readonly RedisSettings _settings = settings.Value;

    public static string DeliveryKey(string id) => $"delivery:{id}";

    public static string EventsKey(string id) => $"delivery:{id}:events";

    public static string MonthKey(string ownerId, BillingPeriod period) => $"deliveries:{ownerId}:{period}";

    /// <summary>Creates the delivery, or leaves an identical one as it is, or replaces a different one.</summary>
    /// <param name="schedule">A validated schedule.</param>
    public async Task<(PutResult Result, DeliveryRecord Delivery)> PutAsync(string id, DeliverySchedule schedule)
    {
        var now = time.GetUtcNow();
        var requested = new DeliveryRecord(
            id,
            schedule.OwnerId!,
            schedule.PickupLocation!,
            schedule.DropoffLocation!,
            schedule.PickupTime!.Value,
            schedule.Deadline!.Value,
            schedule.Expedited ?? false,
            schedule.ConfirmationRequired ?? ConfirmationType.None,
            schedule.PackageId!,
            schedule.DroneId!,
            DeliveryStage.Created,
            now,
            now);
        var existingJson = await redis.ExecuteAsync("EVAL", "create-delivery", db => db.ScriptEvaluateAsync(
            CreateScript,
            [DeliveryKey(id), EventsKey(id), MonthKey(requested.OwnerId, requested.Period)],
            [Serialize(requested), Milliseconds(_settings.DeliveryTtl), Milliseconds(_settings.TrackingEventTtl), Serialize(new TrackingEvent(DeliveryStage.Created, now)), id])).ConfigureAwait(false);
        if (existingJson.IsNull)
        {
            return (PutResult.Created, requested);
        }

        var existing = Deserialize((string)existingJson!);
        if (existing.Stage == DeliveryStage.Cancelled)
        {
            return (PutResult.Cancelled, existing);
        }

        if (SameSchedule(existing, requested))
        {
            return (PutResult.Unchanged, existing);
        }

        var (result, replaced) = await ChangeAsync(id, current => requested with
        {
            Stage = DeliveryStage.Rescheduled,
            CreatedAt = current.CreatedAt,
        }).ConfigureAwait(false);
        return result switch
        {
            ChangeResult.Changed => (PutResult.Replaced, replaced!),
            ChangeResult.Cancelled => (PutResult.Cancelled, replaced!),

            // Expired between the two scripts: create it afresh.
            _ => await PutAsync(id, schedule).ConfigureAwait(false),
        };
    }

    public async Task<DeliveryRecord?> GetAsync(string id)
    {
        var json = await redis.ExecuteAsync("GET", null, db => db.StringGetAsync(DeliveryKey(id))).ConfigureAwait(false);
        return json.IsNull ? null : Deserialize((string)json!);
    }

    /// <summary>The delivery's tracking events, oldest first; null when the delivery does not exist.</summary>
    public async Task<IReadOnlyList<TrackingEvent>?> GetEventsAsync(string id)
    {
        if (await GetAsync(id).ConfigureAwait(false) is null)
        {
            return null;
        }

        var values = await redis.ExecuteAsync("LRANGE", null, db => db.ListRangeAsync(EventsKey(id))).ConfigureAwait(false);
        return [.. values.Select(value => JsonSerializer.Deserialize<TrackingEvent>((string)value!, ContractJson.Options)!)];
    }

    /// <summary>Cancels the delivery: it leaves the owner's month count. Cancelling twice changes nothing.</summary>
    public async Task<(ChangeResult Result, DeliveryRecord? Delivery)> CancelAsync(string id)
    {
        var (result, delivery) = await ChangeAsync(id, current => current with { Stage = DeliveryStage.Cancelled }).ConfigureAwait(false);
        return result == ChangeResult.Cancelled ? (ChangeResult.Changed, delivery) : (result, delivery);
    }

    /// <summary>Applies a validated reschedule.</summary>
    public Task<(ChangeResult Result, DeliveryRecord? Delivery)> RescheduleAsync(string id, RescheduleRequest change) =>
        ChangeAsync(id, current =>
        {
            var rescheduled = current with
            {
                PickupLocation = change.PickupLocation ?? current.PickupLocation,
                DropoffLocation = change.DropoffLocation ?? current.DropoffLocation,
                PickupTime = change.PickupTime ?? current.PickupTime,
                Deadline = change.Deadline ?? current.Deadline,
                Stage = DeliveryStage.Rescheduled,
            };

            // Only checkable against the stored values when the change names one of the two times.
            return rescheduled.Deadline > rescheduled.PickupTime ? rescheduled : null;
        });

    /// <summary>The number of scheduled, not cancelled deliveries of an owner in a billing month.</summary>
    public Task<long> CountAsync(string ownerId, BillingPeriod period) =>
        redis.ExecuteAsync("SCARD", null, db => db.SetLengthAsync(MonthKey(ownerId, period)));

    /// <summary>Round trip to Redis, for readiness.</summary>
    public Task<TimeSpan> PingAsync() => redis.ExecuteAsync("PING", null, db => db.PingAsync());

    /// <summary>
    /// Applies <paramref name="change"/> to the current delivery with optimistic concurrency (the script
    /// only writes if the delivery is still what was read). A cancelled delivery is never changed;
    /// <paramref name="change"/> answers null for a change that would break the delivery's rules.
    /// </summary>
    private async Task<(ChangeResult Result, DeliveryRecord? Delivery)> ChangeAsync(string id, Func<DeliveryRecord, DeliveryRecord?> change)
    {
        for (var attempt = 1; ; attempt++)
        {
            var json = await redis.ExecuteAsync("GET", null, db => db.StringGetAsync(DeliveryKey(id))).ConfigureAwait(false);
            if (json.IsNull)
            {
                return (ChangeResult.NotFound, null);
            }

            var current = Deserialize((string)json!);
            if (current.Stage == DeliveryStage.Cancelled)
            {
                return (ChangeResult.Cancelled, current);
            }

            if (change(current) is not { } changed)
            {
                return (ChangeResult.DeadlineNotAfterPickup, current);
            }

            var now = time.GetUtcNow();
            var updated = changed with { UpdatedAt = now };
            var stays = updated.Stage != DeliveryStage.Cancelled;
            var written = (int)await redis.ExecuteAsync("EVAL", "update-delivery", db => db.ScriptEvaluateAsync(
                UpdateScript,
                [DeliveryKey(id), EventsKey(id), MonthKey(current.OwnerId, current.Period), MonthKey(updated.OwnerId, updated.Period)],
                [json, Serialize(updated), Milliseconds(_settings.DeliveryTtl), Milliseconds(_settings.TrackingEventTtl),
                    Serialize(new TrackingEvent(updated.Stage, now)), id, stays ? "1" : "0"])).ConfigureAwait(false);
            switch (written)
            {
                case 1:
                    return (ChangeResult.Changed, updated);
                case 0:
                    return (ChangeResult.NotFound, null);
                case < 0 when attempt >= MaxOptimisticAttempts:
                    throw new InvalidOperationException($"Delivery '{id}' kept changing concurrently; gave up after {attempt} attempts.");
            }
        }
    }

    private static bool SameSchedule(DeliveryRecord a, DeliveryRecord b) =>
        a.OwnerId == b.OwnerId && a.PickupLocation == b.PickupLocation && a.DropoffLocation == b.DropoffLocation &&
        a.PickupTime == b.PickupTime && a.Deadline == b.Deadline && a.Expedited == b.Expedited &&
        a.ConfirmationRequired == b.ConfirmationRequired && a.PackageId == b.PackageId && a.DroneId == b.DroneId;

    private static string Milliseconds(TimeSpan ttl) => ((long)ttl.TotalMilliseconds).ToString(CultureInfo.InvariantCulture);

    private static string Serialize<T>(T value) => JsonSerializer.Serialize(value, ContractJson.Options);

    private static DeliveryRecord Deserialize(string json) => JsonSerializer.Deserialize<DeliveryRecord>(json, ContractJson.Options)!;
}
