namespace DroneDelivery.Emulators.CosmosDb.Tests.GeneratedQueries;

/// <summary>
/// Random items and random queries from the grammar the emulator serves (docs/emulators/cosmos-db.md,
/// "Queries"): DISTINCT, GROUP BY, aggregates, ORDER BY, TOP, OFFSET LIMIT and their combinations,
/// with filters on 0, false, null, "" and missing values; plus, now and then, a combination the
/// emulator does not serve, which must be a 400 naming it. Everything follows one seeded
/// <see cref="Random"/>, so a seed reproduces the items and the queries exactly.
/// </summary>
internal sealed class QueryGenerator(Random random)
{
    public const int PartitionKeys = 12;

    private static readonly Datum[] Literals =
    [
        Datum.Of(0), Datum.Of(1), Datum.Of(2), Datum.Of(-1), Datum.Of(0.5), Datum.Of(1.5), Datum.True, Datum.False, Datum.Null,
        Datum.Of(string.Empty), Datum.Of("a"), Datum.Of("b"), Datum.Of("ab"),
    ];

    // Properties with values of one kind, of mixed kinds, missing, null and falsy; "missing" is never set.
    private static readonly PathExpr N = Path("n"), G = Path("g"), D = Path("d"), A = Path("a"), S = Path("s"), F = Path("f");
    private static readonly PathExpr O = Path("o"), Ox = Path("o", "x"), Oy = Path("o", "y"), Arr = Path("arr"), Arr0 = Path("arr", 0);
    private static readonly PathExpr Pk = Path("pk"), Missing = Path("missing");
    private static readonly PathExpr[] Scalars = [N, G, D, A, S, F, Ox, Oy, Arr0, Pk, Missing];
    private static readonly PathExpr[] AnyPath = [.. Scalars, O, Arr];

    private static readonly Datum[] MixedValues =
    [
        Datum.Of(0), Datum.Of(1), Datum.Of(2), Datum.Of(-1), Datum.Of(1.5), Datum.False, Datum.True, Datum.Null,
        Datum.Of(string.Empty), Datum.Of("a"), Datum.Of("b"), Datum.Undefined,
    ];

    private static readonly Datum[] StringValues =
        [Datum.Of(string.Empty), Datum.Of("a"), Datum.Of("b"), Datum.Of("ab"), Datum.Of("ba"), Datum.Of("A"), Datum.Undefined, Datum.Null, Datum.Of(0)];

    private static readonly string[] Predicates = ["IS_DEFINED", "IS_NULL", "IS_NUMBER", "IS_STRING", "IS_BOOL", "IS_ARRAY", "IS_OBJECT"];

    public static PathExpr Path(params object[] segments) => new(segments);

    public static string PartitionKey(int index) => $"p{index}";

    /// <summary>
    /// Items whose properties cover every kind of value. Numbers are small integers or quarters, so
    /// sums are exact in any order the partitions are added in.
    /// </summary>
    public IReadOnlyList<Datum> Items(int count) =>
    [
        .. Enumerable.Range(0, count).Select(i => Datum.Object(new Dictionary<string, Datum>
        {
            ["id"] = Datum.Of($"i{i}"),
            ["pk"] = Datum.Of(PartitionKey(i % PartitionKeys)),
            ["n"] = Datum.Of(i),
            ["g"] = Pick(Datum.Of(0), Datum.Of(1), Datum.Of(2), Datum.Of(3), Datum.Null, Datum.Undefined),
            ["d"] = Pick(Datum.Of(0), Datum.Of(0.25), Datum.Of(1.5), Datum.Of(-2.75), Datum.Of(10), Datum.Undefined),
            ["a"] = Pick(MixedValues),
            ["s"] = Pick(StringValues),
            ["f"] = Pick(Datum.True, Datum.False, Datum.Null, Datum.Undefined),
            ["o"] = Pick(
                Datum.Undefined,
                Datum.Object(new Dictionary<string, Datum> { ["x"] = Pick(Datum.Of(0), Datum.Of(1), Datum.Of(2), Datum.Undefined), ["y"] = Pick(Datum.Of("a"), Datum.Of("b"), Datum.Of(string.Empty)) }),
                Datum.Object([])),
            ["arr"] = Pick(Datum.Undefined, Datum.Array([]), Datum.Array([Datum.Of(0)]), Datum.Array([Datum.Of(1), Datum.Of(2)]), Datum.Array([Datum.Of(0), Datum.Of("a")])),
        })),
    ];

