namespace DroneDelivery.Emulators.CosmosDb.Tests.GeneratedQueries;

/// <summary>
/// What a query must return over a list of items, before TOP / OFFSET LIMIT pick from it: every row in
/// order (when the query orders), the runs of rows whose ORDER BY keys are equal (their order among
/// themselves is the service's choice), and the window TOP or OFFSET LIMIT takes.
/// </summary>
internal sealed record ExpectedResult(IReadOnlyList<Datum> Rows, IReadOnlyList<int> RunLengths, bool Ordered, int Skip, int? Take);

/// <summary>
/// Evaluates a <see cref="GeneratedQuery"/> by the query language's documented rules, written for these
/// tests: only the boolean true keeps an item; comparing values of different types (or with undefined)
/// is undefined; AND is false when either side is false, OR true when either side is true, otherwise
/// both must be booleans; arithmetic and string functions want their own types and are undefined
/// otherwise; a VALUE that is undefined makes no row, an undefined SELECT item is left out of its
/// object; COUNT counts defined values, SUM and AVG are undefined once a defined non-number is among
/// them, MIN and MAX rank across types and are undefined once an array or object is among them;
/// ORDER BY ranks undefined first, then null, booleans, numbers and strings.
/// </summary>
internal static class ReferenceEvaluator
{
    public static ExpectedResult Evaluate(GeneratedQuery query, IReadOnlyList<Datum> items)
    {
        var matching = items.Where(item => query.Where is null || Eval(query.Where, item).IsTrue).ToList();
        if (query.GroupBy.Count > 0)
        {
            return Unordered(Grouped(query, matching));
        }

        if (query.IsAggregate)
        {
            var row = Project(query, Datum.Undefined, agg => Aggregate(agg, matching));
            return Unordered(row.IsUndefined ? [] : [row]);
        }

        var runs = new List<int>();
        IEnumerable<Datum> ordered = matching;
        if (query.OrderBy is [var orderBy])
        {
            var keyed = matching
                .Select(item => (Item: item, Key: Eval(orderBy.Path, item)))
                .OrderBy(p => p.Key, Comparer<Datum>.Create((a, b) => orderBy.Descending ? Datum.Order(b, a) : Datum.Order(a, b)))
                .ToList();
            // VALUE rows that are undefined do not exist, so they are not part of any run either.
            var rows = keyed.Select(p => (p.Key, Row: Project(query, p.Item, null))).Where(p => !p.Row.IsUndefined).ToList();
            for (var i = 0; i < rows.Count; i++)
            {
                if (i > 0 && Datum.Order(rows[i].Key, rows[i - 1].Key) == 0)
                {
                    runs[^1]++;
                }
                else
                {
                    runs.Add(1);
                }
            }

            return Windowed(query, [.. rows.Select(r => r.Row)], runs, ordered: true);
        }

        var projected = ordered.Select(item => Project(query, item, null)).Where(row => !row.IsUndefined);
        if (query.Distinct)
        {
            var seen = new HashSet<string>(StringComparer.Ordinal);
            projected = projected.Where(row => seen.Add(row.Canonical()));
        }

        return Windowed(query, [.. projected], [], ordered: false);
    }

    private static ExpectedResult Unordered(IReadOnlyList<Datum> rows) => new(rows, [], false, 0, null);

    private static ExpectedResult Windowed(GeneratedQuery query, IReadOnlyList<Datum> rows, IReadOnlyList<int> runs, bool ordered) =>
        query.OffsetLimit is { } window
            ? new ExpectedResult(rows, runs, ordered, window.Offset, window.Limit)
            : new ExpectedResult(rows, runs, ordered, 0, query.Top);

    private static List<Datum> Grouped(GeneratedQuery query, List<Datum> matching)
    {
        var groups = new Dictionary<string, List<Datum>>(StringComparer.Ordinal);
        var order = new List<string>();
        foreach (var item in matching)
        {
            var key = string.Join("|", query.GroupBy.Select(g => Eval(g, item).Canonical()));
            if (!groups.TryGetValue(key, out var members))
            {
                groups[key] = members = [];
                order.Add(key);
            }

            members.Add(item);
        }

        // Group expressions are read from any member: they are equal across the group by definition.
        // A group whose VALUE is undefined makes no row, as any undefined VALUE.
        return [.. order.Select(key => Project(query, groups[key][0], agg => Aggregate(agg, groups[key]))).Where(row => !row.IsUndefined)];
    }

