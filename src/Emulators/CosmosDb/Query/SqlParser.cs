namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>
/// A recursive-descent parser for the subset of the Cosmos DB NoSQL query language the emulator runs.
/// Anything outside the subset is rejected with a message naming the feature, never guessed at.
/// </summary>
internal sealed class SqlParser
{
    /// <summary>The longest query text accepted: the service's <c>maxSqlQueryInputLength</c> (the account's query engine configuration).</summary>
    public const int MaxQueryLength = 524_288;

    /// <summary>
    /// How deeply expressions may nest (parentheses, NOT, unary minus, function calls, array and object
    /// constructors, and chains such as <c>a AND b AND …</c> or <c>c.a.a.…</c>). Parsing, validating,
    /// printing and evaluating all recurse over the expression tree, so without a bound a hostile query
    /// would overflow the stack and take the process down.
    /// </summary>
    public const int MaxNesting = 256;

    private readonly string _text;
    private readonly List<Token> _tokens;
    private int _position;
    private int _nesting;

    private SqlParser(string text)
    {
        _text = text;
        _tokens = SqlLexer.Tokenize(text);
    }

    private Token Current => _tokens[_position];

    public static SqlQuery Parse(string text)
    {
        if (string.IsNullOrWhiteSpace(text))
        {
            throw new QueryException("The query text is empty.");
        }

        if (text.Length > MaxQueryLength)
        {
            throw new QueryException($"The query text is {text.Length} characters long; the limit is {MaxQueryLength} (maxSqlQueryInputLength).");
        }

        var parser = new SqlParser(text);
        var query = parser.ParseQuery();
        if (parser.Current.Kind != TokenKind.End)
        {
            throw parser.UnexpectedToken();
        }

        CheckDepth(query);
        return query;
    }

    private SqlQuery ParseQuery()
    {
        Expect("SELECT");
        var distinct = Accept("DISTINCT");

        SqlExpression? top = null;
        if (Accept("TOP"))
        {
            top = Current.Kind switch
            {
                TokenKind.Number => new LiteralExpression(QueryValue.FromNumber(Next().Number)),
                TokenKind.Parameter => new ParameterExpression(Next().Text),
                _ => throw UnexpectedToken(),
            };
        }

        var selectAll = false;
        SqlExpression? selectValue = null;
        var items = new List<SelectItem>();
        if (Current.IsSymbol("*"))
        {
            Next();
            selectAll = true;
        }
        else if (Accept("VALUE"))
        {
            selectValue = ParseExpression();
        }
        else
        {
            do
            {
                var expression = ParseExpression();
                string? alias = null;
                if (Accept("AS"))
                {
                    alias = ExpectIdentifier();
                }
                else if (Current.Kind == TokenKind.Identifier)
                {
                    alias = Next().Text;
                }

                items.Add(new SelectItem(expression, alias));
            }
            while (AcceptSymbol(","));
        }

        Expect("FROM");
        var fromName = ExpectIdentifier();
        if (Current.IsKeyword("IN"))
        {
            throw QueryException.Unsupported("FROM ... IN (iteration over an array)");
        }

        if (Current.IsSymbol("."))
        {
            throw QueryException.Unsupported("a FROM source other than the container (a document path)");
        }

        var alias2 = fromName;
        if (Accept("AS"))
        {
            alias2 = ExpectIdentifier();
        }
        else if (Current.Kind == TokenKind.Identifier)
        {
            alias2 = Next().Text;
        }

        if (Current.IsKeyword("JOIN"))
        {
            throw QueryException.Unsupported("JOIN");
        }

        SqlExpression? where = null;
        if (Accept("WHERE"))
        {
            where = ParseExpression();
        }

        var groupBy = new List<SqlExpression>();
        if (Accept("GROUP"))
        {
            Expect("BY");
            do
            {
                groupBy.Add(ParseExpression());
            }
            while (AcceptSymbol(","));
        }

        var orderBy = new List<OrderByItem>();
        if (Accept("ORDER"))
        {
            Expect("BY");
            if (Current.Is(TokenKind.Identifier, "RANK") || Current.IsKeyword("RANK"))
            {
                throw QueryException.Unsupported("ORDER BY RANK");
            }

            do
            {
                var expression = ParseExpression();
                var descending = false;
                if (Accept("DESC"))
                {
                    descending = true;
                }
                else
                {
                    Accept("ASC");
                }

                orderBy.Add(new OrderByItem(expression, descending));
            }
            while (AcceptSymbol(","));
        }

        SqlExpression? offset = null;
        SqlExpression? limit = null;
        if (Accept("OFFSET"))
        {
            offset = ParseCount();
            Expect("LIMIT");
            limit = ParseCount();
        }

        return new SqlQuery
        {
            Distinct = distinct,
            SelectAll = selectAll,
            SelectValue = selectValue,
            SelectItems = items,
            Top = top,
            FromName = fromName,
            Alias = alias2,
            Where = where,
            GroupBy = groupBy,
            OrderBy = orderBy,
            Offset = offset,
            Limit = limit,
        };
    }