    public GeneratedQuery Next()
    {
        var roll = random.Next(100);
        return roll switch
        {
            < 30 => Plain(),
            < 45 => Ordered(),
            < 60 => Distinct(),
            < 75 => Aggregate(),
            < 95 => Grouped(),
            _ => Refused(),
        };
    }

    /// <summary>SELECT *, VALUE or a list, with a filter and perhaps TOP or OFFSET LIMIT.</summary>
    private GeneratedQuery Plain() => WithWindow(new GeneratedQuery { Value = MaybeValue(), Where = MaybeWhere() }.Let(q => q.Value is null && Chance(50) ? q with { Items = SelectList() } : q));

    private GeneratedQuery Ordered() => WithWindow(new GeneratedQuery
    {
        Where = MaybeWhere(),
        OrderBy = [new OrderByClause(Pick(Scalars), Chance(50))],
    }.Let(q => random.Next(3) switch
    {
        0 => q,
        1 => q with { Value = ValueExpression() },
        _ => q with { Items = SelectList() },
    }));

    private GeneratedQuery Distinct()
    {
        var query = new GeneratedQuery { Distinct = true, Where = MaybeWhere(), Top = Chance(25) ? random.Next(0, 6) : null };
        return Chance(60) ? query with { Value = Chance(70) ? Pick(AnyPath) : ValueExpression() } : query with { Items = SelectList() };
    }

    private GeneratedQuery Aggregate()
    {
        var query = new GeneratedQuery { Where = MaybeWhere() };
        if (Chance(50))
        {
            return query with { Value = AggregateCall() };
        }

        var count = random.Next(1, 4);
        return query with { Items = [.. Enumerable.Range(0, count).Select(i => new SelectItem(AggregateCall(), $"v{i}"))] };
    }

    private GeneratedQuery Grouped()
    {
        Expr[] keys = [G, F, A, S, Ox, Pk, new ArithmeticExpr('%', N, LiteralOf(3))];
        var groupBy = Enumerable.Range(0, random.Next(1, 3)).Select(_ => Pick(keys)).DistinctBy(k => k.Sql).ToList();
        var query = new GeneratedQuery { Where = MaybeWhere(), GroupBy = groupBy };
        switch (random.Next(3))
        {
            case 0:
                return query with { Value = AggregateCall() };
            case 1:
                // A VALUE of the key itself only where the key is always defined.
                var defined = groupBy.FirstOrDefault(k => k == Pk || k is ArithmeticExpr);
                return defined is null ? query with { Value = AggregateCall() } : query with { GroupBy = [defined], Value = defined };
            default:
                var items = groupBy.Where(_ => Chance(70)).Select((k, i) => new SelectItem(k, $"k{i}")).ToList();
                items.AddRange(Enumerable.Range(0, random.Next(items.Count == 0 ? 1 : 0, 3)).Select(i => new SelectItem(AggregateCall(), $"v{i}")));
                return query with { Items = items };
        }
    }

