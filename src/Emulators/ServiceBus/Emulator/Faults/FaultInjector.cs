using System.Collections.Concurrent;
using DroneDelivery.Emulators.ServiceBus.Amqp;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Faults;

/// <summary>The number of faults of one kind injected into one entity.</summary>
public sealed record InjectedFaultCount(string Entity, string Kind, long Count);

/// <summary>
/// Decides which operations get a fault. Every decision draws from one generator seeded by the rules' seed, so
/// the same sequence of operations gets the same faults; a rule that is never asked costs nothing. Each fault
/// injected is counted by kind and entity. It also holds the namespace's <see cref="TrafficGate"/>: a pause holds
/// every connection's traffic on the emulator's clock.
/// </summary>
internal sealed class FaultInjector(TimeProvider time)
{
    private readonly Lock _sync = new();
    private readonly ConcurrentDictionary<(string Entity, ServiceBusFaultKind Kind), long> _injected = new();
    private ServiceBusFaultOptions _options = ServiceBusFaultOptions.None;
    private long[] _remaining = [];
    private Random _random = new(ServiceBusFaultOptions.None.Seed);

    /// <summary>Holds every connection's traffic while the namespace is paused.</summary>
    public TrafficGate Gate { get; } = new();

    public ServiceBusFaultOptions Options => Volatile.Read(ref _options);

    /// <summary>Replaces the rules and restarts the generator from their seed.</summary>
    public void Configure(ServiceBusFaultOptions options)
    {
        lock (_sync)
        {
            _random = new Random(options.Seed);
            _remaining = [.. options.Rules.Select(r => r.MaxCount ?? long.MaxValue)];
            Volatile.Write(ref _options, options);
        }
    }

    /// <summary>Stops the namespace answering for <paramref name="duration"/> (connections kept).</summary>
    public void Pause(TimeSpan duration)
    {
        Gate.Hold(duration, time);
        Count(string.Empty, ServiceBusFaultKind.NamespacePause);
    }

    /// <summary>Whether this operation of <paramref name="kind"/> on <paramref name="entity"/> gets the fault (counted when it does).</summary>
    public bool Draw(ServiceBusFaultKind kind, string entity)
    {
        var options = Volatile.Read(ref _options);
        if (options.Rules.Count == 0)
        {
            return false;
        }

        lock (_sync)
        {
            var rules = _options.Rules;
            for (var i = 0; i < rules.Count; i++)
            {
                if (!rules[i].Matches(kind, entity) || _remaining[i] <= 0)
                {
                    continue;
                }

                if (_random.NextDouble() < rules[i].Probability)
                {
                    _remaining[i]--;
                    Count(entity, kind);
                    return true;
                }
            }
        }

        return false;
    }

    /// <summary>
    /// Drops or force-closes <paramref name="connection"/> when a connection rule fires for this operation on
    /// <paramref name="entity"/>; true when it did (the operation then goes no further).
    /// </summary>
    public bool BreakConnection(AmqpConnection connection, string entity)
    {
        if (Draw(ServiceBusFaultKind.ConnectionDrop, entity))
        {
            connection.Abort();
            return true;
        }

        if (Draw(ServiceBusFaultKind.ConnectionForced, entity))
        {
            connection.Fail(new Error
            {
                Condition = ErrorCondition.ConnectionForced,
                Description = "The connection was closed by the service (an injected fault): reconnect and retry.",
            });
            return true;
        }

        return false;
    }

    /// <summary>Every fault injected so far, by entity and kind.</summary>
    public IReadOnlyList<InjectedFaultCount> Counts() =>
        [.. _injected.OrderBy(p => p.Key.Entity, StringComparer.Ordinal).ThenBy(p => p.Key.Kind)
            .Select(p => new InjectedFaultCount(p.Key.Entity, p.Key.Kind.ToString(), p.Value))];

    private void Count(string entity, ServiceBusFaultKind kind) => _injected.AddOrUpdate((entity, kind), 1, (_, n) => n + 1);
}
