using System.Globalization;
using System.Text;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Messaging;

namespace DroneDelivery.Emulators.ServiceBus.Broker;

/// <summary>An expression or action outside the supported SQL subset; <see cref="Position"/> is 0-based.</summary>
public sealed class SqlRuleException(string message, int position) : Exception(message)
{
    public int Position { get; } = position;
}

/// <summary>Decides whether a message goes to a subscription.</summary>
internal interface IRuleFilter
{
    bool Matches(AmqpMessage message);
}

/// <summary>Changes a subscription's copy of a message.</summary>
internal interface IRuleAction
{
    void Apply(AmqpMessage message);
}

internal sealed class TrueFilter : IRuleFilter
{
    public static readonly TrueFilter Instance = new();

    public bool Matches(AmqpMessage message) => true;
}

/// <summary>
/// The SQL filter subset: comparisons (=, &lt;&gt;, !=, &gt;, &gt;=, &lt;, &lt;=), AND, OR, NOT, parentheses, [NOT] IN (...),
/// [NOT] LIKE with % and _, IS [NOT] NULL, EXISTS(name), string, number and boolean literals, on system properties
/// (<c>sys.Label</c>...) and user properties (<c>name</c> or <c>user.name</c>). Unknown values compare as unknown (no match).
/// </summary>
internal sealed class SqlFilter : IRuleFilter
{
    private readonly SqlNode _root;

    public SqlFilter(string expression)
    {
        Expression = expression;
        var parser = new SqlParser(expression);
        _root = parser.ParseExpression();
        parser.ExpectEnd();
    }

    public string Expression { get; }

    public bool Matches(AmqpMessage message) => _root.Evaluate(message) is true;
}

/// <summary>Correlation filter: every field that is set must equal the message's (properties too).</summary>
internal sealed class CorrelationFilter(CorrelationFilterOptions options) : IRuleFilter
{
    public CorrelationFilterOptions Options { get; } = options;

    public bool Matches(AmqpMessage message)
    {
        var p = message.Properties;
        if (!Same(Options.ContentType, p?.ContentType?.Value) || !Same(Options.CorrelationId, p?.CorrelationId?.ToString())
            || !Same(Options.Label, p?.Subject) || !Same(Options.MessageId, p?.MessageId?.ToString()) || !Same(Options.ReplyTo, p?.ReplyTo)
            || !Same(Options.ReplyToSessionId, p?.ReplyToGroupId) || !Same(Options.SessionId, p?.GroupId) || !Same(Options.To, p?.To))
        {
            return false;
        }

        foreach (var (name, expected) in Options.Properties)
        {
            if (message.ApplicationProperties is null || !message.ApplicationProperties.TryGetValue(name, out var actual) || SqlNode.Compare(actual, expected) != 0)
            {
                return false;
            }
        }

        return true;

        static bool Same(string? expected, string? actual) => expected is null || string.Equals(expected, actual, StringComparison.Ordinal);
    }
}

/// <summary>SQL actions: statements <c>SET name = value[, name = value]</c> and <c>REMOVE name[, name]</c>, separated by ';'.</summary>
internal sealed class SqlAction : IRuleAction
{
    /// <summary>The service's quota: at most 32 expressions per rule action.</summary>
    public const int MaxSteps = 32;

    private readonly List<(string? Set, SqlNode.Property Target, SqlNode? Value)> _steps = [];

    public SqlAction(string expression)
    {
        Expression = expression;
        var parser = new SqlParser(expression);
        while (!parser.AtEnd)
        {
            if (parser.TryKeyword("SET"))
            {
                do
                {
                    var target = parser.ParseProperty();
                    parser.Expect("=");
                    _steps.Add(("set", target, parser.ParseExpression()));
                }
                while (parser.TrySymbol(","));
            }
            else if (parser.TryKeyword("REMOVE"))
            {
                do
                {
                    _steps.Add((null, parser.ParseProperty(), null));
                }
                while (parser.TrySymbol(","));
            }
            else
            {
                throw parser.Error("expected SET or REMOVE");
            }

            if (!parser.TrySymbol(";"))
            {
                parser.ExpectEnd();
            }
        }

        if (_steps.Count == 0)
        {
            throw new SqlRuleException("the action is empty", 0);
        }

        if (_steps.Count > MaxSteps)
        {
            throw new SqlRuleException($"the action has {_steps.Count} expressions; the limit is {MaxSteps}", 0);
        }
    }

