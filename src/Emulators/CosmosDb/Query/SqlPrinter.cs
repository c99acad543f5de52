using System.Text;
using System.Text.Json;

namespace DroneDelivery.Emulators.CosmosDb.Query;

/// <summary>Writes a query back as text: the form of the rewritten queries the query plan hands the SDK.</summary>
internal static class SqlPrinter
{
    public static string Print(SqlQuery query)
    {
        var text = new StringBuilder("SELECT ");
        if (query.Distinct)
        {
            text.Append("DISTINCT ");
        }

        if (query.Top is not null)
        {
            text.Append("TOP ").Append(Print(query.Top)).Append(' ');
        }

        if (query.SelectAll)
        {
            text.Append('*');
        }
        else if (query.SelectValue is not null)
        {
            text.Append("VALUE ").Append(Print(query.SelectValue));
        }
        else
        {
            text.AppendJoin(", ", query.SelectItems.Select(i => i.Alias is null ? Print(i.Expression) : $"{Print(i.Expression)} AS {i.Alias}"));
        }

        text.Append(" FROM ").Append(query.FromName);
        if (!string.Equals(query.FromName, query.Alias, StringComparison.Ordinal))
        {
            text.Append(" AS ").Append(query.Alias);
        }

        if (query.Where is not null)
        {
            text.Append(" WHERE ").Append(Print(query.Where));
        }

        if (query.GroupBy.Count > 0)
        {
            text.Append(" GROUP BY ").AppendJoin(", ", query.GroupBy.Select(Print));
        }

        if (query.OrderBy.Count > 0)
        {
            text.Append(" ORDER BY ").AppendJoin(", ", query.OrderBy.Select(o => Print(o.Expression) + (o.Descending ? " DESC" : " ASC")));
        }

        if (query.Offset is not null && query.Limit is not null)
        {
            text.Append(" OFFSET ").Append(Print(query.Offset)).Append(" LIMIT ").Append(Print(query.Limit));
        }

        return text.ToString();
    }

    public static string Print(SqlExpression expression) => expression switch
    {
        LiteralExpression literal => literal.Value.IsUndefined ? "undefined" : literal.Value.ToString(),
        ParameterExpression parameter => parameter.Name,
        IdentifierExpression identifier => identifier.Name,
        PropertyExpression property => IsIdentifier(property.Name)
            ? $"{Print(property.Target)}.{property.Name}"
            : $"{Print(property.Target)}[{JsonSerializer.Serialize(property.Name)}]",
        IndexExpression index => $"{Print(index.Target)}[{Print(index.Index)}]",
        UnaryExpression unary => unary.Operator switch
        {
            UnaryOperator.Not => $"(NOT {Print(unary.Operand)})",
            UnaryOperator.Negate => $"(-{Print(unary.Operand)})",
            _ => $"(+{Print(unary.Operand)})",
        },
        BinaryExpression binary => $"({Print(binary.Left)} {Symbol(binary.Operator)} {Print(binary.Right)})",
        InExpression @in => $"({Print(@in.Value)}{(@in.Negated ? " NOT" : string.Empty)} IN ({string.Join(", ", @in.Items.Select(Print))}))",
        BetweenExpression between => $"({Print(between.Value)}{(between.Negated ? " NOT" : string.Empty)} BETWEEN {Print(between.Low)} AND {Print(between.High)})",
        FunctionCallExpression call => $"{call.Name}({string.Join(", ", call.Arguments.Select(Print))})",
        ArrayExpression array => $"[{string.Join(", ", array.Items.Select(Print))}]",
        ObjectExpression obj => "{" + string.Join(", ", obj.Properties.Select(p => $"{JsonSerializer.Serialize(p.Key)}: {Print(p.Value)}")) + "}",
        _ => throw new InvalidOperationException($"Cannot print {expression.GetType().Name}."),
    };

    private static bool IsIdentifier(string name) =>
        name.Length > 0 && (char.IsLetter(name[0]) || name[0] == '_' || name[0] == '$')
        && name.All(c => char.IsLetterOrDigit(c) || c == '_' || c == '$')
        && !SqlLexer.IsKeyword(name);

    private static string Symbol(BinaryOperator op) => op switch
    {
        BinaryOperator.Or => "OR",
        BinaryOperator.And => "AND",
        BinaryOperator.Equal => "=",
        BinaryOperator.NotEqual => "!=",
        BinaryOperator.Less => "<",
        BinaryOperator.LessOrEqual => "<=",
        BinaryOperator.Greater => ">",
        BinaryOperator.GreaterOrEqual => ">=",
        BinaryOperator.Add => "+",
        BinaryOperator.Subtract => "-",
        BinaryOperator.Multiply => "*",
        BinaryOperator.Divide => "/",
        BinaryOperator.Modulo => "%",
        _ => "||",
    };
}
