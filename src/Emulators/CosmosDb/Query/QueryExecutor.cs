using System.Buffers.Text;
using System.Globalization;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Storage;

namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>
/// Which documents of a partition a request may see: one logical partition (<see cref="ExactEpk"/>), the
/// logical partitions under a prefix of a hierarchical key (<see cref="PrefixEpk"/>: every EPK that starts
/// with it, the range <c>[prefix, prefix + "FF")</c>), and/or an EPK sub-range.
/// </summary>
internal readonly record struct DocumentScope(string? MinEpk = null, string? MaxEpk = null, string? ExactEpk = null, string? PrefixEpk = null)
{
    public bool Includes(StoredDocument document) =>
        (ExactEpk is null || string.Equals(document.Epk, ExactEpk, StringComparison.Ordinal))
        && (PrefixEpk is null || document.Epk.StartsWith(PrefixEpk, StringComparison.Ordinal))
        && (MinEpk is null || string.CompareOrdinal(document.Epk, MinEpk) >= 0)
        && (MaxEpk is null || string.CompareOrdinal(document.Epk, MaxEpk) < 0);

    public bool IsEverything => ExactEpk is null && PrefixEpk is null && MinEpk is null && MaxEpk is null;
}

/// <summary>The SDK's ORDER BY resume point (<c>resumeFilter</c> in the query body).</summary>
internal sealed record ResumeFilter(QueryValue Value, bool Exclude);

/// <summary>One page of results from one partition.</summary>
internal sealed record QueryPage(IReadOnlyList<QueryValue> Rows, string? Continuation, int DocumentsRead);

/// <summary>
/// Runs a prepared query over the documents of one physical partition, one page at a time. Plain
/// queries walk documents in insertion order and resume after the last document returned; ORDER BY
/// queries resume after the last (sort key, document) pair, so pages stay correct while data changes.
/// </summary>
internal static class QueryExecutor
{
    public static QueryPage ExecutePage(
        PreparedQuery prepared,
        IReadOnlyDictionary<string, QueryValue> parameters,
        PartitionSnapshot snapshot,
        DocumentScope scope,
        int pageSize,
        string? continuation,
        ResumeFilter? resumeFilter)
    {
        var query = prepared.Query;
        var compiler = new ExpressionCompiler(query.Alias, parameters);
        var where = query.Where is null ? null : compiler.Compile(query.Where);
        var documents = Candidates(prepared, compiler, snapshot, scope);
        if (prepared.IsGrouped)
        {
            return ExecuteGrouped(prepared, parameters, where, compiler, documents, scope, pageSize, continuation);
        }

        if (prepared.IsAggregate)
        {
            return ExecuteAggregate(prepared, parameters, where, compiler, documents, scope);
        }

        if (query.Distinct)
        {
            return ExecuteDistinct(prepared, parameters, where, compiler, documents, scope, pageSize, continuation);
        }

        var token = continuation is null ? null : ContinuationToken.Parse(continuation);
        long? top = query.Top is null ? null : ResolveCount(query.Top, parameters, "TOP");
        var offset = query.Offset is null ? 0 : ResolveCount(query.Offset, parameters, "OFFSET");
        long? limit = query.Limit is null ? null : ResolveCount(query.Limit, parameters, "LIMIT");
        long? total = top ?? (limit is null ? null : offset + limit.Value);
        var project = Projection(query, compiler);

        IEnumerable<(StoredDocument Document, QueryValue Key)> candidates = prepared.OrderBy is { } orderBy
            ? SortOrder(compiler.Compile(orderBy.Expression), orderBy.Descending, where, documents, scope, token, resumeFilter)
            : InsertionOrder(where, documents, scope, token);

        var rows = new List<QueryValue>(Math.Min(pageSize, 16));
        var passed = token?.Passed ?? 0;
        long lastSequence = token?.Sequence ?? -1;
        QueryValue lastKey = default;
        var documentsRead = 0;
        var hasMore = false;
        foreach (var (document, key) in candidates)
        {
            if (total is not null && passed >= total.Value)
            {
                break;
            }

            var row = project(document.Value);
            if (row.IsUndefined)
            {
                continue;
            }

            if (rows.Count >= pageSize)
            {
                hasMore = true;
                break;
            }

            passed++;
            documentsRead++;
            lastSequence = document.Sequence;
            lastKey = key;
            if (passed > offset)
            {
                rows.Add(row);
            }
        }

        var next = hasMore
            ? new ContinuationToken(lastSequence, passed, prepared.OrderBy is null ? null : lastKey.ToString()).Format()
            : null;
        return new QueryPage(rows, next, documentsRead);
    }

