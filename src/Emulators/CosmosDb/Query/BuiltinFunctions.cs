using System.Globalization;

namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>The scalar system functions the emulator implements, with Cosmos DB's undefined-propagation rules.</summary>
internal static class BuiltinFunctions
{
    private static readonly Dictionary<string, (int Min, int Max)> Arity = new(StringComparer.Ordinal)
    {
        ["IS_DEFINED"] = (1, 1),
        ["IS_NULL"] = (1, 1),
        ["IS_BOOL"] = (1, 1),
        ["IS_NUMBER"] = (1, 1),
        ["IS_STRING"] = (1, 1),
        ["IS_ARRAY"] = (1, 1),
        ["IS_OBJECT"] = (1, 1),
        ["IS_PRIMITIVE"] = (1, 1),
        ["STARTSWITH"] = (2, 3),
        ["ENDSWITH"] = (2, 3),
        ["CONTAINS"] = (2, 3),
        ["LOWER"] = (1, 1),
        ["UPPER"] = (1, 1),
        ["LENGTH"] = (1, 1),
        ["CONCAT"] = (2, int.MaxValue),
        ["SUBSTRING"] = (3, 3),
        ["INDEX_OF"] = (2, 3),
        ["TOSTRING"] = (1, 1),
        ["ABS"] = (1, 1),
        ["FLOOR"] = (1, 1),
        ["CEILING"] = (1, 1),
        ["ROUND"] = (1, 1),
        ["ARRAY_CONTAINS"] = (2, 3),
        ["ARRAY_LENGTH"] = (1, 1),
    };

    /// <summary>Checks a call at analysis time so that an unknown function fails even on an empty container.</summary>
    public static void Validate(FunctionCallExpression call)
    {
        if (call.IsAggregate)
        {
            if (call.Arguments.Count != 1)
            {
                throw new QueryException($"The aggregate function {call.Name} takes exactly one argument.");
            }

            return;
        }

        if (!Arity.TryGetValue(call.Name, out var arity))
        {
            throw QueryException.Unsupported($"the function {call.Name}");
        }

        if (call.Arguments.Count < arity.Min || call.Arguments.Count > arity.Max)
        {
            throw new QueryException($"The function {call.Name} does not take {call.Arguments.Count} arguments.");
        }
    }

    public static QueryValue Invoke(string name, QueryValue[] args) => name switch
    {
        "IS_DEFINED" => QueryValue.FromBoolean(!args[0].IsUndefined),
        "IS_NULL" => QueryValue.FromBoolean(args[0].Kind == QueryValueKind.Null),
        "IS_BOOL" => QueryValue.FromBoolean(args[0].Kind == QueryValueKind.Boolean),
        "IS_NUMBER" => QueryValue.FromBoolean(args[0].Kind == QueryValueKind.Number),
        "IS_STRING" => QueryValue.FromBoolean(args[0].Kind == QueryValueKind.String),
        "IS_ARRAY" => QueryValue.FromBoolean(args[0].Kind == QueryValueKind.Array),
        "IS_OBJECT" => QueryValue.FromBoolean(args[0].Kind == QueryValueKind.Object),
        "IS_PRIMITIVE" => QueryValue.FromBoolean(args[0].Kind is QueryValueKind.Null or QueryValueKind.Boolean or QueryValueKind.Number or QueryValueKind.String),
        "STARTSWITH" => StringTest(args, (s, p, c) => s.StartsWith(p, c)),
        "ENDSWITH" => StringTest(args, (s, p, c) => s.EndsWith(p, c)),
        "CONTAINS" => StringTest(args, (s, p, c) => s.Contains(p, c)),
        "LOWER" => args[0].Kind == QueryValueKind.String ? QueryValue.FromString(args[0].AsString().ToLowerInvariant()) : QueryValue.Undefined,
        "UPPER" => args[0].Kind == QueryValueKind.String ? QueryValue.FromString(args[0].AsString().ToUpperInvariant()) : QueryValue.Undefined,
        "LENGTH" => args[0].Kind == QueryValueKind.String ? QueryValue.FromNumber(args[0].AsString().Length) : QueryValue.Undefined,
        "CONCAT" => args.All(a => a.Kind == QueryValueKind.String)
            ? QueryValue.FromString(string.Concat(args.Select(a => a.AsString())))
            : QueryValue.Undefined,
        "SUBSTRING" => Substring(args),
        "INDEX_OF" => IndexOf(args),
        "TOSTRING" => args[0].IsUndefined ? QueryValue.Undefined
            : args[0].Kind == QueryValueKind.String ? args[0]
            : QueryValue.FromString(args[0].ToString()),
        "ABS" => Numeric(args[0], Math.Abs),
        "FLOOR" => Numeric(args[0], Math.Floor),
        "CEILING" => Numeric(args[0], Math.Ceiling),
        "ROUND" => Numeric(args[0], v => Math.Round(v, MidpointRounding.AwayFromZero)),
        "ARRAY_CONTAINS" => ArrayContains(args),
        "ARRAY_LENGTH" => args[0].Kind == QueryValueKind.Array ? QueryValue.FromNumber(args[0].ArrayLength) : QueryValue.Undefined,
        _ => throw QueryException.Unsupported($"the function {name}"),
    };

