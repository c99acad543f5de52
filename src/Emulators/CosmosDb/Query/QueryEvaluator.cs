namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>
/// Evaluates expressions against one document at a time. Not thread-safe: one instance per
/// executing request.
/// </summary>
internal sealed class QueryEvaluator(string alias, IReadOnlyDictionary<string, QueryValue> parameters)
{
    private IReadOnlyDictionary<FunctionCallExpression, QueryValue>? _aggregateResults;

    /// <summary>The document the alias is bound to.</summary>
    public QueryValue Document { get; set; }

    /// <summary>Switches aggregate calls to answer with these precomputed results.</summary>
    public void UseAggregateResults(IReadOnlyDictionary<FunctionCallExpression, QueryValue> results) => _aggregateResults = results;

    /// <summary>True when the expression evaluates to the boolean true (WHERE keeps the document).</summary>
    public bool IsTrue(SqlExpression expression) => Evaluate(expression).IsTrue;

    public QueryValue Evaluate(SqlExpression expression)
    {
        switch (expression)
        {
            case LiteralExpression literal:
                return literal.Value;
            case ParameterExpression parameter:
                return parameters.TryGetValue(parameter.Name, out var value)
                    ? value
                    : throw new QueryException($"The query parameter {parameter.Name} is not defined.");
            case IdentifierExpression identifier:
                return string.Equals(identifier.Name, alias, StringComparison.Ordinal)
                    ? Document
                    : throw new QueryException($"Identifier '{identifier.Name}' could not be resolved.");
            case PropertyExpression property:
                return Evaluate(property.Target).GetProperty(property.Name);
            case IndexExpression index:
                var target = Evaluate(index.Target);
                var key = Evaluate(index.Index);
                return key.Kind switch
                {
                    QueryValueKind.Number => target.GetIndex((int)key.Number),
                    QueryValueKind.String => target.GetProperty(key.AsString()),
                    _ => QueryValue.Undefined,
                };
            case UnaryExpression unary:
                return EvaluateUnary(unary);
            case BinaryExpression binary:
                return EvaluateBinary(binary);
            case InExpression @in:
                return EvaluateIn(@in);
            case BetweenExpression between:
                return EvaluateBetween(between);
            case FunctionCallExpression call when call.IsAggregate:
                if (_aggregateResults is null || !_aggregateResults.TryGetValue(call, out var aggregate))
                {
                    throw new QueryException($"The aggregate function {call.Name} is only allowed in the SELECT clause.");
                }

                return aggregate;
            case FunctionCallExpression call:
                var arguments = new QueryValue[call.Arguments.Count];
                for (var i = 0; i < arguments.Length; i++)
                {
                    arguments[i] = Evaluate(call.Arguments[i]);
                }

                return BuiltinFunctions.Invoke(call.Name, arguments);
            case ArrayExpression array:
                var items = new QueryValue[array.Items.Count];
                for (var i = 0; i < items.Length; i++)
                {
                    items[i] = Evaluate(array.Items[i]);
                }

                return QueryValue.FromArray(items);
            case ObjectExpression obj:
                var properties = new KeyValuePair<string, QueryValue>[obj.Properties.Count];
                for (var i = 0; i < properties.Length; i++)
                {
                    properties[i] = new(obj.Properties[i].Key, Evaluate(obj.Properties[i].Value));
                }

                return QueryValue.FromObject(properties);
            default:
                throw new QueryException($"Unsupported expression {expression.GetType().Name}.");
        }
    }

    private QueryValue EvaluateUnary(UnaryExpression unary)
    {
        var operand = Evaluate(unary.Operand);
        return unary.Operator switch
        {
            UnaryOperator.Not => operand.Kind == QueryValueKind.Boolean ? QueryValue.FromBoolean(!operand.IsTrue) : QueryValue.Undefined,
            UnaryOperator.Negate => operand.Kind == QueryValueKind.Number ? QueryValue.FromNumber(-operand.Number) : QueryValue.Undefined,
            _ => operand.Kind == QueryValueKind.Number ? operand : QueryValue.Undefined,
        };
    }

