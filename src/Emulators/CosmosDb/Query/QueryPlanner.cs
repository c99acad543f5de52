using System.Globalization;
using System.Text;
using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Partitioning;

namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>An EPK range of a query plan.</summary>
internal sealed record QueryRange(string Min, string Max, bool IsMinInclusive, bool IsMaxInclusive);

/// <summary>
/// What the SDK's query pipeline needs to run a query across partitions: the per-partition
/// rewritten query, how to merge (order, aggregates, top, offset) and which EPK ranges to visit.
/// </summary>
internal sealed record QueryPlan
{
    public string RewrittenQuery { get; init; } = string.Empty;

    public long? Top { get; init; }

    public long? Offset { get; init; }

    public long? Limit { get; init; }

    public IReadOnlyList<string> OrderBy { get; init; } = [];

    public IReadOnlyList<string> OrderByExpressions { get; init; } = [];

    public IReadOnlyList<string> Aggregates { get; init; } = [];

    /// <summary>Each alias of the SELECT clause of an aggregate or GROUP BY query, with its aggregate (null for a GROUP BY expression).</summary>
    public IReadOnlyList<KeyValuePair<string, string?>> AliasToAggregate { get; init; } = [];

    public IReadOnlyList<string> GroupByExpressions { get; init; } = [];

    public bool HasSelectValue { get; init; }

    /// <summary>"None", or "Unordered" for DISTINCT without ORDER BY: the client removes duplicates across partitions.</summary>
    public string DistinctType { get; init; } = "None";

    public required IReadOnlyList<QueryRange> Ranges { get; init; }

    /// <summary>Writes the plan in the shape of the SDK's <c>PartitionedQueryExecutionInfo</c>.</summary>
    public void WriteTo(Utf8JsonWriter writer)
    {
        writer.WriteStartObject();
        writer.WriteNumber("partitionedQueryExecutionInfoVersion", 2);
        writer.WriteStartObject("queryInfo");
        writer.WriteString("distinctType", DistinctType);
        WriteNullable(writer, "top", Top);
        WriteNullable(writer, "offset", Offset);
        WriteNullable(writer, "limit", Limit);
        WriteStrings(writer, "orderBy", OrderBy);
        WriteStrings(writer, "orderByExpressions", OrderByExpressions);
        WriteStrings(writer, "groupByExpressions", GroupByExpressions);
        WriteStrings(writer, "groupByAliases", AliasToAggregate.Select(p => p.Key).ToList());
        WriteStrings(writer, "aggregates", Aggregates);
        writer.WriteStartObject("groupByAliasToAggregateType");
        foreach (var (alias, aggregate) in AliasToAggregate)
        {
            if (aggregate is null)
            {
                writer.WriteNull(alias);
            }
            else
            {
                writer.WriteString(alias, aggregate);
            }
        }

        writer.WriteEndObject();
        writer.WriteString("rewrittenQuery", RewrittenQuery);
        writer.WriteBoolean("hasSelectValue", HasSelectValue);
        writer.WriteNull("dCountInfo");
        writer.WriteBoolean("hasNonStreamingOrderBy", false);
        writer.WriteEndObject();
        writer.WriteStartArray("queryRanges");
        foreach (var range in Ranges)
        {
            writer.WriteStartObject();
            writer.WriteString("min", range.Min);
            writer.WriteString("max", range.Max);
            writer.WriteBoolean("isMinInclusive", range.IsMinInclusive);
            writer.WriteBoolean("isMaxInclusive", range.IsMaxInclusive);
            writer.WriteEndObject();
        }

        writer.WriteEndArray();
        writer.WriteEndObject();
    }

    private static void WriteNullable(Utf8JsonWriter writer, string name, long? value)
    {
        if (value is null)
        {
            writer.WriteNull(name);
        }
        else
        {
            writer.WriteNumber(name, value.Value);
        }
    }

    private static void WriteStrings(Utf8JsonWriter writer, string name, IReadOnlyList<string> values)
    {
        writer.WriteStartArray(name);
        foreach (var value in values)
        {
            writer.WriteStringValue(value);
        }

        writer.WriteEndArray();
    }
}

