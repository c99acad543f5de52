namespace DroneDelivery.Emulators.CosmosDb.Tests.GeneratedQueries;

/// <summary>
/// Whether an answer is one the query allows. Without ORDER BY the rows are a multiset (the service
/// picks the order); TOP and OFFSET LIMIT then take that many of them, any of them. With ORDER BY the
/// order is fixed except among rows with equal keys, so the answer must take each run of equal keys
/// in turn, clipped to the window.
/// </summary>
internal static class ResultCheck
{
    /// <summary>Why <paramref name="actual"/> is not an answer <paramref name="expected"/> allows, or null when it is.</summary>
    public static string? Problem(ExpectedResult expected, IReadOnlyList<Datum> actual)
    {
        var rows = expected.Rows;
        var windowEnd = expected.Take is { } take ? Math.Min(rows.Count, expected.Skip + take) : rows.Count;
        var count = Math.Max(0, windowEnd - expected.Skip);
        if (actual.Count != count)
        {
            return $"{actual.Count} rows instead of {count}";
        }

        if (!expected.Ordered)
        {
            return Missing(rows, actual, mustBeAll: count == rows.Count);
        }

        // Run by run: the rows the answer has at those positions must come from that run.
        var position = 0;
        var start = 0;
        foreach (var length in expected.RunLengths)
        {
            var from = Math.Max(start, expected.Skip);
            var to = Math.Min(start + length, windowEnd);
            if (to > from)
            {
                var run = rows.Skip(start).Take(length).ToList();
                if (Missing(run, [.. actual.Skip(position).Take(to - from)], mustBeAll: to - from == length) is { } problem)
                {
                    return $"at rows {position}–{position + to - from - 1}: {problem}";
                }

                position += to - from;
            }

            start += length;
        }

        return null;
    }

    /// <summary>Why <paramref name="part"/> is not a sub-multiset of <paramref name="whole"/> (or, with <paramref name="mustBeAll"/>, the same multiset).</summary>
    private static string? Missing(IReadOnlyList<Datum> whole, IReadOnlyList<Datum> part, bool mustBeAll)
    {
        var available = whole.GroupBy(r => r.Canonical(), StringComparer.Ordinal).ToDictionary(g => g.Key, g => g.Count(), StringComparer.Ordinal);
        foreach (var row in part)
        {
            var key = row.Canonical();
            if (available.GetValueOrDefault(key) == 0)
            {
                return $"{key} is not {(mustBeAll ? "an" : "an unused")} expected row";
            }

            available[key]--;
        }

        return null;
    }
}
