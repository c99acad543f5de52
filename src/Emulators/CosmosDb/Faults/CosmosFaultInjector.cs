using System.Collections.Concurrent;

namespace DroneDelivery.Emulators.CosmosDb.Faults;

/// <summary>The number of faults of one kind injected into one container (<c>database/container</c>).</summary>
public sealed record InjectedFaultCount(string Container, string Kind, long Count);

/// <summary>
/// Decides which item and query requests get a fault. Every decision draws from one generator seeded by the rules'
/// seed; with no rules a request costs one read. Each fault injected is counted by container and kind.
/// </summary>
internal sealed class CosmosFaultInjector
{
    /// <summary>The Prometheus counter of injected faults; labels <c>container</c> and <c>kind</c>.</summary>
    public const string MetricName = "cosmos_emulator_injected_faults_total";

    private readonly Lock _sync = new();
    private readonly ConcurrentDictionary<(string Container, CosmosFaultKind Kind), long> _injected = new();
    private CosmosFaultOptions _options = new();
    private long[] _remaining = [];
    private Random _random = new(1);

    public CosmosFaultOptions Options => Volatile.Read(ref _options);

    /// <summary>Replaces the rules (validated by the caller) and restarts the generator from their seed.</summary>
    public void Configure(CosmosFaultOptions options)
    {
        lock (_sync)
        {
            _random = new Random(options.Seed);
            _remaining = [.. options.Rules.Select(r => r.MaxCount ?? long.MaxValue)];
            Volatile.Write(ref _options, options);
        }
    }

    /// <summary>The rule whose fault this request on <paramref name="database"/>/<paramref name="container"/> gets, counted; null for none.</summary>
    public CosmosFaultRule? Draw(string database, string container)
    {
        if (Volatile.Read(ref _options).Rules.Count == 0)
        {
            return null;
        }

        lock (_sync)
        {
            var rules = _options.Rules;
            for (var i = 0; i < rules.Count; i++)
            {
                if (_remaining[i] <= 0 || !rules[i].Matches(database, container) || _random.NextDouble() >= rules[i].Probability)
                {
                    continue;
                }

                _remaining[i]--;
                _injected.AddOrUpdate(($"{database}/{container}", rules[i].Kind), 1, static (_, n) => n + 1);
                return rules[i];
            }
        }

        return null;
    }

    /// <summary>Every fault injected so far, by container and kind.</summary>
    public IReadOnlyList<InjectedFaultCount> Counts() =>
        [.. _injected.OrderBy(p => p.Key.Container, StringComparer.Ordinal).ThenBy(p => p.Key.Kind)
            .Select(p => new InjectedFaultCount(p.Key.Container, p.Key.Kind.ToString(), p.Value))];
}