    /// <summary>
    /// The smallest list of items that can match: the logical partition when the request names one, or
    /// an index bucket of one of the query's <c>c.property = constant</c> filters, whichever is shorter.
    /// </summary>
    private static IReadOnlyList<StoredDocument> Candidates(PreparedQuery prepared, ExpressionCompiler compiler, PartitionSnapshot snapshot, DocumentScope scope)
    {
        var best = scope.ExactEpk is { } epk ? snapshot.InLogicalPartition(epk) : snapshot.Documents;
        foreach (var (property, value) in prepared.EqualityFilters)
        {
            if (best.Count == 0)
            {
                break;
            }

            var bucket = snapshot.WherePropertyEquals(property, compiler.Compile(value)(QueryValue.Undefined));
            if (bucket.Count < best.Count)
            {
                best = bucket;
            }
        }

        return best;
    }

    /// <summary>True when a compiled filter keeps the document (its value is the boolean true).</summary>
    public static bool Matches(CompiledExpression? where, in QueryValue document) => where is null || where(document).IsTrue;

    /// <summary>A TOP/OFFSET/LIMIT count: a non-negative integer literal or parameter.</summary>
    public static long ResolveCount(SqlExpression expression, IReadOnlyDictionary<string, QueryValue> parameters, string clause)
    {
        var value = expression switch
        {
            LiteralExpression literal => literal.Value,
            ParameterExpression parameter when parameters.TryGetValue(parameter.Name, out var bound) => bound,
            ParameterExpression parameter => throw new QueryException($"The query parameter {parameter.Name} is not defined."),
            _ => QueryValue.Undefined,
        };
        if (value.Kind != QueryValueKind.Number || value.Number < 0 || value.Number != Math.Floor(value.Number) || value.Number > int.MaxValue)
        {
            throw new QueryException($"The {clause} value must be a non-negative integer.");
        }

        return (long)value.Number;
    }

    private static QueryPage ExecuteAggregate(
        PreparedQuery prepared,
        IReadOnlyDictionary<string, QueryValue> parameters,
        CompiledExpression? where,
        ExpressionCompiler compiler,
        IReadOnlyList<StoredDocument> documents,
        DocumentScope scope)
    {
        var query = prepared.Query;
        var aggregators = prepared.AggregateCalls.Select(call => (Aggregator: new Aggregator(call), Argument: compiler.Compile(call.Arguments[0]))).ToArray();
        var matched = 0;
        foreach (var document in documents)
        {
            if (!scope.Includes(document))
            {
                continue;
            }

            var value = document.Value;
            if (!Matches(where, value))
            {
                continue;
            }

            matched++;
            foreach (var (aggregator, argument) in aggregators)
            {
                aggregator.Add(argument(value));
            }
        }

        var results = new Dictionary<FunctionCallExpression, QueryValue>(ReferenceEqualityComparer.Instance);
        foreach (var (aggregator, _) in aggregators)
        {
            results[aggregator.Call] = aggregator.Result;
        }

        var project = Projection(query, new ExpressionCompiler(query.Alias, parameters) { AggregateResults = results });
        var row = project(QueryValue.Undefined);
        return new QueryPage(row.IsUndefined ? [] : [row], null, matched);
    }

    /// <summary>
    /// DISTINCT: the partition's distinct rows in insertion order (the first item of each value wins);
    /// a page resumes after the number of distinct rows already returned.
    /// </summary>
    private static QueryPage ExecuteDistinct(
        PreparedQuery prepared,
        IReadOnlyDictionary<string, QueryValue> parameters,
        CompiledExpression? where,
        ExpressionCompiler compiler,
        IReadOnlyList<StoredDocument> documents,
        DocumentScope scope,
        int pageSize,
        string? continuation)
    {
        var query = prepared.Query;
        var skip = continuation is null ? 0 : ContinuationToken.Parse(continuation).Passed;
        long? top = query.Top is null ? null : ResolveCount(query.Top, parameters, "TOP");
        var project = Projection(query, compiler);
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var rows = new List<QueryValue>(Math.Min(pageSize, 16));
        long distinct = 0;
        var documentsRead = 0;
        var hasMore = false;
        foreach (var (document, _) in InsertionOrder(where, documents, scope, null))
        {
            if (top is not null && distinct >= top.Value)
            {
                break;
            }

            var row = project(document.Value);
            if (distinct >= skip)
            {
                documentsRead++;
            }

            if (row.IsUndefined || !seen.Add(CanonicalKey(row)))
            {
                continue;
            }

            if (distinct >= skip && rows.Count >= pageSize)
            {
                hasMore = true;
                break;
            }

            distinct++;
            if (distinct > skip)
            {
                rows.Add(row);
            }
        }

        var next = hasMore ? new ContinuationToken(-1, skip + rows.Count, null).Format() : null;
        return new QueryPage(rows, next, documentsRead);
    }

