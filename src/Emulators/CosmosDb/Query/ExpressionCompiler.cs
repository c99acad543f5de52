namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>An expression ready to evaluate against one document (the FROM alias).</summary>
internal delegate QueryValue CompiledExpression(in QueryValue document);

/// <summary>
/// Turns expressions into chains of small delegates once per request, with parameters bound and
/// aggregate results (when given) as constants, so that evaluating a filter over thousands of items
/// does no tree walking, type tests or parameter lookups per item.
/// </summary>
internal sealed class ExpressionCompiler(string alias, IReadOnlyDictionary<string, QueryValue> parameters)
{
    /// <summary>When set, aggregate calls compile to these precomputed results (SELECT of an aggregate query).</summary>
    public IReadOnlyDictionary<FunctionCallExpression, QueryValue>? AggregateResults { get; init; }

    public CompiledExpression Compile(SqlExpression expression)
    {
        switch (expression)
        {
            case LiteralExpression literal:
                return Constant(literal.Value);
            case ParameterExpression parameter:
                return parameters.TryGetValue(parameter.Name, out var value)
                    ? Constant(value)
                    : throw new QueryException($"The query parameter {parameter.Name} is not defined.");
            case IdentifierExpression identifier:
                return string.Equals(identifier.Name, alias, StringComparison.Ordinal)
                    ? static (in QueryValue document) => document
                    : throw new QueryException($"Identifier '{identifier.Name}' could not be resolved.");
            case PropertyExpression property:
                var name = property.Name;
                if (property.Target is IdentifierExpression)
                {
                    Compile(property.Target);
                    return (in QueryValue document) => document.GetProperty(name);
                }

                var owner = Compile(property.Target);
                return (in QueryValue document) => owner(document).GetProperty(name);
            case IndexExpression index:
                var target = Compile(index.Target);
                var key = Compile(index.Index);
                return (in QueryValue document) =>
                {
                    var k = key(document);
                    return k.Kind switch
                    {
                        QueryValueKind.Number => target(document).GetIndex((int)k.Number),
                        QueryValueKind.String => target(document).GetProperty(k.AsString()),
                        _ => QueryValue.Undefined,
                    };
                };
            case UnaryExpression unary:
                return CompileUnary(unary);
            case BinaryExpression binary:
                return CompileBinary(binary);
            case InExpression @in:
                return CompileIn(@in);
            case BetweenExpression between:
                return CompileBetween(between);
            case FunctionCallExpression call when call.IsAggregate:
                if (AggregateResults is null || !AggregateResults.TryGetValue(call, out var aggregate))
                {
                    throw new QueryException($"The aggregate function {call.Name} is only allowed in the SELECT clause.");
                }

                return Constant(aggregate);
            case FunctionCallExpression call:
                var functionName = call.Name;
                var arguments = call.Arguments.Select(Compile).ToArray();
                return (in QueryValue document) =>
                {
                    var values = new QueryValue[arguments.Length];
                    for (var i = 0; i < values.Length; i++)
                    {
                        values[i] = arguments[i](document);
                    }

                    return BuiltinFunctions.Invoke(functionName, values);
                };
            case ArrayExpression array:
                var items = array.Items.Select(Compile).ToArray();
                return (in QueryValue document) =>
                {
                    var values = new QueryValue[items.Length];
                    for (var i = 0; i < values.Length; i++)
                    {
                        values[i] = items[i](document);
                    }

                    return QueryValue.FromArray(values);
                };
            case ObjectExpression obj:
                return CompileObject([.. obj.Properties.Select(p => p.Key)], [.. obj.Properties.Select(p => Compile(p.Value))]);
            default:
                throw new QueryException($"Unsupported expression {expression.GetType().Name}.");
        }
    }

    /// <summary>An object constructor: <c>{"a": …, "b": …}</c> (also the form of a SELECT list).</summary>
    public static CompiledExpression CompileObject(string[] names, CompiledExpression[] values) =>
        (in QueryValue document) =>
        {
            var properties = new KeyValuePair<string, QueryValue>[names.Length];
            for (var i = 0; i < properties.Length; i++)
            {
                properties[i] = new(names[i], values[i](document));
            }

            return QueryValue.FromObject(properties);
        };

    private static CompiledExpression Constant(QueryValue value) => (in QueryValue _) => value;

    private CompiledExpression CompileUnary(UnaryExpression unary)
    {
        var operand = Compile(unary.Operand);
        return unary.Operator switch
        {
            UnaryOperator.Not => (in QueryValue document) =>
            {
                var v = operand(document);
                return v.Kind == QueryValueKind.Boolean ? QueryValue.FromBoolean(!v.IsTrue) : QueryValue.Undefined;
            },
            UnaryOperator.Negate => (in QueryValue document) =>
            {
                var v = operand(document);
                return v.Kind == QueryValueKind.Number ? QueryValue.FromNumber(-v.Number) : QueryValue.Undefined;
            },
            _ => (in QueryValue document) =>
            {
                var v = operand(document);
                return v.Kind == QueryValueKind.Number ? v : QueryValue.Undefined;
            },
        };
    }