    /// <summary>One row: the VALUE, the SELECT list as an object, or the item itself for SELECT *.</summary>
    private static Datum Project(GeneratedQuery query, Datum item, Func<AggregateExpr, Datum>? aggregate)
    {
        if (query.Value is not null)
        {
            return Eval(query.Value, item, aggregate);
        }

        if (query.Items.Count == 0)
        {
            return item;
        }

        var names = query.ItemNames();
        return Datum.Object(query.Items.Select((selectItem, i) => new KeyValuePair<string, Datum>(names[i], Eval(selectItem.Expression, item, aggregate))));
    }

    public static Datum Eval(Expr expression, Datum item, Func<AggregateExpr, Datum>? aggregate = null)
    {
        Datum Of(Expr e) => Eval(e, item, aggregate);
        switch (expression)
        {
            case LiteralExpr literal:
                return literal.Value;
            case PathExpr path:
                var value = item;
                foreach (var segment in path.Segments)
                {
                    value = segment is int index ? value.Index(index) : value.Kind == DatumKind.Object ? value.Property((string)segment) : Datum.Undefined;
                }

                return value;
            case ComparisonExpr comparison:
                return Compare(comparison.Operator, Of(comparison.Left), Of(comparison.Right));
            case LogicalExpr logical:
                return logical.IsAnd ? And(Of(logical.Left), Of(logical.Right)) : Or(Of(logical.Left), Of(logical.Right));
            case NotExpr not:
                var operand = Of(not.Operand);
                return operand.Kind == DatumKind.Boolean ? Datum.Of(!operand.Boolean) : Datum.Undefined;
            case ArithmeticExpr arithmetic:
                return Arithmetic(arithmetic.Operator, Of(arithmetic.Left), Of(arithmetic.Right));
            case InExpr @in:
                // x IN (a, b) is x = a OR x = b.
                var any = @in.Items.Select(i => Compare(ComparisonOperator.Equal, Of(@in.Value), Of(i))).Aggregate(Datum.False, Or);
                return @in.Negated ? (any.Kind == DatumKind.Boolean ? Datum.Of(!any.Boolean) : Datum.Undefined) : any;
            case BetweenExpr between:
                // x BETWEEN a AND b is x >= a AND x <= b.
                var inside = And(
                    Compare(ComparisonOperator.GreaterOrEqual, Of(between.Value), Of(between.Low)),
                    Compare(ComparisonOperator.LessOrEqual, Of(between.Value), Of(between.High)));
                return between.Negated ? (inside.Kind == DatumKind.Boolean ? Datum.Of(!inside.Boolean) : Datum.Undefined) : inside;
            case CallExpr call:
                return Call(call.Name, [.. call.Arguments.Select(Of)]);
            case AggregateExpr agg:
                return aggregate is null ? throw new InvalidOperationException($"{agg.Sql} outside an aggregate query") : aggregate(agg);
            case ObjectExpr obj:
                return Datum.Object(obj.Properties.Select(p => new KeyValuePair<string, Datum>(p.Key, Of(p.Value))));
            case ArrayExpr array:
                return Datum.Array(array.Items.Select(Of));
            default:
                throw new InvalidOperationException($"No rule for {expression.GetType().Name}.");
        }
    }

    private static Datum Compare(ComparisonOperator op, Datum left, Datum right)
    {
        if (left.IsUndefined || right.IsUndefined || left.Kind != right.Kind)
        {
            return Datum.Undefined;
        }

        if (op is ComparisonOperator.Equal or ComparisonOperator.NotEqual)
        {
            return Datum.Of(left.SameAs(right) == (op == ComparisonOperator.Equal));
        }

        if (left.Kind is not (DatumKind.Boolean or DatumKind.Number or DatumKind.String))
        {
            return Datum.Undefined;
        }

        var sign = Datum.Order(left, right);
        return Datum.Of(op switch
        {
            ComparisonOperator.Less => sign < 0,
            ComparisonOperator.LessOrEqual => sign <= 0,
            ComparisonOperator.Greater => sign > 0,
            _ => sign >= 0,
        });
    }

