using DroneDelivery.TestSupport.HostileInput;
using FsCheck;
using FsCheck.Fluent;

namespace DroneDelivery.Emulators.ServiceBus.Tests.HostileInput;

/// <summary>
/// SQL filter and action text for rules: valid expressions of the subset, near-valid ones (a token dropped, doubled or
/// swapped, a quote left open), tokens in any order, deep nesting, long runs and wildcards, and odd characters.
/// </summary>
internal static class SqlGen
{
    private static readonly string[] Valid =
    [
        "1=1", "TRUE", "priority = 'high'", "user.priority = 'high'", "weight > 10 AND weight <= 12", "NOT (weight < 5)",
        "sys.Label = 'drone'", "sys.MessageId = 'm-1' AND sys.CorrelationId = 'c-1'", "priority IN ('low', 'high')",
        "sys.Label LIKE 'dr%'", "sys.Label LIKE 'dr_ne' ESCAPE '!'", "missing IS NULL", "EXISTS(zone) AND NOT EXISTS(missing)",
        "[priority] = 'high'", "priority = 'it''s'", "weight = -1 OR weight = 12", "weight >= 12.5 OR weight < 0", "fragile = TRUE",
    ];

    private static readonly string[] ValidActions =
    [
        "SET routed = 'yes'", "SET routed = 'yes', copy = priority; REMOVE weight", "REMOVE priority", "SET sys.Label = 'x'", "SET n = 1; SET m = n",
    ];

    private static readonly string[] Tokens =
    [
        "AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "ESCAPE", "EXISTS", "TRUE", "FALSE", "SET", "REMOVE", "=", "<>", "!=", "<", ">", "<=",
        ">=", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",", ";", ".", "'", "''", "'%'", "'_'", "sys.", "user.", "sys.Label", "sys.To",
        "sys.Unknown", "priority", "weight", "p", "0", "-1", "1.5", "1e308", "1e999", "9223372036854775808", "0x1F", "'a'", "N'x'", "@p",
        "--", "/*", "*/", "\0", "\u00a0", "é", "😀",
    ];

    public static Gen<string> Filter => Expression;

    /// <summary>A filter's text: hostile, valid or near-valid.</summary>
    public static Gen<string> Expression =>
        AmqpGen.Pick(
            (3, Gen.Elements(Valid)),
            (4, Mutated(Gen.Elements(Valid))),
            (4, Gen.Choose(1, 12).SelectMany(n => Gen.ArrayOf(Gen.Elements(Tokens), n)).Select(t => string.Join(" ", t))),
            (1, Gen.Elements(1, 10, 100, 400, 600).Select(n => new string('(', n) + "1=1" + new string(')', n))),
            (1, Gen.Elements(1, 15, 60, 500).Select(n => "p LIKE '" + string.Concat(Enumerable.Repeat("%a", n)) + "b'")),
            (1, Gen.Elements(5, 50, 150).Select(n => string.Join(" OR ", Enumerable.Repeat("NOT NOT p = 1", n)))),
            (1, Gen.Elements(1_023, 1_024, 1_025, 100_000).Select(n => "p = '" + new string('x', Math.Max(0, n - 7)) + "'")),
            (1, AmqpGen.Text));

    /// <summary>An action's text: hostile, valid or near-valid.</summary>
    public static Gen<string> Action =>
        AmqpGen.Pick(
            (3, Gen.Elements(ValidActions)),
            (4, Mutated(Gen.Elements(ValidActions))),
            (3, Gen.Choose(1, 12).SelectMany(n => Gen.ArrayOf(Gen.Elements(Tokens), n)).Select(t => string.Join(" ", t))),
            (1, Gen.Elements(31, 32, 33, 500).Select(n => string.Join("; ", Enumerable.Range(0, n).Select(i => $"SET p{i} = {i}")))),
            (1, Expression.Select(e => "SET p = " + e)));

    private static Gen<string> Mutated(Gen<string> valid) =>
        Gen.Zip(valid, Gen.Zip(Gen.Choose(0, 1_000), Gen.Elements(Tokens))).Select(p =>
        {
            var (text, (seed, token)) = p;
            var at = seed % (text.Length + 1);
            return (seed % 4) switch
            {
                0 => text[..at] + token + text[at..],
                1 => text[..at],
                2 => text.Remove(at, Math.Min(text.Length - at, 1 + seed % 3)),
                _ => text[..at] + text[at..] + text[..at],
            };
        });
}