    private QueryValue EvaluateBinary(BinaryExpression binary)
    {
        switch (binary.Operator)
        {
            case BinaryOperator.And:
            {
                // Three-valued logic: false wins over undefined, undefined over true.
                var left = Evaluate(binary.Left);
                if (left.Kind == QueryValueKind.Boolean && !left.IsTrue)
                {
                    return QueryValue.False;
                }

                var right = Evaluate(binary.Right);
                if (right.Kind == QueryValueKind.Boolean && !right.IsTrue)
                {
                    return QueryValue.False;
                }

                return left.IsTrue && right.IsTrue ? QueryValue.True : QueryValue.Undefined;
            }

            case BinaryOperator.Or:
            {
                var left = Evaluate(binary.Left);
                if (left.IsTrue)
                {
                    return QueryValue.True;
                }

                var right = Evaluate(binary.Right);
                if (right.IsTrue)
                {
                    return QueryValue.True;
                }

                return left.Kind == QueryValueKind.Boolean && right.Kind == QueryValueKind.Boolean
                    ? QueryValue.False
                    : QueryValue.Undefined;
            }
        }

        var l = Evaluate(binary.Left);
        var r = Evaluate(binary.Right);
        switch (binary.Operator)
        {
            case BinaryOperator.Equal:
                return QueryValueComparer.EqualsOperator(l, r);
            case BinaryOperator.NotEqual:
                var equal = QueryValueComparer.EqualsOperator(l, r);
                return equal.IsUndefined ? equal : QueryValue.FromBoolean(!equal.IsTrue);
            case BinaryOperator.Less:
            case BinaryOperator.LessOrEqual:
            case BinaryOperator.Greater:
            case BinaryOperator.GreaterOrEqual:
                var sign = QueryValueComparer.CompareForOperator(l, r);
                if (sign is null)
                {
                    return QueryValue.Undefined;
                }

                return QueryValue.FromBoolean(binary.Operator switch
                {
                    BinaryOperator.Less => sign < 0,
                    BinaryOperator.LessOrEqual => sign <= 0,
                    BinaryOperator.Greater => sign > 0,
                    _ => sign >= 0,
                });
            case BinaryOperator.Concat:
                return l.Kind == QueryValueKind.String && r.Kind == QueryValueKind.String
                    ? QueryValue.FromString(l.AsString() + r.AsString())
                    : QueryValue.Undefined;
            default:
                if (l.Kind != QueryValueKind.Number || r.Kind != QueryValueKind.Number)
                {
                    return QueryValue.Undefined;
                }

                var result = binary.Operator switch
                {
                    BinaryOperator.Add => l.Number + r.Number,
                    BinaryOperator.Subtract => l.Number - r.Number,
                    BinaryOperator.Multiply => l.Number * r.Number,
                    BinaryOperator.Divide => l.Number / r.Number,
                    _ => l.Number % r.Number,
                };
                return double.IsFinite(result) ? QueryValue.FromNumber(result) : QueryValue.Undefined;
        }
    }

    // x IN (a, b) is x = a OR x = b, with the same three-valued logic.
    private QueryValue EvaluateIn(InExpression @in)
    {
        var value = Evaluate(@in.Value);
        if (value.IsUndefined)
        {
            return QueryValue.Undefined;
        }

        var undefined = false;
        foreach (var item in @in.Items)
        {
            var equal = QueryValueComparer.EqualsOperator(value, Evaluate(item));
            if (equal.IsTrue)
            {
                return QueryValue.FromBoolean(!@in.Negated);
            }

            undefined |= equal.IsUndefined;
        }

        return undefined ? QueryValue.Undefined : QueryValue.FromBoolean(@in.Negated);
    }

    private QueryValue EvaluateBetween(BetweenExpression between)
    {
        var value = Evaluate(between.Value);
        var low = QueryValueComparer.CompareForOperator(value, Evaluate(between.Low));
        var high = QueryValueComparer.CompareForOperator(value, Evaluate(between.High));
        if (low is null || high is null)
        {
            return QueryValue.Undefined;
        }

        var inside = low >= 0 && high <= 0;
        return QueryValue.FromBoolean(inside != between.Negated);
    }
}
