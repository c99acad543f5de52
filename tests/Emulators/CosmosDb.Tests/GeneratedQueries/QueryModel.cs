using System.Globalization;

namespace DroneDelivery.Emulators.CosmosDb.Tests.GeneratedQueries;

/// <summary>
/// A generated query as a tree: written out as query text for the emulator and evaluated as it
/// stands by <see cref="ReferenceEvaluator"/>, so the reference never parses what the emulator parses.
/// </summary>
internal abstract record Expr
{
    /// <summary>The expression as query text over the alias <c>c</c>.</summary>
    public abstract string Sql { get; }
}

/// <summary><c>c.a.b</c> or <c>c.arr[0]</c>: each segment is a property name or an array index.</summary>
internal sealed record PathExpr(IReadOnlyList<object> Segments) : Expr
{
    public override string Sql => "c" + string.Concat(Segments.Select(s => s is int i ? $"[{i.ToString(CultureInfo.InvariantCulture)}]" : $".{s}"));

    /// <summary>The name a SELECT item of this path gets without an alias: its last property name (an index gets none).</summary>
    public string? ProjectionName => Segments[^1] as string;
}

internal sealed record LiteralExpr(Datum Value) : Expr
{
    public override string Sql => Value.ToString();
}

internal enum ComparisonOperator
{
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

internal sealed record ComparisonExpr(ComparisonOperator Operator, Expr Left, Expr Right) : Expr
{
    public override string Sql => $"({Left.Sql} {Symbol} {Right.Sql})";

    private string Symbol => Operator switch
    {
        ComparisonOperator.Equal => "=",
        ComparisonOperator.NotEqual => "!=",
        ComparisonOperator.Less => "<",
        ComparisonOperator.LessOrEqual => "<=",
        ComparisonOperator.Greater => ">",
        _ => ">=",
    };
}

internal sealed record LogicalExpr(bool IsAnd, Expr Left, Expr Right) : Expr
{
    public override string Sql => $"({Left.Sql} {(IsAnd ? "AND" : "OR")} {Right.Sql})";
}

internal sealed record NotExpr(Expr Operand) : Expr
{
    public override string Sql => $"(NOT {Operand.Sql})";
}

/// <summary><c>+</c>, <c>-</c>, <c>*</c>, <c>%</c> on numbers and <c>||</c> on strings.</summary>
internal sealed record ArithmeticExpr(char Operator, Expr Left, Expr Right) : Expr
{
    public override string Sql => Operator == '|' ? $"({Left.Sql} || {Right.Sql})" : $"({Left.Sql} {Operator} {Right.Sql})";
}

internal sealed record InExpr(Expr Value, IReadOnlyList<Expr> Items, bool Negated) : Expr
{
    public override string Sql => $"({Value.Sql} {(Negated ? "NOT IN" : "IN")} ({string.Join(", ", Items.Select(i => i.Sql))}))";
}

internal sealed record BetweenExpr(Expr Value, Expr Low, Expr High, bool Negated) : Expr
{
    public override string Sql => $"({Value.Sql} {(Negated ? "NOT BETWEEN" : "BETWEEN")} {Low.Sql} AND {High.Sql})";
}

/// <summary>A scalar system function.</summary>
internal sealed record CallExpr(string Name, IReadOnlyList<Expr> Arguments) : Expr
{
    public override string Sql => $"{Name}({string.Join(", ", Arguments.Select(a => a.Sql))})";
}

/// <summary>COUNT, SUM, MIN, MAX or AVG over the rows (or a group's rows).</summary>
internal sealed record AggregateExpr(string Name, Expr Argument) : Expr
{
    public override string Sql => $"{Name}({Argument.Sql})";
}

internal sealed record ObjectExpr(IReadOnlyList<KeyValuePair<string, Expr>> Properties) : Expr
{
    public override string Sql => "{" + string.Join(", ", Properties.Select(p => $"\"{p.Key}\": {p.Value.Sql}")) + "}";
}

internal sealed record ArrayExpr(IReadOnlyList<Expr> Items) : Expr
{
    public override string Sql => "[" + string.Join(", ", Items.Select(i => i.Sql)) + "]";
}

/// <summary>One item of a SELECT list and the property name it gets in each row.</summary>
internal sealed record SelectItem(Expr Expression, string? Alias)
{
    public string Sql => Alias is null ? Expression.Sql : $"{Expression.Sql} AS {Alias}";
}

internal sealed record OrderByClause(PathExpr Path, bool Descending);

/// <summary>A query of the grammar the emulator serves (or, when <see cref="Refused"/> is set, one it must refuse).</summary>
internal sealed record GeneratedQuery
{
    public bool Distinct { get; init; }

    public int? Top { get; init; }

    /// <summary><c>SELECT *</c> when neither this nor <see cref="Items"/> is set.</summary>
    public Expr? Value { get; init; }

    public IReadOnlyList<SelectItem> Items { get; init; } = [];

    public Expr? Where { get; init; }

    public IReadOnlyList<Expr> GroupBy { get; init; } = [];

    public IReadOnlyList<OrderByClause> OrderBy { get; init; } = [];

    public (int Offset, int Limit)? OffsetLimit { get; init; }

    /// <summary>What the emulator's 400 must name, for a combination it does not serve.</summary>
    public string? Refused { get; init; }

    public bool SelectsAll => Value is null && Items.Count == 0;

    public bool IsAggregate => Value is AggregateExpr || Items.Any(i => i.Expression is AggregateExpr);

    /// <summary>The kind of query, for the count of each kind compared.</summary>
    public string Shape =>
        Refused is not null ? "refused"
        : GroupBy.Count > 0 ? "GROUP BY"
        : IsAggregate ? "aggregate"
        : (Distinct ? "DISTINCT" : OrderBy.Count > 0 ? "ORDER BY" : "filter")
            + (Top is not null ? " + TOP" : OffsetLimit is not null ? " + OFFSET LIMIT" : string.Empty);

    public string Sql
    {
        get
        {
            var text = "SELECT ";
            text += Distinct ? "DISTINCT " : string.Empty;
            text += Top is { } top ? $"TOP {top.ToString(CultureInfo.InvariantCulture)} " : string.Empty;
            text += Value is not null ? $"VALUE {Value.Sql}" : Items.Count > 0 ? string.Join(", ", Items.Select(i => i.Sql)) : "*";
            text += " FROM c";
            text += Where is null ? string.Empty : $" WHERE {Where.Sql}";
            text += GroupBy.Count == 0 ? string.Empty : " GROUP BY " + string.Join(", ", GroupBy.Select(g => g.Sql));
            text += OrderBy.Count == 0 ? string.Empty : " ORDER BY " + string.Join(", ", OrderBy.Select(o => o.Path.Sql + (o.Descending ? " DESC" : " ASC")));
            text += OffsetLimit is { } window
                ? string.Create(CultureInfo.InvariantCulture, $" OFFSET {window.Offset} LIMIT {window.Limit}")
                : string.Empty;
            return text;
        }
    }

    /// <summary>The property names of the SELECT list's rows: the alias, else the path's last name, else <c>$1</c>, <c>$2</c>, ….</summary>
    public IReadOnlyList<string> ItemNames()
    {
        var unnamed = 0;
        return [.. Items.Select(i => i.Alias ?? (i.Expression as PathExpr)?.ProjectionName ?? "$" + (++unnamed).ToString(CultureInfo.InvariantCulture))];
    }
}
