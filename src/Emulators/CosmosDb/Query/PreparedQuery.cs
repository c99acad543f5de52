using System.Collections.Concurrent;

namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>
/// A parsed and validated query. Validation happens here, once per query text, so that unsupported
/// features and unresolvable names fail with 400 even when the container is empty.
/// </summary>
internal sealed class PreparedQuery
{
    private const int CacheCapacity = 2048;
    private static readonly ConcurrentDictionary<string, PreparedQuery> Cache = new(StringComparer.Ordinal);

    private PreparedQuery(string text, SqlQuery query, IReadOnlyList<FunctionCallExpression> aggregates)
    {
        Text = text;
        Query = query;
        AggregateCalls = aggregates;
        EqualityFilters = query.Where is null ? [] : [.. EqualityConjuncts(query.Where, query.Alias)];
    }

    /// <summary>
    /// Top-level <c>AND</c>ed filters of the form <c>c.property = constant</c> (a literal or a parameter):
    /// an item can only match if it is in the property index's bucket for that value.
    /// </summary>
    public IReadOnlyList<(string Property, SqlExpression Value)> EqualityFilters { get; }

    public string Text { get; }

    public SqlQuery Query { get; }

    /// <summary>The aggregate calls of the SELECT clause (outermost ones), empty for non-aggregate queries.</summary>
    public IReadOnlyList<FunctionCallExpression> AggregateCalls { get; }

    public bool IsAggregate => AggregateCalls.Count > 0;

    /// <summary>GROUP BY: one row per group, aggregates computed per group.</summary>
    public bool IsGrouped => Query.GroupBy.Count > 0;

    public OrderByItem? OrderBy => Query.OrderBy.Count == 0 ? null : Query.OrderBy[0];

    public static PreparedQuery Get(string text)
    {
        if (Cache.TryGetValue(text, out var prepared))
        {
            return prepared;
        }

        prepared = Prepare(text);
        if (Cache.Count >= CacheCapacity)
        {
            Cache.Clear();
        }

        Cache[text] = prepared;
        return prepared;
    }

    private static PreparedQuery Prepare(string text)
    {
        var query = SqlParser.Parse(text);
        var aggregates = new List<FunctionCallExpression>();
        var selectExpressions = query.SelectValue is not null
            ? [query.SelectValue]
            : query.SelectItems.Select(i => i.Expression).ToList();
        foreach (var expression in selectExpressions)
        {
            Validate(expression, query.Alias, aggregatesAllowed: true, aggregates);
        }

        if (query.Where is not null)
        {
            Validate(query.Where, query.Alias, aggregatesAllowed: false, aggregates);
        }

        foreach (var item in query.OrderBy)
        {
            Validate(item.Expression, query.Alias, aggregatesAllowed: false, aggregates);
        }

        if (query.Top is not null && query.Offset is not null)
        {
            throw new QueryException("A query cannot have both TOP and OFFSET LIMIT.");
        }

        foreach (var expression in query.GroupBy)
        {
            Validate(expression, query.Alias, aggregatesAllowed: false, aggregates);
        }

        if (query.GroupBy.Count > 0)
        {
            if (query.SelectAll || query.Distinct || query.OrderBy.Count > 0 || query.Top is not null || query.Offset is not null)
            {
                throw QueryException.Unsupported("GROUP BY together with SELECT *, DISTINCT, ORDER BY, TOP or OFFSET LIMIT");
            }

            var groups = query.GroupBy.Select(SqlPrinter.Print).ToHashSet(StringComparer.Ordinal);
            foreach (var expression in selectExpressions)
            {
                if (ReferencesDocumentOutsideAggregates(expression, query.Alias, groups))
                {
                    throw new QueryException(
                        "In a GROUP BY query every property the SELECT clause reads must be a GROUP BY expression or inside an aggregate function.");
                }
            }

            return new PreparedQuery(text, query, aggregates);
        }

        if (query.Distinct && (query.OrderBy.Count > 0 || query.Offset is not null || aggregates.Count > 0))
        {
            throw QueryException.Unsupported("DISTINCT together with ORDER BY, OFFSET LIMIT or aggregates");
        }

        if (query.OrderBy.Count > 1)
        {
            throw QueryException.Unsupported("ORDER BY on more than one property");
        }

        if (query.OrderBy.Count == 1 && !IsDocumentPath(query.OrderBy[0].Expression, query.Alias))
        {
            throw new QueryException("ORDER BY must name a property of the document, such as c.name.");
        }

        if (aggregates.Count > 0)
        {
            if (query.OrderBy.Count > 0 || query.Top is not null || query.Offset is not null)
            {
                throw QueryException.Unsupported("TOP, ORDER BY or OFFSET LIMIT together with aggregates");
            }

            foreach (var expression in selectExpressions)
            {
                if (ReferencesDocumentOutsideAggregates(expression, query.Alias))
                {
                    throw QueryException.Unsupported(
                        "document properties outside aggregate functions in an aggregate query (GROUP BY)");
                }
            }
        }

        return new PreparedQuery(text, query, aggregates);
    }