/// <summary>
/// Builds query plans with the same rewrites the service's query planner makes (as seen in the SDK's
/// own query-plan baselines), so that the unmodified SDK merges ORDER BY, aggregates, TOP and
/// OFFSET LIMIT correctly across physical partitions.
/// </summary>
internal static class QueryPlanner
{
    public const string OrderByFilterPlaceholder = "{documentdb-formattableorderbyquery-filter}";

    // More point or prefix ranges than this (an IN list on each level of a hierarchical key) are not
    // worth listing: the plan then covers the leading levels only, or the whole space.
    private const int MaxPlannedRanges = 1000;

    public static QueryPlan Plan(
        PreparedQuery prepared,
        IReadOnlyDictionary<string, QueryValue> parameters,
        PartitionKeyDefinition partitionKey)
    {
        var query = prepared.Query;
        var ranges = TargetRanges(query, parameters, partitionKey);
        if (prepared.IsGrouped)
        {
            return PlanGroupBy(prepared, ranges);
        }

        if (prepared.IsAggregate)
        {
            return PlanAggregate(prepared, ranges);
        }

        var top = query.Top is null ? (long?)null : QueryExecutor.ResolveCount(query.Top, parameters, "TOP");
        long? offset = query.Offset is null ? null : QueryExecutor.ResolveCount(query.Offset, parameters, "OFFSET");
        long? limit = query.Limit is null ? null : QueryExecutor.ResolveCount(query.Limit, parameters, "LIMIT");
        var orderBy = prepared.OrderBy;
        if (orderBy is null)
        {
            // Plain queries run as written on every range; OFFSET LIMIT becomes a per-range LIMIT of
            // offset + limit and the SDK skips and takes.
            var rewritten = offset is null ? string.Empty : SqlPrinter.Print(query with
            {
                Offset = new LiteralExpression(QueryValue.FromNumber(0)),
                Limit = new LiteralExpression(QueryValue.FromNumber(offset.Value + limit!.Value)),
            });
            return new QueryPlan
            {
                RewrittenQuery = rewritten,
                Top = top,
                Offset = offset,
                Limit = limit,
                HasSelectValue = query.SelectValue is not null,
                DistinctType = query.Distinct ? "Unordered" : "None",
                Ranges = ranges,
            };
        }

        return new QueryPlan
        {
            RewrittenQuery = RewriteOrderBy(query, orderBy, offset, limit),
            Top = top,
            Offset = offset,
            Limit = limit,
            OrderBy = [orderBy.Descending ? "Descending" : "Ascending"],
            OrderByExpressions = [SqlPrinter.Print(orderBy.Expression)],
            HasSelectValue = query.SelectValue is not null,
            Ranges = ranges,
        };
    }

    private static QueryPlan PlanAggregate(PreparedQuery prepared, IReadOnlyList<QueryRange> ranges)
    {
        var query = prepared.Query;
        if (query.SelectValue is not null)
        {
            if (query.SelectValue is not FunctionCallExpression { IsAggregate: true } call)
            {
                throw QueryException.Unsupported(
                    "an aggregate inside an expression (use SELECT VALUE COUNT(...) or SELECT COUNT(...) AS a, SUM(...) AS b)");
            }

            return new QueryPlan
            {
                RewrittenQuery = SqlPrinter.Print(query with { SelectValue = new ArrayExpression([PartialAggregate(call)]) }),
                Aggregates = [Aggregates.PlanName(call.Name)!],
                HasSelectValue = true,
                Ranges = ranges,
            };
        }

        var names = PreparedQuery.ProjectionNames(query.SelectItems);
        var payload = new List<KeyValuePair<string, SqlExpression>>();
        var aliases = new List<KeyValuePair<string, string?>>();
        for (var i = 0; i < query.SelectItems.Count; i++)
        {
            if (query.SelectItems[i].Expression is not FunctionCallExpression { IsAggregate: true } call)
            {
                throw QueryException.Unsupported(
                    "an aggregate inside an expression (use SELECT VALUE COUNT(...) or SELECT COUNT(...) AS a, SUM(...) AS b)");
            }

            payload.Add(new(names[i], PartialAggregate(call)));
            aliases.Add(new(names[i], Aggregates.PlanName(call.Name)!));
        }

        var rewritten = query with
        {
            SelectItems = [new SelectItem(new ObjectExpression(payload), "payload")],
        };
        return new QueryPlan
        {
            RewrittenQuery = SqlPrinter.Print(rewritten),
            AliasToAggregate = aliases,
            Ranges = ranges,
        };
    }