    private SqlExpression ParseCount() => Current.Kind switch
    {
        TokenKind.Number => new LiteralExpression(QueryValue.FromNumber(Next().Number)),
        TokenKind.Parameter => new ParameterExpression(Next().Text),
        _ => throw UnexpectedToken(),
    };

    private SqlExpression ParseExpression()
    {
        Nest();
        var expression = ParseOr();
        _nesting--;
        if (Current.IsSymbol("?"))
        {
            throw QueryException.Unsupported("the conditional operator (? :)");
        }

        if (Current.IsSymbol("??"))
        {
            throw QueryException.Unsupported("the coalesce operator (??)");
        }

        return expression;
    }

    private SqlExpression ParseOr()
    {
        var left = ParseAnd();
        while (Accept("OR"))
        {
            left = new BinaryExpression(BinaryOperator.Or, left, ParseAnd());
        }

        return left;
    }

    private SqlExpression ParseAnd()
    {
        var left = ParseNot();
        while (Accept("AND"))
        {
            left = new BinaryExpression(BinaryOperator.And, left, ParseNot());
        }

        return left;
    }

    private SqlExpression ParseNot()
    {
        if (Accept("NOT"))
        {
            Nest();
            var operand = ParseNot();
            _nesting--;
            return new UnaryExpression(UnaryOperator.Not, operand);
        }

        if (Current.IsKeyword("EXISTS"))
        {
            throw QueryException.Unsupported("EXISTS subqueries");
        }

        return ParseComparison();
    }

    private SqlExpression ParseComparison()
    {
        var left = ParseAdditive();
        while (true)
        {
            if (Current.Kind == TokenKind.Symbol)
            {
                BinaryOperator? op = Current.Text switch
                {
                    "=" => BinaryOperator.Equal,
                    "!=" or "<>" => BinaryOperator.NotEqual,
                    "<" => BinaryOperator.Less,
                    "<=" => BinaryOperator.LessOrEqual,
                    ">" => BinaryOperator.Greater,
                    ">=" => BinaryOperator.GreaterOrEqual,
                    "&" or "|" or "^" => throw QueryException.Unsupported("bitwise operators"),
                    _ => null,
                };
                if (op is null)
                {
                    return left;
                }

                Next();
                left = new BinaryExpression(op.Value, left, ParseAdditive());
                continue;
            }

            var negated = false;
            if (Current.IsKeyword("NOT") && IsAny(_position + 1, "IN", "BETWEEN", "LIKE"))
            {
                Next();
                negated = true;
            }

            if (Accept("IN"))
            {
                ExpectSymbol("(");
                if (Current.IsKeyword("SELECT"))
                {
                    throw QueryException.Unsupported("subqueries");
                }

                var items = new List<SqlExpression>();
                if (!Current.IsSymbol(")"))
                {
                    do
                    {
                        items.Add(ParseExpression());
                    }
                    while (AcceptSymbol(","));
                }

                ExpectSymbol(")");
                left = new InExpression(left, items, negated);
                continue;
            }

            if (Accept("BETWEEN"))
            {
                var low = ParseAdditive();
                Expect("AND");
                var high = ParseAdditive();
                left = new BetweenExpression(left, low, high, negated);
                continue;
            }

            if (Current.IsKeyword("LIKE"))
            {
                throw QueryException.Unsupported("LIKE");
            }

            return left;
        }
    }