    /// <summary>A combination outside the served grammar: the emulator must refuse it with a 400 naming it, never answer it.</summary>
    private GeneratedQuery Refused() => random.Next(6) switch
    {
        0 => new GeneratedQuery { Distinct = true, Value = Pick(Scalars), OrderBy = [new OrderByClause(Pick(Scalars), false)], Refused = "DISTINCT together with ORDER BY" },
        1 => new GeneratedQuery { Distinct = true, Value = Pick(Scalars), OffsetLimit = (1, 2), Refused = "DISTINCT together with ORDER BY, OFFSET LIMIT" },
        2 => new GeneratedQuery { Items = [new SelectItem(G, null), new SelectItem(AggregateCall(), "v")], GroupBy = [G], OrderBy = [new OrderByClause(G, false)], Refused = "GROUP BY together with" },
        3 => new GeneratedQuery { Value = AggregateCall(), Top = 1, Refused = "TOP, ORDER BY or OFFSET LIMIT together with aggregates" },
        4 => new GeneratedQuery { OrderBy = [new OrderByClause(N, false), new OrderByClause(A, true)], Refused = "ORDER BY on more than one property" },
        _ => new GeneratedQuery { Top = 2, OffsetLimit = (0, 1), Refused = "both TOP and OFFSET LIMIT" },
    };

    private GeneratedQuery WithWindow(GeneratedQuery query) => random.Next(4) switch
    {
        0 => query with { Top = random.Next(0, 8) },
        1 => query with { OffsetLimit = (random.Next(0, 12), random.Next(0, 8)) },
        _ => query,
    };

    private Expr? MaybeValue() => Chance(40) ? ValueExpression() : null;

    private Expr? MaybeWhere() => Chance(65) ? Condition(depth: 2) : null;

    private IReadOnlyList<SelectItem> SelectList()
    {
        var items = new List<SelectItem>();
        var names = new HashSet<string>(StringComparer.Ordinal);
        for (var i = random.Next(1, 4); i > 0; i--)
        {
            var expression = Chance(60) ? Pick(AnyPath) : ValueExpression();
            var name = (expression as PathExpr)?.ProjectionName;
            // A second item of the same name would give a row two equal property names: give it an alias.
            // Other expressions without one are named $1, $2, … by their position among the unnamed.
            var alias = (name is not null && !names.Add(name)) || Chance(20) ? $"x{items.Count}" : null;
            items.Add(new SelectItem(expression, alias));
        }

        return items;
    }

    /// <summary>A projection: a path, arithmetic, a function, a comparison, or an object or array built from them.</summary>
    private Expr ValueExpression() => random.Next(8) switch
    {
        0 => new ArithmeticExpr(Pick('+', '-', '*'), Pick(N, G, D, A), LiteralOf(Pick(1, 2, -1))),
        1 => new ArithmeticExpr('%', N, LiteralOf(Pick(2, 3, 5))),
        2 => new CallExpr(Pick("LENGTH", "UPPER", "ABS", "FLOOR", "ARRAY_LENGTH"), [Pick(S, A, D, Arr)]),
        3 => new ArithmeticExpr('|', Pick(S, A, Oy), new LiteralExpr(Datum.Of("x"))),
        4 => Comparison(),
        5 => new ObjectExpr([new("p", Pick(Scalars)), new("q", Pick(AnyPath))]),
        // Array items that may be undefined are left out: only always-defined properties here.
        6 => new ArrayExpr([N, Pk]),
        _ => new CallExpr(Pick(Predicates), [Pick(AnyPath)]),
    };

    private AggregateExpr AggregateCall() => random.Next(5) switch
    {
        0 => new AggregateExpr("COUNT", Chance(50) ? LiteralOf(1) : Pick(AnyPath)),
        1 => new AggregateExpr("SUM", Pick<Expr>(N, D, G, A, new ArithmeticExpr('*', N, LiteralOf(2)))),
        2 => new AggregateExpr("AVG", Pick(N, D, G, A)),
        3 => new AggregateExpr("MIN", Pick(AnyPath)),
        _ => new AggregateExpr("MAX", Pick(AnyPath)),
    };