    /// <summary>
    /// GROUP BY, rewritten as the service rewrites it: each partition returns its groups as
    /// <c>{"groupByItems": [{"item": key}, …], "payload": …}</c> with partial aggregates, and the SDK
    /// merges groups across partitions.
    /// </summary>
    private static QueryPlan PlanGroupBy(PreparedQuery prepared, IReadOnlyList<QueryRange> ranges)
    {
        var query = prepared.Query;
        var groupByItems = new ArrayExpression([.. query.GroupBy.Select(g => (SqlExpression)new ObjectExpression([new("item", g)]))]);
        SqlExpression payload;
        var aggregates = new List<string>();
        var aliases = new List<KeyValuePair<string, string?>>();
        if (query.SelectValue is not null)
        {
            if (query.SelectValue is FunctionCallExpression { IsAggregate: true } call)
            {
                payload = new ArrayExpression([PartialAggregate(call)]);
                aggregates.Add(Aggregates.PlanName(call.Name)!);
            }
            else if (prepared.IsAggregate)
            {
                throw QueryException.Unsupported("an aggregate inside an expression in a GROUP BY query");
            }
            else
            {
                payload = query.SelectValue;
            }
        }
        else
        {
            var names = PreparedQuery.ProjectionNames(query.SelectItems);
            var properties = new List<KeyValuePair<string, SqlExpression>>();
            for (var i = 0; i < query.SelectItems.Count; i++)
            {
                var expression = query.SelectItems[i].Expression;
                if (expression is FunctionCallExpression { IsAggregate: true } call)
                {
                    properties.Add(new(names[i], PartialAggregate(call)));
                    aliases.Add(new(names[i], Aggregates.PlanName(call.Name)!));
                }
                else if (ContainsAggregate(expression))
                {
                    throw QueryException.Unsupported("an aggregate inside an expression in a GROUP BY query");
                }
                else
                {
                    properties.Add(new(names[i], expression));
                    aliases.Add(new(names[i], null));
                }
            }

            payload = new ObjectExpression(properties);
        }

        var rewritten = query with
        {
            SelectValue = null,
            SelectItems = [new SelectItem(groupByItems, "groupByItems"), new SelectItem(payload, "payload")],
        };
        return new QueryPlan
        {
            RewrittenQuery = SqlPrinter.Print(rewritten),
            GroupByExpressions = [.. query.GroupBy.Select(SqlPrinter.Print)],
            Aggregates = aggregates,
            AliasToAggregate = aliases,
            HasSelectValue = query.SelectValue is not null,
            Ranges = ranges,
        };
    }

    private static bool ContainsAggregate(SqlExpression expression) => expression switch
    {
        FunctionCallExpression { IsAggregate: true } => true,
        FunctionCallExpression call => call.Arguments.Any(ContainsAggregate),
        PropertyExpression property => ContainsAggregate(property.Target),
        IndexExpression index => ContainsAggregate(index.Target) || ContainsAggregate(index.Index),
        UnaryExpression unary => ContainsAggregate(unary.Operand),
        BinaryExpression binary => ContainsAggregate(binary.Left) || ContainsAggregate(binary.Right),
        ArrayExpression array => array.Items.Any(ContainsAggregate),
        ObjectExpression obj => obj.Properties.Any(p => ContainsAggregate(p.Value)),
        _ => false,
    };

    // The per-partition partial result the SDK combines: {"item": COUNT(x)}; AVG as sum and count;
    // MIN/MAX with the count so that partitions without values are ignored.
    private static ObjectExpression PartialAggregate(FunctionCallExpression call)
    {
        var argument = call.Arguments[0];
        FunctionCallExpression Call(string name) => new(name, [argument]);
        return call.Name switch
        {
            "AVG" => new ObjectExpression(
            [
                new("item", new ObjectExpression([new("sum", Call("SUM")), new("count", Call("COUNT"))])),
            ]),
            "MIN" or "MAX" => new ObjectExpression(
            [
                new("item", call),
                new("item2", new ObjectExpression([new(call.Name.ToLowerInvariant(), Call(call.Name)), new("count", Call("COUNT"))])),
            ]),
            _ => new ObjectExpression([new("item", call)]),
        };
    }