    private SqlExpression ParseAdditive()
    {
        var left = ParseMultiplicative();
        while (true)
        {
            BinaryOperator? op = Current.Kind != TokenKind.Symbol ? null : Current.Text switch
            {
                "+" => BinaryOperator.Add,
                "-" => BinaryOperator.Subtract,
                "||" => BinaryOperator.Concat,
                _ => null,
            };
            if (op is null)
            {
                return left;
            }

            Next();
            left = new BinaryExpression(op.Value, left, ParseMultiplicative());
        }
    }

    private SqlExpression ParseMultiplicative()
    {
        var left = ParseUnary();
        while (true)
        {
            BinaryOperator? op = Current.Kind != TokenKind.Symbol ? null : Current.Text switch
            {
                "*" => BinaryOperator.Multiply,
                "/" => BinaryOperator.Divide,
                "%" => BinaryOperator.Modulo,
                _ => null,
            };
            if (op is null)
            {
                return left;
            }

            Next();
            left = new BinaryExpression(op.Value, left, ParseUnary());
        }
    }

    private SqlExpression ParseUnary()
    {
        if (AcceptSymbol("-"))
        {
            Nest();
            var operand = ParseUnary();
            _nesting--;
            return operand is LiteralExpression { Value.Kind: QueryValueKind.Number } literal
                ? new LiteralExpression(QueryValue.FromNumber(-literal.Value.Number))
                : new UnaryExpression(UnaryOperator.Negate, operand);
        }

        if (AcceptSymbol("+"))
        {
            Nest();
            var operand = ParseUnary();
            _nesting--;
            return new UnaryExpression(UnaryOperator.Plus, operand);
        }

        if (Current.IsSymbol("~"))
        {
            throw QueryException.Unsupported("bitwise operators");
        }

        return ParsePostfix(ParsePrimary());
    }

    private SqlExpression ParsePostfix(SqlExpression target)
    {
        while (true)
        {
            if (AcceptSymbol("."))
            {
                var name = Current.Kind is TokenKind.Identifier or TokenKind.Keyword ? Next().Text : throw UnexpectedToken();
                target = new PropertyExpression(target, name);
            }
            else if (AcceptSymbol("["))
            {
                var index = ParseExpression();
                ExpectSymbol("]");
                target = index is LiteralExpression { Value.Kind: QueryValueKind.String } literal
                    ? new PropertyExpression(target, literal.Value.AsString())
                    : new IndexExpression(target, index);
            }
            else
            {
                return target;
            }
        }
    }

    private SqlExpression ParsePrimary()
    {
        var token = Current;
        switch (token.Kind)
        {
            case TokenKind.Number:
                Next();
                return new LiteralExpression(QueryValue.FromNumber(token.Number));
            case TokenKind.String:
                Next();
                return new LiteralExpression(QueryValue.FromString(token.Text));
            case TokenKind.Parameter:
                Next();
                return new ParameterExpression(token.Text);
            case TokenKind.Keyword:
                if (Accept("TRUE"))
                {
                    return new LiteralExpression(QueryValue.True);
                }

                if (Accept("FALSE"))
                {
                    return new LiteralExpression(QueryValue.False);
                }

                if (Accept("NULL"))
                {
                    return new LiteralExpression(QueryValue.Null);
                }

                if (Accept("UNDEFINED"))
                {
                    return new LiteralExpression(QueryValue.Undefined);
                }

                if (token.IsKeyword("ARRAY") || token.IsKeyword("EXISTS"))
                {
                    throw QueryException.Unsupported($"{token.Text.ToUpperInvariant()} subqueries");
                }

                if (token.IsKeyword("UDF"))
                {
                    throw QueryException.Unsupported("user-defined functions");
                }

                throw UnexpectedToken();
            case TokenKind.Identifier:
                Next();
                if (AcceptSymbol("("))
                {
                    var arguments = new List<SqlExpression>();
                    if (!Current.IsSymbol(")"))
                    {
                        do
                        {
                            arguments.Add(ParseExpression());
                        }
                        while (AcceptSymbol(","));
                    }

                    ExpectSymbol(")");
                    return new FunctionCallExpression(token.Text.ToUpperInvariant(), arguments);
                }

                return new IdentifierExpression(token.Text);
            case TokenKind.Symbol when token.Text == "(":
                Next();
                if (Current.IsKeyword("SELECT"))
                {
                    throw QueryException.Unsupported("subqueries");
                }

                var inner = ParseExpression();
                ExpectSymbol(")");
                return inner;
            case TokenKind.Symbol when token.Text == "[":
                Next();
                var items = new List<SqlExpression>();
                if (!Current.IsSymbol("]"))
                {
                    do
                    {
                        items.Add(ParseExpression());
                    }
                    while (AcceptSymbol(","));
                }

                ExpectSymbol("]");
                return new ArrayExpression(items);
            case TokenKind.Symbol when token.Text == "{":
                Next();
                var properties = new List<KeyValuePair<string, SqlExpression>>();
                if (!Current.IsSymbol("}"))
                {
                    do
                    {
                        var name = Current.Kind is TokenKind.String or TokenKind.Identifier or TokenKind.Keyword
                            ? Next().Text
                            : throw UnexpectedToken();
                        ExpectSymbol(":");
                        properties.Add(new(name, ParseExpression()));
                    }
                    while (AcceptSymbol(","));
                }

                ExpectSymbol("}");
                return new ObjectExpression(properties);
            default:
                throw UnexpectedToken();
        }
    }