    private static Datum And(Datum left, Datum right) =>
        (left.Kind == DatumKind.Boolean && !left.Boolean) || (right.Kind == DatumKind.Boolean && !right.Boolean) ? Datum.False
        : left.IsTrue && right.IsTrue ? Datum.True
        : Datum.Undefined;

    private static Datum Or(Datum left, Datum right) =>
        left.IsTrue || right.IsTrue ? Datum.True
        : left.Kind == DatumKind.Boolean && right.Kind == DatumKind.Boolean ? Datum.False
        : Datum.Undefined;

    private static Datum Arithmetic(char op, Datum left, Datum right)
    {
        if (op == '|')
        {
            return left.Kind == DatumKind.String && right.Kind == DatumKind.String ? Datum.Of(left.Text + right.Text) : Datum.Undefined;
        }

        if (left.Kind != DatumKind.Number || right.Kind != DatumKind.Number)
        {
            return Datum.Undefined;
        }

        return Datum.Of(op switch
        {
            '+' => left.Number + right.Number,
            '-' => left.Number - right.Number,
            '*' => left.Number * right.Number,
            _ => left.Number % right.Number,
        });
    }

    private static Datum Call(string name, Datum[] args)
    {
        var a = args[0];
        bool IsString(Datum d) => d.Kind == DatumKind.String;
        return name switch
        {
            "IS_DEFINED" => Datum.Of(!a.IsUndefined),
            "IS_NULL" => Datum.Of(a.Kind == DatumKind.Null),
            "IS_BOOL" => Datum.Of(a.Kind == DatumKind.Boolean),
            "IS_NUMBER" => Datum.Of(a.Kind == DatumKind.Number),
            "IS_STRING" => Datum.Of(a.Kind == DatumKind.String),
            "IS_ARRAY" => Datum.Of(a.Kind == DatumKind.Array),
            "IS_OBJECT" => Datum.Of(a.Kind == DatumKind.Object),
            "STARTSWITH" => IsString(a) && IsString(args[1]) ? Datum.Of(a.Text.StartsWith(args[1].Text, StringComparison.Ordinal)) : Datum.Undefined,
            "CONTAINS" => IsString(a) && IsString(args[1]) ? Datum.Of(a.Text.Contains(args[1].Text, StringComparison.Ordinal)) : Datum.Undefined,
            "LENGTH" => IsString(a) ? Datum.Of(a.Text.Length) : Datum.Undefined,
            "UPPER" => IsString(a) ? Datum.Of(a.Text.ToUpperInvariant()) : Datum.Undefined,
            "ABS" => a.Kind == DatumKind.Number ? Datum.Of(Math.Abs(a.Number)) : Datum.Undefined,
            "FLOOR" => a.Kind == DatumKind.Number ? Datum.Of(Math.Floor(a.Number)) : Datum.Undefined,
            "ARRAY_LENGTH" => a.Kind == DatumKind.Array ? Datum.Of(a.Items.Count) : Datum.Undefined,
            "ARRAY_CONTAINS" => a.Kind == DatumKind.Array ? Datum.Of(a.Items.Any(i => i.SameAs(args[1]))) : Datum.Undefined,
            _ => throw new InvalidOperationException($"No rule for the function {name}."),
        };
    }

    private static Datum Aggregate(AggregateExpr aggregate, IReadOnlyList<Datum> rows)
    {
        var values = rows.Select(row => Eval(aggregate.Argument, row)).Where(v => !v.IsUndefined).ToList();
        switch (aggregate.Name)
        {
            case "COUNT":
                return Datum.Of(values.Count);
            case "SUM":
            case "AVG":
                if (values.Any(v => v.Kind != DatumKind.Number))
                {
                    return Datum.Undefined;
                }

                var sum = values.Sum(v => v.Number);
                return aggregate.Name == "SUM" ? Datum.Of(sum) : values.Count == 0 ? Datum.Undefined : Datum.Of(sum / values.Count);
            default:
                if (values.Count == 0 || values.Any(v => !v.IsPrimitive))
                {
                    return Datum.Undefined;
                }

                var sorted = values.Order(Comparer<Datum>.Create(Datum.Order)).ToList();
                return aggregate.Name == "MIN" ? sorted[0] : sorted[^1];
        }
    }
}