    public string Expression { get; }

    public void Apply(AmqpMessage message)
    {
        foreach (var (set, target, value) in _steps)
        {
            target.Assign(message, set is null ? null : value!.Evaluate(message), remove: set is null);
        }
    }
}

internal abstract class SqlNode
{
    public abstract object? Evaluate(AmqpMessage message);

    /// <summary>Orders two values: numbers by value, strings ordinally, booleans; null when they do not compare.</summary>
    public static int? Compare(object? left, object? right)
    {
        if (left is null || right is null)
        {
            return null;
        }

        if (IsNumber(left) && IsNumber(right))
        {
            return Convert.ToDouble(left, CultureInfo.InvariantCulture).CompareTo(Convert.ToDouble(right, CultureInfo.InvariantCulture));
        }

        return (left, right) switch
        {
            (string a, string b) => string.CompareOrdinal(a, b),
            (bool a, bool b) => a.CompareTo(b),
            (Guid a, Guid b) => a.CompareTo(b),
            (DateTime a, DateTime b) => a.CompareTo(b),
            _ => null,
        };
    }

    private static bool IsNumber(object value) => value is sbyte or byte or short or ushort or int or uint or long or ulong or float or double or decimal;

    internal sealed class Literal(object? value) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message) => value;
    }

    internal sealed class Property(string? system, string name) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message)
        {
            if (system is null)
            {
                return message.ApplicationProperties is { } properties && properties.TryGetValue(name, out var value) ? Normalise(value) : null;
            }

            var p = message.Properties;
            return system switch
            {
                "messageid" => p?.MessageId?.ToString(),
                "correlationid" => p?.CorrelationId?.ToString(),
                "label" => p?.Subject,
                "to" => p?.To,
                "replyto" => p?.ReplyTo,
                "contenttype" => p?.ContentType?.Value,
                "sessionid" => p?.GroupId,
                "replytosessionid" => p?.ReplyToGroupId,
                _ => null,
            };
        }

        public void Assign(AmqpMessage message, object? value, bool remove)
        {
            if (system is null)
            {
                if (remove)
                {
                    message.ApplicationProperties?.Remove(name);
                }
                else
                {
                    message.EnsureApplicationProperties()[name] = value;
                }

                return;
            }

            var text = remove ? null : value?.ToString();
            var p = message.EnsureProperties();
            switch (system)
            {
                case "messageid": p.MessageId = text; break;
                case "correlationid": p.CorrelationId = text; break;
                case "label": p.Subject = text; break;
                case "to": p.To = text; break;
                case "replyto": p.ReplyTo = text; break;
                case "contenttype": p.ContentType = text is null ? (AmqpSymbol?)null : new AmqpSymbol(text); break;
                case "sessionid": p.GroupId = text; break;
                case "replytosessionid": p.ReplyToGroupId = text; break;
            }
        }

        private static object? Normalise(object? value) => value switch
        {
            AmqpSymbol symbol => symbol.Value,
            char c => c.ToString(),
            _ => value,
        };
    }

    internal sealed class Exists(Property property, string? system, string name) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message) => system is null
            ? message.ApplicationProperties?.ContainsKey(name) == true
            : property.Evaluate(message) is not null;
    }

    internal sealed class Not(SqlNode operand) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message) => operand.Evaluate(message) is bool b ? !b : null;
    }

    internal sealed class Logical(bool and, SqlNode left, SqlNode right) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message)
        {
            var l = left.Evaluate(message) as bool?;
            if (and && l == false)
            {
                return false;
            }

            if (!and && l == true)
            {
                return true;
            }

            var r = right.Evaluate(message) as bool?;
            if (and)
            {
                return r == false ? false : (l == true && r == true) ? true : null;
            }

            return r == true ? true : (l == false && r == false) ? false : null;
        }
    }

    internal sealed class Comparison(string op, SqlNode left, SqlNode right) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message)
        {
            var order = Compare(left.Evaluate(message), right.Evaluate(message));
            if (order is not { } c)
            {
                return null;
            }

            return op switch
            {
                "=" => c == 0,
                "<>" or "!=" => c != 0,
                ">" => c > 0,
                ">=" => c >= 0,
                "<" => c < 0,
                _ => c <= 0,
            };
        }
    }

    internal sealed class In(SqlNode value, IReadOnlyList<SqlNode> candidates, bool negated) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message)
        {
            var v = value.Evaluate(message);
            if (v is null)
            {
                return null;
            }

            var found = candidates.Any(c => Compare(v, c.Evaluate(message)) == 0);
            return found != negated;
        }
    }

    internal sealed class Like(SqlNode value, string pattern, bool negated) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message) =>
            value.Evaluate(message) is string s ? Matches(s, pattern) != negated : null;

        /// <summary>
        /// '%' matches any run of characters, '_' any one, everything else itself. Matched directly rather than as a
        /// regular expression: a backtracking one takes exponential time on a pattern of many '%'s, and a
        /// non-backtracking one builds states for every '%' at every character, seconds per message for a pattern
        /// within the 1,024-character limit. Only the last '%' is ever returned to, so the work is at most the
        /// value's length times the pattern's.
        /// </summary>
        public static bool Matches(string value, string pattern)
        {
            int v = 0, p = 0, star = -1, resume = 0;
            while (v < value.Length)
            {
                if (p < pattern.Length && pattern[p] == '%')
                {
                    star = p++;
                    resume = v;
                }
                else if (p < pattern.Length && (pattern[p] == '_' || pattern[p] == value[v]))
                {
                    p++;
                    v++;
                }
                else if (star >= 0)
                {
                    p = star + 1;
                    v = ++resume;
                }
                else
                {
                    return false;
                }
            }

            while (p < pattern.Length && pattern[p] == '%')
            {
                p++;
            }

            return p == pattern.Length;
        }
    }

    internal sealed class IsNull(SqlNode value, bool negated) : SqlNode
    {
        public override object? Evaluate(AmqpMessage message) => (value.Evaluate(message) is null) != negated;
    }
}