    private CompiledExpression CompileBinary(BinaryExpression binary)
    {
        var left = Compile(binary.Left);
        var right = Compile(binary.Right);
        switch (binary.Operator)
        {
            case BinaryOperator.And:
                // Three-valued logic: false wins over undefined, undefined over true.
                return (in QueryValue document) =>
                {
                    var l = left(document);
                    if (l.Kind == QueryValueKind.Boolean && !l.IsTrue)
                    {
                        return QueryValue.False;
                    }

                    var r = right(document);
                    if (r.Kind == QueryValueKind.Boolean && !r.IsTrue)
                    {
                        return QueryValue.False;
                    }

                    return l.IsTrue && r.IsTrue ? QueryValue.True : QueryValue.Undefined;
                };
            case BinaryOperator.Or:
                return (in QueryValue document) =>
                {
                    var l = left(document);
                    if (l.IsTrue)
                    {
                        return QueryValue.True;
                    }

                    var r = right(document);
                    if (r.IsTrue)
                    {
                        return QueryValue.True;
                    }

                    return l.Kind == QueryValueKind.Boolean && r.Kind == QueryValueKind.Boolean ? QueryValue.False : QueryValue.Undefined;
                };
            case BinaryOperator.Equal:
                return (in QueryValue document) => QueryValueComparer.EqualsOperator(left(document), right(document));
            case BinaryOperator.NotEqual:
                return (in QueryValue document) =>
                {
                    var equal = QueryValueComparer.EqualsOperator(left(document), right(document));
                    return equal.IsUndefined ? equal : QueryValue.FromBoolean(!equal.IsTrue);
                };
            case BinaryOperator.Less:
            case BinaryOperator.LessOrEqual:
            case BinaryOperator.Greater:
            case BinaryOperator.GreaterOrEqual:
                Func<int, bool> test = binary.Operator switch
                {
                    BinaryOperator.Less => static sign => sign < 0,
                    BinaryOperator.LessOrEqual => static sign => sign <= 0,
                    BinaryOperator.Greater => static sign => sign > 0,
                    _ => static sign => sign >= 0,
                };
                return (in QueryValue document) =>
                {
                    var sign = QueryValueComparer.CompareForOperator(left(document), right(document));
                    return sign is null ? QueryValue.Undefined : QueryValue.FromBoolean(test(sign.Value));
                };
            case BinaryOperator.Concat:
                return (in QueryValue document) =>
                {
                    var l = left(document);
                    var r = right(document);
                    return l.Kind == QueryValueKind.String && r.Kind == QueryValueKind.String
                        ? QueryValue.FromString(l.AsString() + r.AsString())
                        : QueryValue.Undefined;
                };
            default:
                Func<double, double, double> arithmetic = binary.Operator switch
                {
                    BinaryOperator.Add => static (a, b) => a + b,
                    BinaryOperator.Subtract => static (a, b) => a - b,
                    BinaryOperator.Multiply => static (a, b) => a * b,
                    BinaryOperator.Divide => static (a, b) => a / b,
                    _ => static (a, b) => a % b,
                };
                return (in QueryValue document) =>
                {
                    var l = left(document);
                    var r = right(document);
                    if (l.Kind != QueryValueKind.Number || r.Kind != QueryValueKind.Number)
                    {
                        return QueryValue.Undefined;
                    }

                    var result = arithmetic(l.Number, r.Number);
                    return double.IsFinite(result) ? QueryValue.FromNumber(result) : QueryValue.Undefined;
                };
        }
    }

    // x IN (a, b) is x = a OR x = b, with the same three-valued logic.
    private CompiledExpression CompileIn(InExpression @in)
    {
        var value = Compile(@in.Value);
        var items = @in.Items.Select(Compile).ToArray();
        var negated = @in.Negated;
        return (in QueryValue document) =>
        {
            var v = value(document);
            if (v.IsUndefined)
            {
                return QueryValue.Undefined;
            }

            var undefined = false;
            foreach (var item in items)
            {
                var equal = QueryValueComparer.EqualsOperator(v, item(document));
                if (equal.IsTrue)
                {
                    return QueryValue.FromBoolean(!negated);
                }

                undefined |= equal.IsUndefined;
            }

            return undefined ? QueryValue.Undefined : QueryValue.FromBoolean(negated);
        };
    }

    private CompiledExpression CompileBetween(BetweenExpression between)
    {
        var value = Compile(between.Value);
        var low = Compile(between.Low);
        var high = Compile(between.High);
        var negated = between.Negated;
        return (in QueryValue document) =>
        {
            var v = value(document);
            var lowSign = QueryValueComparer.CompareForOperator(v, low(document));
            var highSign = QueryValueComparer.CompareForOperator(v, high(document));
            if (lowSign is null || highSign is null)
            {
                return QueryValue.Undefined;
            }

            return QueryValue.FromBoolean((lowSign >= 0 && highSign <= 0) != negated);
        };
    }
}