    private static void Validate(SqlExpression expression, string alias, bool aggregatesAllowed, List<FunctionCallExpression> aggregates)
    {
        switch (expression)
        {
            case IdentifierExpression identifier when !string.Equals(identifier.Name, alias, StringComparison.Ordinal):
                throw new QueryException($"Identifier '{identifier.Name}' could not be resolved.");
            case PropertyExpression property:
                Validate(property.Target, alias, aggregatesAllowed, aggregates);
                break;
            case IndexExpression index:
                Validate(index.Target, alias, aggregatesAllowed, aggregates);
                Validate(index.Index, alias, aggregatesAllowed, aggregates);
                break;
            case UnaryExpression unary:
                Validate(unary.Operand, alias, aggregatesAllowed, aggregates);
                break;
            case BinaryExpression binary:
                Validate(binary.Left, alias, aggregatesAllowed, aggregates);
                Validate(binary.Right, alias, aggregatesAllowed, aggregates);
                break;
            case InExpression @in:
                Validate(@in.Value, alias, aggregatesAllowed, aggregates);
                foreach (var item in @in.Items)
                {
                    Validate(item, alias, aggregatesAllowed, aggregates);
                }

                break;
            case BetweenExpression between:
                Validate(between.Value, alias, aggregatesAllowed, aggregates);
                Validate(between.Low, alias, aggregatesAllowed, aggregates);
                Validate(between.High, alias, aggregatesAllowed, aggregates);
                break;
            case FunctionCallExpression call:
                BuiltinFunctions.Validate(call);
                if (call.IsAggregate)
                {
                    if (!aggregatesAllowed)
                    {
                        throw new QueryException($"The aggregate function {call.Name} is only allowed in the SELECT clause.");
                    }

                    // Arguments of an aggregate are per-document expressions: no nested aggregates.
                    Validate(call.Arguments[0], alias, aggregatesAllowed: false, aggregates);
                    aggregates.Add(call);
                }
                else
                {
                    foreach (var argument in call.Arguments)
                    {
                        Validate(argument, alias, aggregatesAllowed, aggregates);
                    }
                }

                break;
            case ArrayExpression array:
                foreach (var item in array.Items)
                {
                    Validate(item, alias, aggregatesAllowed, aggregates);
                }

                break;
            case ObjectExpression obj:
                foreach (var property in obj.Properties)
                {
                    Validate(property.Value, alias, aggregatesAllowed, aggregates);
                }

                break;
        }
    }

    private static bool ReferencesDocumentOutsideAggregates(SqlExpression expression, string alias, IReadOnlySet<string>? groups = null)
    {
        if (groups is not null && groups.Contains(SqlPrinter.Print(expression)))
        {
            return false;
        }

        bool Refers(SqlExpression e) => ReferencesDocumentOutsideAggregates(e, alias, groups);
        return expression switch
        {
            IdentifierExpression => true,
            FunctionCallExpression { IsAggregate: true } => false,
            FunctionCallExpression call => call.Arguments.Any(Refers),
            PropertyExpression property => Refers(property.Target),
            IndexExpression index => Refers(index.Target) || Refers(index.Index),
            UnaryExpression unary => Refers(unary.Operand),
            BinaryExpression binary => Refers(binary.Left) || Refers(binary.Right),
            InExpression @in => Refers(@in.Value) || @in.Items.Any(Refers),
            BetweenExpression b => Refers(b.Value) || Refers(b.Low) || Refers(b.High),
            ArrayExpression array => array.Items.Any(Refers),
            ObjectExpression obj => obj.Properties.Any(p => Refers(p.Value)),
            _ => false,
        };
    }

    private static IEnumerable<(string, SqlExpression)> EqualityConjuncts(SqlExpression expression, string alias)
    {
        switch (expression)
        {
            case BinaryExpression { Operator: BinaryOperator.And } and:
                return EqualityConjuncts(and.Left, alias).Concat(EqualityConjuncts(and.Right, alias));
            case BinaryExpression { Operator: BinaryOperator.Equal, Left: PropertyExpression { Target: IdentifierExpression } property, Right: LiteralExpression or ParameterExpression } eq:
                return [(property.Name, eq.Right)];
            case BinaryExpression { Operator: BinaryOperator.Equal, Right: PropertyExpression { Target: IdentifierExpression } property, Left: LiteralExpression or ParameterExpression } eq:
                return [(property.Name, eq.Left)];
            default:
                return [];
        }
    }

    internal static bool IsDocumentPath(SqlExpression expression, string alias) => expression switch
    {
        PropertyExpression property => property.Target is IdentifierExpression || IsDocumentPath(property.Target, alias),
        IndexExpression index => index.Index is LiteralExpression && (index.Target is IdentifierExpression || IsDocumentPath(index.Target, alias)),
        _ => false,
    };

    /// <summary>The property name a projection gets: its alias, else the last path segment, else <c>$n</c>.</summary>
    public static IReadOnlyList<string> ProjectionNames(IReadOnlyList<SelectItem> items)
    {
        var names = new List<string>(items.Count);
        var unnamed = 0;
        foreach (var item in items)
        {
            names.Add(item.Alias ?? item.Expression switch
            {
                PropertyExpression property => property.Name,
                _ => "$" + (++unnamed).ToString(System.Globalization.CultureInfo.InvariantCulture),
            });
        }

        return names;
    }
}