    private static string RewriteOrderBy(SqlQuery query, OrderByItem orderBy, long? offset, long? limit)
    {
        var alias = query.Alias;
        SqlExpression payload;
        SqlExpression? where = query.Where;
        if (query.SelectAll)
        {
            payload = new IdentifierExpression(alias);
        }
        else if (query.SelectValue is not null)
        {
            payload = query.SelectValue;
            // VALUE projections that are undefined produce no row in the service.
            var defined = new FunctionCallExpression("IS_DEFINED", [query.SelectValue]);
            where = where is null ? defined : new BinaryExpression(BinaryOperator.And, where, defined);
        }
        else
        {
            var names = PreparedQuery.ProjectionNames(query.SelectItems);
            payload = new ObjectExpression([.. query.SelectItems.Select((item, i) => new KeyValuePair<string, SqlExpression>(names[i], item.Expression))]);
        }

        var text = new StringBuilder("SELECT ");
        if (query.Top is not null)
        {
            text.Append("TOP ").Append(SqlPrinter.Print(query.Top)).Append(' ');
        }

        text.Append(alias).Append("._rid, [{\"item\": ").Append(SqlPrinter.Print(orderBy.Expression)).Append("}] AS orderByItems, ")
            .Append(SqlPrinter.Print(payload)).Append(" AS payload FROM ").Append(query.FromName);
        if (!string.Equals(query.FromName, alias, StringComparison.Ordinal))
        {
            text.Append(" AS ").Append(alias);
        }

        text.Append(" WHERE ");
        text.Append(where is null
            ? $"({OrderByFilterPlaceholder})"
            : $"({SqlPrinter.Print(where)} AND ({OrderByFilterPlaceholder}))");
        text.Append(" ORDER BY ").Append(SqlPrinter.Print(orderBy.Expression)).Append(orderBy.Descending ? " DESC" : " ASC");
        if (offset is not null)
        {
            text.Append(" OFFSET 0 LIMIT ").Append((offset.Value + limit!.Value).ToString(CultureInfo.InvariantCulture));
        }

        return text.ToString();
    }

    /// <summary>
    /// The EPK ranges the query can touch. When the WHERE clause pins the partition key with <c>=</c> or
    /// <c>IN</c> at its top level: a point range per value. For a hierarchical key, the leading paths it
    /// pins form a prefix: a range per prefix value, <c>[EPK(prefix), EPK(prefix) + "FF")</c>, or a point
    /// range when every path is pinned. A query that pins only later paths (not the first) reads the
    /// whole space, as in the service.
    /// </summary>
    public static IReadOnlyList<QueryRange> TargetRanges(
        SqlQuery query,
        IReadOnlyDictionary<string, QueryValue> parameters,
        PartitionKeyDefinition partitionKey)
    {
        var full = new[] { new QueryRange(EffectivePartitionKey.Minimum, EffectivePartitionKey.Maximum, true, false) };
        if (query.Where is null)
        {
            return full;
        }

        var conjuncts = Conjuncts(query.Where).ToList();
        var levels = new List<IReadOnlyList<PartitionKeyComponent>>();
        var combinations = 1L;
        foreach (var path in partitionKey.Segments)
        {
            var values = PinnedValues(conjuncts, query.Alias, path, parameters);
            if (values is null || combinations * values.Count > MaxPlannedRanges)
            {
                break;
            }

            combinations *= values.Count;
            levels.Add(values);
        }

        if (levels.Count == 0)
        {
            return full;
        }

        var complete = levels.Count == partitionKey.Paths.Count;
        var ranges = new SortedDictionary<string, QueryRange>(StringComparer.Ordinal);
        IEnumerable<PartitionKeyComponent[]> keys = [[]];
        foreach (var level in levels)
        {
            keys = keys.SelectMany(prefix => level.Select(value => (PartitionKeyComponent[])[.. prefix, value]));
        }

        foreach (var key in keys)
        {
            var epk = partitionKey.Hash(key);
            ranges[epk] = complete
                ? new QueryRange(epk, epk, true, true)
                : new QueryRange(epk, PartitionKeyDefinition.PrefixRange(epk).MaxExclusive, true, false);
        }

        return [.. ranges.Values];
    }