    // A failed parse abandons the parser, so the count needs no unwinding on exceptions.
    private void Nest()
    {
        if (++_nesting > MaxNesting)
        {
            throw TooDeep();
        }
    }

    private static QueryException TooDeep() =>
        new($"The query nests expressions more than {MaxNesting} levels deep, which this emulator does not support.");

    /// <summary>
    /// Refuses expression trees deeper than <see cref="MaxNesting"/>, measured without recursion: chains
    /// the parser builds in loops (<c>1 + 1 + …</c>, <c>c.a.a.…</c>) are deep without nesting the parser.
    /// </summary>
    private static void CheckDepth(SqlQuery query)
    {
        var pending = new Stack<(SqlExpression Expression, int Depth)>();
        foreach (var root in new[] { query.SelectValue, query.Top, query.Where, query.Offset, query.Limit }
            .Concat(query.SelectItems.Select(i => i.Expression))
            .Concat(query.GroupBy)
            .Concat(query.OrderBy.Select(o => o.Expression)))
        {
            if (root is not null)
            {
                pending.Push((root, 1));
            }
        }

        while (pending.Count > 0)
        {
            var (expression, depth) = pending.Pop();
            if (depth > MaxNesting)
            {
                throw TooDeep();
            }

            IEnumerable<SqlExpression> children = expression switch
            {
                PropertyExpression property => [property.Target],
                IndexExpression index => [index.Target, index.Index],
                UnaryExpression unary => [unary.Operand],
                BinaryExpression binary => [binary.Left, binary.Right],
                InExpression @in => [@in.Value, .. @in.Items],
                BetweenExpression between => [between.Value, between.Low, between.High],
                FunctionCallExpression call => call.Arguments,
                ArrayExpression array => array.Items,
                ObjectExpression obj => obj.Properties.Select(p => p.Value),
                _ => [],
            };
            foreach (var child in children)
            {
                pending.Push((child, depth + 1));
            }
        }
    }

    private bool IsAny(int index, params string[] keywords) =>
        index < _tokens.Count && keywords.Any(k => _tokens[index].IsKeyword(k));

    private Token Next() => _tokens[_position++];

    private bool Accept(string keyword)
    {
        if (!Current.IsKeyword(keyword))
        {
            return false;
        }

        _position++;
        return true;
    }

    private bool AcceptSymbol(string symbol)
    {
        if (!Current.IsSymbol(symbol))
        {
            return false;
        }

        _position++;
        return true;
    }

    private void Expect(string keyword)
    {
        if (!Accept(keyword))
        {
            throw UnexpectedToken();
        }
    }

    private void ExpectSymbol(string symbol)
    {
        if (!AcceptSymbol(symbol))
        {
            throw UnexpectedToken();
        }
    }

    private string ExpectIdentifier() =>
        Current.Kind == TokenKind.Identifier ? Next().Text : throw UnexpectedToken();

    private QueryException UnexpectedToken() => SqlLexer.Syntax(_text, Current.Position);
}