    /// <summary>
    /// GROUP BY: the partition's groups in the order their first item was stored, each projected with
    /// its own aggregates; a page resumes after the number of groups already returned.
    /// </summary>
    private static QueryPage ExecuteGrouped(
        PreparedQuery prepared,
        IReadOnlyDictionary<string, QueryValue> parameters,
        CompiledExpression? where,
        ExpressionCompiler compiler,
        IReadOnlyList<StoredDocument> documents,
        DocumentScope scope,
        int pageSize,
        string? continuation)
    {
        var query = prepared.Query;
        var skip = continuation is null ? 0 : ContinuationToken.Parse(continuation).Passed;
        var keys = query.GroupBy.Select(compiler.Compile).ToArray();
        var arguments = prepared.AggregateCalls.Select(call => compiler.Compile(call.Arguments[0])).ToArray();
        var groups = new Dictionary<string, (QueryValue Representative, Aggregator[] Aggregators)>(StringComparer.Ordinal);
        var order = new List<string>();
        var matched = 0;
        foreach (var (document, _) in InsertionOrder(where, documents, scope, null))
        {
            matched++;
            var value = document.Value;
            var key = CanonicalKey(QueryValue.FromArray([.. keys.Select(k => k(value))]));
            if (!groups.TryGetValue(key, out var group))
            {
                group = (value, [.. prepared.AggregateCalls.Select(call => new Aggregator(call))]);
                groups[key] = group;
                order.Add(key);
            }

            for (var i = 0; i < arguments.Length; i++)
            {
                group.Aggregators[i].Add(arguments[i](value));
            }
        }

        var rows = new List<QueryValue>();
        var hasMore = false;
        for (var i = (int)Math.Min(skip, order.Count); i < order.Count; i++)
        {
            if (rows.Count >= pageSize)
            {
                hasMore = true;
                break;
            }

            var (representative, aggregators) = groups[order[i]];
            var results = new Dictionary<FunctionCallExpression, QueryValue>(ReferenceEqualityComparer.Instance);
            foreach (var aggregator in aggregators)
            {
                results[aggregator.Call] = aggregator.Result;
            }

            var row = Projection(query, new ExpressionCompiler(query.Alias, parameters) { AggregateResults = results })(representative);
            rows.Add(row.IsUndefined ? QueryValue.FromObject([]) : row);
        }

        var next = hasMore ? new ContinuationToken(-1, skip + rows.Count, null).Format() : null;
        return new QueryPage(rows, next, matched);
    }

    /// <summary>A text equal for equal values: object properties in name order, numbers as doubles.</summary>
    internal static string CanonicalKey(in QueryValue value)
    {
        var text = new StringBuilder();
        AppendCanonical(text, value);
        return text.ToString();
    }

    private static void AppendCanonical(StringBuilder text, in QueryValue value)
    {
        switch (value.Kind)
        {
            case QueryValueKind.Undefined:
                text.Append('u');
                break;
            case QueryValueKind.Null:
                text.Append('n');
                break;
            case QueryValueKind.Boolean:
                text.Append(value.IsTrue ? 't' : 'f');
                break;
            case QueryValueKind.Number:
                text.Append('#').Append(value.Number.ToString("R", CultureInfo.InvariantCulture));
                break;
            case QueryValueKind.String:
                text.Append(JsonSerializer.Serialize(value.AsString()));
                break;
            case QueryValueKind.Array:
                text.Append('[');
                foreach (var item in value.EnumerateArray())
                {
                    AppendCanonical(text, item);
                    text.Append(',');
                }

                text.Append(']');
                break;
            default:
                text.Append('{');
                foreach (var (name, property) in value.EnumerateObject().OrderBy(p => p.Key, StringComparer.Ordinal))
                {
                    text.Append(JsonSerializer.Serialize(name)).Append(':');
                    AppendCanonical(text, property);
                    text.Append(',');
                }

                text.Append('}');
                break;
        }
    }

    private static CompiledExpression Projection(SqlQuery query, ExpressionCompiler compiler)
    {
        if (query.SelectAll)
        {
            return static (in QueryValue document) => document;
        }

        if (query.SelectValue is not null)
        {
            return compiler.Compile(query.SelectValue);
        }

        return ExpressionCompiler.CompileObject(
            [.. PreparedQuery.ProjectionNames(query.SelectItems)],
            [.. query.SelectItems.Select(item => compiler.Compile(item.Expression))]);
    }