/// <summary>A small recursive-descent parser over a tokenised SQL filter or action.</summary>
internal sealed class SqlParser
{
    private static readonly HashSet<string> SystemProperties = new(StringComparer.OrdinalIgnoreCase)
    {
        "MessageId", "CorrelationId", "Label", "Subject", "To", "ReplyTo", "ContentType", "SessionId", "ReplyToSessionId",
    };

    private static readonly HashSet<string> Keywords = new(StringComparer.OrdinalIgnoreCase)
    {
        "AND", "OR", "NOT", "IN", "LIKE", "IS", "NULL", "EXISTS", "TRUE", "FALSE", "SET", "REMOVE",
    };

    private readonly string _text;
    private readonly List<Token> _tokens;
    private int _index;

    /// <summary>
    /// The service's limit on a SQL filter or action (SqlRuleFilter and SqlRuleAction: "Max allowed length of sql
    /// expression is 1024 chars"). It also bounds how deeply an expression can nest, and so the parser's recursion.
    /// </summary>
    public const int MaxExpressionLength = 1024;

    public SqlParser(string text)
    {
        _text = text ?? string.Empty;
        if (_text.Length > MaxExpressionLength)
        {
            throw new SqlRuleException($"the expression is {_text.Length} characters long; the limit is {MaxExpressionLength}", MaxExpressionLength);
        }

        _tokens = Tokenize(_text);
    }

    public bool AtEnd => Current.Kind == TokenKind.End;

    private Token Current => _tokens[_index];

    public SqlRuleException Error(string message) =>
        new(AtEnd ? $"{message}, found the end of the expression" : $"{message}, found '{Current.Text}'", Current.Position);

    public void ExpectEnd()
    {
        if (!AtEnd)
        {
            throw Error("expected the end of the expression");
        }
    }

    public bool TryKeyword(string keyword)
    {
        if (Current.Kind == TokenKind.Identifier && !Current.Quoted && string.Equals(Current.Text, keyword, StringComparison.OrdinalIgnoreCase))
        {
            _index++;
            return true;
        }

        return false;
    }

