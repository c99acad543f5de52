namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>A query the emulator cannot run: bad syntax, or a feature it does not support (named in the message).</summary>
internal sealed class QueryException(string message) : Exception(message)
{
    public static QueryException Unsupported(string feature) =>
        new($"The query uses {feature}, which this emulator does not support. Rewrite the query without it.");
}

internal abstract record SqlExpression;

internal sealed record LiteralExpression(QueryValue Value) : SqlExpression;

internal sealed record ParameterExpression(string Name) : SqlExpression;

/// <summary>A bare identifier: the FROM alias (the document).</summary>
internal sealed record IdentifierExpression(string Name) : SqlExpression;

internal sealed record PropertyExpression(SqlExpression Target, string Name) : SqlExpression;

internal sealed record IndexExpression(SqlExpression Target, SqlExpression Index) : SqlExpression;

internal enum UnaryOperator
{
    Not,
    Negate,
    Plus,
}

internal sealed record UnaryExpression(UnaryOperator Operator, SqlExpression Operand) : SqlExpression;

internal enum BinaryOperator
{
    Or,
    And,
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Concat,
}

internal sealed record BinaryExpression(BinaryOperator Operator, SqlExpression Left, SqlExpression Right) : SqlExpression;

internal sealed record InExpression(SqlExpression Value, IReadOnlyList<SqlExpression> Items, bool Negated) : SqlExpression;

internal sealed record BetweenExpression(SqlExpression Value, SqlExpression Low, SqlExpression High, bool Negated) : SqlExpression;

/// <summary>A built-in function call; aggregates (COUNT, SUM, MIN, MAX, AVG) are function calls too.</summary>
internal sealed record FunctionCallExpression(string Name, IReadOnlyList<SqlExpression> Arguments) : SqlExpression
{
    public bool IsAggregate => Aggregates.IsAggregate(Name);
}

internal sealed record ArrayExpression(IReadOnlyList<SqlExpression> Items) : SqlExpression;

internal sealed record ObjectExpression(IReadOnlyList<KeyValuePair<string, SqlExpression>> Properties) : SqlExpression;

internal sealed record SelectItem(SqlExpression Expression, string? Alias);

internal sealed record OrderByItem(SqlExpression Expression, bool Descending);

/// <summary>A parsed <c>SELECT</c>.</summary>
internal sealed record SqlQuery
{
    /// <summary><c>SELECT DISTINCT</c>: equal rows are returned once.</summary>
    public bool Distinct { get; init; }

    /// <summary><c>SELECT *</c>.</summary>
    public bool SelectAll { get; init; }

    /// <summary>The expression of <c>SELECT VALUE</c>, or null.</summary>
    public SqlExpression? SelectValue { get; init; }

    public IReadOnlyList<SelectItem> SelectItems { get; init; } = [];

    /// <summary>TOP: a literal number or a parameter.</summary>
    public SqlExpression? Top { get; init; }

    /// <summary>The collection name in FROM (anything; the container is the collection).</summary>
    public required string FromName { get; init; }

    /// <summary>The alias documents are bound to (the FROM name when no alias is given).</summary>
    public required string Alias { get; init; }

    public SqlExpression? Where { get; init; }

    /// <summary>The GROUP BY expressions; empty without GROUP BY.</summary>
    public IReadOnlyList<SqlExpression> GroupBy { get; init; } = [];

    public IReadOnlyList<OrderByItem> OrderBy { get; init; } = [];

    public SqlExpression? Offset { get; init; }

    public SqlExpression? Limit { get; init; }
}