    private static IEnumerable<(StoredDocument, QueryValue)> InsertionOrder(
        CompiledExpression? where,
        IReadOnlyList<StoredDocument> documents,
        DocumentScope scope,
        ContinuationToken? token)
    {
        var start = token is null ? 0 : FirstAfter(documents, token.Sequence);
        for (var i = start; i < documents.Count; i++)
        {
            var document = documents[i];
            if (scope.Includes(document) && Matches(where, document.Value))
            {
                yield return (document, default);
            }
        }
    }

    private static List<(StoredDocument Document, QueryValue Key)> SortOrder(
        CompiledExpression orderKey,
        bool descending,
        CompiledExpression? where,
        IReadOnlyList<StoredDocument> documents,
        DocumentScope scope,
        ContinuationToken? token,
        ResumeFilter? resumeFilter)
    {
        var direction = descending ? -1 : 1;
        var resumeKey = token?.OrderKey is null ? (QueryValue?)null : ParseKey(token.OrderKey);
        var matches = new List<(StoredDocument Document, QueryValue Key)>();
        foreach (var document in documents)
        {
            var value = document.Value;
            if (!scope.Includes(document) || !Matches(where, value))
            {
                continue;
            }

            var key = orderKey(value);
            if (resumeFilter is not null)
            {
                var c = QueryValueComparer.CompareForSort(key, resumeFilter.Value) * direction;
                if (c < 0 || (c == 0 && resumeFilter.Exclude))
                {
                    continue;
                }
            }

            if (resumeKey is { } k)
            {
                var c = QueryValueComparer.CompareForSort(key, k) * direction;
                if (c < 0 || (c == 0 && document.Sequence <= token!.Sequence))
                {
                    continue;
                }
            }

            matches.Add((document, key));
        }

        matches.Sort((a, b) =>
        {
            var c = QueryValueComparer.CompareForSort(a.Key, b.Key) * direction;
            return c != 0 ? c : a.Document.Sequence.CompareTo(b.Document.Sequence);
        });
        return matches;
    }

    private static int FirstAfter(IReadOnlyList<StoredDocument> documents, long sequence)
    {
        var low = 0;
        var high = documents.Count;
        while (low < high)
        {
            var mid = (low + high) / 2;
            if (documents[mid].Sequence <= sequence)
            {
                low = mid + 1;
            }
            else
            {
                high = mid;
            }
        }

        return low;
    }

    private static QueryValue ParseKey(string json)
    {
        if (json == "undefined")
        {
            return QueryValue.Undefined;
        }

        // The key comes back from the client inside the continuation, so it is input like any other.
        try
        {
            using var document = JsonInput.Parse(json);
            var key = document.RootElement.Clone();
            return JsonInput.Problem(key) is null
                ? QueryValue.FromElement(key)
                : throw new QueryException("The continuation token's ORDER BY key is not one this emulator issued.");
        }
        catch (JsonException)
        {
            throw new QueryException("The continuation token's ORDER BY key is not one this emulator issued.");
        }
    }

    /// <summary>The emulator's own continuation: where in a partition the next page starts.</summary>
    private sealed record ContinuationToken(long Sequence, long Passed, string? OrderKey)
    {
        public string Format()
        {
            var json = JsonSerializer.Serialize(new Dictionary<string, object?>
            {
                ["s"] = Sequence,
                ["n"] = Passed,
                ["k"] = OrderKey,
            });
            return Base64Url.EncodeToString(Encoding.UTF8.GetBytes(json));
        }

        public static ContinuationToken Parse(string text)
        {
            try
            {
                using var document = JsonInput.Parse(Base64Url.DecodeFromChars(text));
                var root = document.RootElement;
                var key = root.TryGetProperty("k", out var k) && k.ValueKind == JsonValueKind.String ? k.GetString() : null;
                var passed = root.GetProperty("n").GetInt64();
                return passed >= 0
                    ? new ContinuationToken(root.GetProperty("s").GetInt64(), passed, key)
                    : throw new FormatException("A continuation cannot have passed a negative number of items.");
            }
            catch (Exception e) when (e is FormatException or JsonException or KeyNotFoundException or InvalidOperationException)
            {
                throw new QueryException($"The continuation token '{Truncate(text)}' is not one this emulator issued.");
            }
        }

        private static string Truncate(string text) =>
            text.Length <= 40 ? text : text[..40].ToString(CultureInfo.InvariantCulture) + "…";
    }
}