    public bool TrySymbol(string symbol)
    {
        if (Current.Kind == TokenKind.Symbol && Current.Text == symbol)
        {
            _index++;
            return true;
        }

        return false;
    }

    public void Expect(string symbol)
    {
        if (!TrySymbol(symbol))
        {
            throw Error($"expected '{symbol}'");
        }
    }

    public SqlNode ParseExpression()
    {
        var left = ParseAnd();
        while (TryKeyword("OR"))
        {
            left = new SqlNode.Logical(and: false, left, ParseAnd());
        }

        return left;
    }

    private SqlNode ParseAnd()
    {
        var left = ParseNot();
        while (TryKeyword("AND"))
        {
            left = new SqlNode.Logical(and: true, left, ParseNot());
        }

        return left;
    }

    private SqlNode ParseNot() => TryKeyword("NOT") ? new SqlNode.Not(ParseNot()) : ParsePredicate();

    private SqlNode ParsePredicate()
    {
        var left = ParsePrimary();
        if (Current.Kind == TokenKind.Symbol && Current.Text is "=" or "<>" or "!=" or ">" or ">=" or "<" or "<=")
        {
            var op = Current.Text;
            _index++;
            return new SqlNode.Comparison(op, left, ParsePrimary());
        }

        if (TryKeyword("IS"))
        {
            var negated = TryKeyword("NOT");
            if (!TryKeyword("NULL"))
            {
                throw Error("expected NULL");
            }

            return new SqlNode.IsNull(left, negated);
        }

        var not = TryKeyword("NOT");
        if (TryKeyword("IN"))
        {
            Expect("(");
            var candidates = new List<SqlNode> { ParseLiteral() };
            while (TrySymbol(","))
            {
                candidates.Add(ParseLiteral());
            }

            Expect(")");
            return new SqlNode.In(left, candidates, not);
        }

        if (TryKeyword("LIKE"))
        {
            if (Current.Kind != TokenKind.String)
            {
                throw Error("expected a string pattern after LIKE");
            }

            var pattern = Current.Text;
            _index++;
            return new SqlNode.Like(left, pattern, not);
        }

        if (not)
        {
            throw Error("expected IN or LIKE after NOT");
        }

        return left;
    }

    private SqlNode ParsePrimary()
    {
        if (TrySymbol("("))
        {
            var inner = ParseExpression();
            Expect(")");
            return inner;
        }

        if (TryKeyword("EXISTS"))
        {
            Expect("(");
            var start = _index;
            var property = ParseProperty();
            Expect(")");
            var (system, name) = Split(_tokens[start]);
            return new SqlNode.Exists(property, system, name);
        }

        if (Current.Kind == TokenKind.Identifier && (Current.Quoted || !Keywords.Contains(Current.Text)))
        {
            return ParseProperty();
        }

        return ParseLiteral();
    }