    private static QueryValue StringTest(QueryValue[] args, Func<string, string, StringComparison, bool> test)
    {
        if (args[0].Kind != QueryValueKind.String || args[1].Kind != QueryValueKind.String)
        {
            return QueryValue.Undefined;
        }

        var ignoreCase = args.Length > 2 && args[2].IsTrue;
        return QueryValue.FromBoolean(test(args[0].AsString(), args[1].AsString(), ignoreCase ? StringComparison.OrdinalIgnoreCase : StringComparison.Ordinal));
    }

    private static QueryValue Substring(QueryValue[] args)
    {
        if (args[0].Kind != QueryValueKind.String || args[1].Kind != QueryValueKind.Number || args[2].Kind != QueryValueKind.Number)
        {
            return QueryValue.Undefined;
        }

        var text = args[0].AsString();
        var start = (int)Math.Clamp(args[1].Number, 0, text.Length);
        var length = (int)Math.Clamp(args[2].Number, 0, text.Length - start);
        return QueryValue.FromString(text.Substring(start, length));
    }

    private static QueryValue IndexOf(QueryValue[] args)
    {
        if (args[0].Kind != QueryValueKind.String || args[1].Kind != QueryValueKind.String)
        {
            return QueryValue.Undefined;
        }

        var start = args.Length > 2 && args[2].Kind == QueryValueKind.Number ? (int)args[2].Number : 0;
        var text = args[0].AsString();
        if (start < 0 || start > text.Length)
        {
            return QueryValue.FromNumber(-1);
        }

        return QueryValue.FromNumber(text.IndexOf(args[1].AsString(), start, StringComparison.Ordinal));
    }

    private static QueryValue Numeric(QueryValue value, Func<double, double> operation) =>
        value.Kind == QueryValueKind.Number ? QueryValue.FromNumber(operation(value.Number)) : QueryValue.Undefined;

    private static QueryValue ArrayContains(QueryValue[] args)
    {
        if (args[0].Kind != QueryValueKind.Array)
        {
            return QueryValue.Undefined;
        }

        var partial = args.Length > 2 && args[2].IsTrue;
        foreach (var item in args[0].EnumerateArray())
        {
            if (partial && item.Kind == QueryValueKind.Object && args[1].Kind == QueryValueKind.Object)
            {
                if (args[1].EnumerateObject().All(p => QueryValueComparer.DeepEquals(item.GetProperty(p.Key), p.Value)))
                {
                    return QueryValue.True;
                }
            }
            else if (QueryValueComparer.DeepEquals(item, args[1]))
            {
                return QueryValue.True;
            }
        }

        return QueryValue.False;
    }
}