    /// <summary>The part of each range that lies within <paramref name="bound"/>; ranges outside it are dropped.</summary>
    public static IReadOnlyList<QueryRange> Within(IReadOnlyList<QueryRange> ranges, EpkRange bound)
    {
        var result = new List<QueryRange>(ranges.Count);
        foreach (var range in ranges)
        {
            if (range.IsMaxInclusive && range.Min == range.Max)
            {
                if (bound.Contains(range.Min))
                {
                    result.Add(range);
                }

                continue;
            }

            var min = string.CompareOrdinal(range.Min, bound.MinInclusive) >= 0 ? range.Min : bound.MinInclusive;
            var max = string.CompareOrdinal(range.Max, bound.MaxExclusive) <= 0 ? range.Max : bound.MaxExclusive;
            if (string.CompareOrdinal(min, max) < 0)
            {
                result.Add(new QueryRange(min, max, true, false));
            }
        }

        return result;
    }

    /// <summary>The values a top-level <c>=</c> or <c>IN</c> conjunct pins the path to, or null when none does.</summary>
    private static IReadOnlyList<PartitionKeyComponent>? PinnedValues(
        List<SqlExpression> conjuncts, string alias, IReadOnlyList<string> path, IReadOnlyDictionary<string, QueryValue> parameters)
    {
        foreach (var conjunct in conjuncts)
        {
            IReadOnlyList<SqlExpression>? values = conjunct switch
            {
                BinaryExpression { Operator: BinaryOperator.Equal } eq when IsPartitionKeyPath(eq.Left, alias, path) => [eq.Right],
                BinaryExpression { Operator: BinaryOperator.Equal } eq when IsPartitionKeyPath(eq.Right, alias, path) => [eq.Left],
                InExpression { Negated: false } @in when IsPartitionKeyPath(@in.Value, alias, path) => @in.Items,
                _ => null,
            };
            if (values is null)
            {
                continue;
            }

            var components = new List<PartitionKeyComponent>(values.Count);
            foreach (var value in values)
            {
                var constant = value switch
                {
                    LiteralExpression literal => literal.Value,
                    ParameterExpression parameter when parameters.TryGetValue(parameter.Name, out var bound) => bound,
                    _ => (QueryValue?)null,
                };
                if (constant is not { } c || c.Kind is QueryValueKind.Array or QueryValueKind.Object or QueryValueKind.Undefined)
                {
                    components = null;
                    break;
                }

                components.Add(ToComponent(c));
            }

            if (components is { Count: > 0 })
            {
                return components;
            }
        }

        return null;
    }

    private static IEnumerable<SqlExpression> Conjuncts(SqlExpression expression)
    {
        if (expression is BinaryExpression { Operator: BinaryOperator.And } and)
        {
            foreach (var c in Conjuncts(and.Left))
            {
                yield return c;
            }

            foreach (var c in Conjuncts(and.Right))
            {
                yield return c;
            }
        }
        else
        {
            yield return expression;
        }
    }

    private static bool IsPartitionKeyPath(SqlExpression expression, string alias, IReadOnlyList<string> path)
    {
        for (var i = path.Count - 1; i >= 0; i--)
        {
            if (expression is not PropertyExpression property || !string.Equals(property.Name, path[i], StringComparison.Ordinal))
            {
                return false;
            }

            expression = property.Target;
        }

        return expression is IdentifierExpression identifier && string.Equals(identifier.Name, alias, StringComparison.Ordinal);
    }

    public static PartitionKeyComponent ToComponent(in QueryValue value) => value.Kind switch
    {
        QueryValueKind.String => new PartitionKeyComponent(PartitionKeyKind.String, Text: value.AsString()),
        QueryValueKind.Number => new PartitionKeyComponent(PartitionKeyKind.Number, value.Number),
        QueryValueKind.Boolean => new PartitionKeyComponent(value.IsTrue ? PartitionKeyKind.True : PartitionKeyKind.False),
        QueryValueKind.Null => new PartitionKeyComponent(PartitionKeyKind.Null),
        _ => PartitionKeyComponent.Undefined,
    };
}