    private SqlNode ParseLiteral()
    {
        var token = Current;
        if (token.Kind == TokenKind.String)
        {
            _index++;
            return new SqlNode.Literal(token.Text);
        }

        var negative = false;
        if (token.Kind == TokenKind.Symbol && token.Text == "-" && _tokens[_index + 1].Kind == TokenKind.Number)
        {
            negative = true;
            _index++;
            token = Current;
        }

        if (token.Kind == TokenKind.Number)
        {
            _index++;
            var text = negative ? "-" + token.Text : token.Text;
            if (long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var integer))
            {
                return new SqlNode.Literal(integer);
            }

            return double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out var real)
                ? new SqlNode.Literal(real)
                : throw new SqlRuleException($"'{token.Text}' is not a number", token.Position);
        }

        if (TryKeyword("TRUE"))
        {
            return new SqlNode.Literal(true);
        }

        if (TryKeyword("FALSE"))
        {
            return new SqlNode.Literal(false);
        }

        if (TryKeyword("NULL"))
        {
            return new SqlNode.Literal(null);
        }

        throw Error("expected a value");
    }

    public SqlNode.Property ParseProperty()
    {
        if (Current.Kind != TokenKind.Identifier || (!Current.Quoted && Keywords.Contains(Current.Text)))
        {
            throw Error("expected a property name");
        }

        var token = Current;
        _index++;
        var (system, name) = Split(token);
        return new SqlNode.Property(system, name);
    }

    /// <summary><c>sys.Label</c> → ("label", "Label"); <c>user.x</c> and <c>x</c> → (null, "x").</summary>
    private static (string? System, string Name) Split(Token token)
    {
        if (token.Quoted)
        {
            return (null, token.Text);
        }

        var dot = token.Text.IndexOf('.', StringComparison.Ordinal);
        if (dot < 0)
        {
            return (null, token.Text);
        }

        var scope = token.Text[..dot];
        var name = token.Text[(dot + 1)..];
        if (string.Equals(scope, "user", StringComparison.OrdinalIgnoreCase))
        {
            return (null, name);
        }

        if (string.Equals(scope, "sys", StringComparison.OrdinalIgnoreCase))
        {
            if (!SystemProperties.Contains(name))
            {
                throw new SqlRuleException($"'{token.Text}' is not a supported system property (use sys.{string.Join(", sys.", SystemProperties)})", token.Position);
            }

            var key = name.ToLowerInvariant();
            return (key == "subject" ? "label" : key, name);
        }

        throw new SqlRuleException($"'{token.Text}': a property is 'name', 'user.name' or 'sys.name'", token.Position);
    }

    private static List<Token> Tokenize(string text)
    {
        var tokens = new List<Token>();
        var i = 0;
        while (i < text.Length)
        {
            var c = text[i];
            if (char.IsWhiteSpace(c))
            {
                i++;
                continue;
            }

            var start = i;
            if (c == '\'')
            {
                var value = new StringBuilder();
                i++;
                while (true)
                {
                    if (i >= text.Length)
                    {
                        throw new SqlRuleException("unterminated string literal", start);
                    }

                    if (text[i] == '\'')
                    {
                        if (i + 1 < text.Length && text[i + 1] == '\'')
                        {
                            value.Append('\'');
                            i += 2;
                            continue;
                        }

                        i++;
                        break;
                    }

                    value.Append(text[i++]);
                }

                tokens.Add(new Token(TokenKind.String, value.ToString(), start));
            }
            else if (c == '[')
            {
                var end = text.IndexOf(']', i + 1);
                if (end < 0)
                {
                    throw new SqlRuleException("unterminated [name]", start);
                }

                tokens.Add(new Token(TokenKind.Identifier, text[(i + 1)..end], start, Quoted: true));
                i = end + 1;
            }
            else if (char.IsDigit(c) || (c == '.' && i + 1 < text.Length && char.IsDigit(text[i + 1])))
            {
                while (i < text.Length && (char.IsDigit(text[i]) || text[i] == '.'))
                {
                    i++;
                }

                if (i < text.Length && (text[i] is 'e' or 'E'))
                {
                    i++;
                    if (i < text.Length && text[i] is '+' or '-')
                    {
                        i++;
                    }

                    while (i < text.Length && char.IsDigit(text[i]))
                    {
                        i++;
                    }
                }

                tokens.Add(new Token(TokenKind.Number, text[start..i], start));
            }
            else if (char.IsLetter(c) || c == '_')
            {
                while (i < text.Length && (char.IsLetterOrDigit(text[i]) || text[i] is '_' or '.' or '$'))
                {
                    i++;
                }

                tokens.Add(new Token(TokenKind.Identifier, text[start..i], start));
            }
            else
            {
                var two = i + 1 < text.Length ? text.Substring(i, 2) : null;
                if (two is "<>" or "!=" or ">=" or "<=")
                {
                    tokens.Add(new Token(TokenKind.Symbol, two, start));
                    i += 2;
                }
                else if (c is '=' or '<' or '>' or '(' or ')' or ',' or ';' or '-')
                {
                    tokens.Add(new Token(TokenKind.Symbol, c.ToString(), start));
                    i++;
                }
                else
                {
                    throw new SqlRuleException($"unexpected character '{c}'", start);
                }
            }
        }

        tokens.Add(new Token(TokenKind.End, string.Empty, text.Length));
        return tokens;
    }

    private enum TokenKind
    {
        Identifier,
        String,
        Number,
        Symbol,
        End,
    }

    private sealed record Token(TokenKind Kind, string Text, int Position, bool Quoted = false);
}