    /// <summary>A WHERE clause: comparisons, IN, BETWEEN, functions, bare values (0, false, null, "", a missing property) and AND/OR/NOT of them.</summary>
    private Expr Condition(int depth)
    {
        if (depth > 0 && Chance(35))
        {
            return random.Next(3) switch
            {
                0 => new LogicalExpr(true, Condition(depth - 1), Condition(depth - 1)),
                1 => new LogicalExpr(false, Condition(depth - 1), Condition(depth - 1)),
                _ => new NotExpr(Condition(depth - 1)),
            };
        }

        return random.Next(11) switch
        {
            < 3 => Comparison(),
            3 => new ComparisonExpr(Pick(ComparisonOperator.Equal, ComparisonOperator.NotEqual), Pick(Scalars), Pick(Scalars)),
            4 => Pick<Expr>(F, A, S, Missing, new LiteralExpr(Pick(Datum.True, Datum.False, Datum.Of(0), Datum.Null, Datum.Of(string.Empty), Datum.Of(1)))),
            5 => new InExpr(Pick(Scalars), [.. Enumerable.Range(0, random.Next(1, 5)).Select(_ => new LiteralExpr(Pick(Literals)))], Chance(30)),
            6 => Chance(50)
                ? new BetweenExpr(Pick(N, G, D, A, Ox), LiteralOf(random.Next(-1, 3)), LiteralOf(random.Next(2, 30)), Chance(30))
                : new BetweenExpr(Pick(S, A, Oy), new LiteralExpr(Pick(Datum.Of(string.Empty), Datum.Of("a"))), new LiteralExpr(Pick(Datum.Of("ab"), Datum.Of("b"))), Chance(30)),
            7 => new CallExpr(Pick(Predicates), [Pick(AnyPath)]),
            8 => random.Next(3) switch
            {
                0 => new CallExpr("STARTSWITH", [Pick(S, A, Oy), new LiteralExpr(Pick(Datum.Of("a"), Datum.Of(string.Empty), Datum.Of("b")))]),
                1 => new CallExpr("CONTAINS", [Pick(S, A), new LiteralExpr(Pick(Datum.Of("a"), Datum.Of("b")))]),
                _ => new CallExpr("ARRAY_CONTAINS", [Arr, new LiteralExpr(Pick(Datum.Of(0), Datum.Of("a"), Datum.Of(2)))]),
            },
            9 => new ComparisonExpr(Pick(ComparisonOperator.Less, ComparisonOperator.Equal, ComparisonOperator.GreaterOrEqual), ValueExpression(), new LiteralExpr(Pick(Datum.Of(0), Datum.Of(1), Datum.Of(3), Datum.Of("A"), Datum.True))),
            // The partition key pinned, which narrows the query plan's ranges.
            _ => Chance(50)
                ? new ComparisonExpr(ComparisonOperator.Equal, Pk, new LiteralExpr(Datum.Of(PartitionKey(random.Next(PartitionKeys)))))
                : new InExpr(Pk, [.. Enumerable.Range(0, random.Next(1, 4)).Select(_ => new LiteralExpr(Datum.Of(PartitionKey(random.Next(PartitionKeys)))))], false),
        };
    }

    private ComparisonExpr Comparison()
    {
        var op = (ComparisonOperator)random.Next(6);
        var literal = Pick(Literals);
        // <, <= … with null are left out: the documented rules do not say how null orders against null.
        if (literal.Kind == DatumKind.Null && op is not (ComparisonOperator.Equal or ComparisonOperator.NotEqual))
        {
            op = ComparisonOperator.Equal;
        }

        return new ComparisonExpr(op, Pick(Scalars), new LiteralExpr(literal));
    }

    private static LiteralExpr LiteralOf(double value) => new(Datum.Of(value));

    private bool Chance(int percent) => random.Next(100) < percent;

    private T Pick<T>(params T[] choices) => choices[random.Next(choices.Length)];
}

internal static class GeneratedQueryExtensions
{
    /// <summary>Applies <paramref name="change"/> to a value inline (a builder step without a variable).</summary>
    public static T Let<T>(this T value, Func<T, T> change) => change(value);
}
