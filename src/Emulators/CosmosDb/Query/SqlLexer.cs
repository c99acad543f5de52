using System.Globalization;
using System.Text;
using DroneDelivery.Emulators.CosmosDb.Protocol;

namespace DroneDelivery.Emulators.CosmosDb.Query;

internal enum TokenKind
{
    Identifier,
    Keyword,
    Number,
    String,
    Parameter,
    Symbol,
    End,
}

internal readonly record struct Token(TokenKind Kind, string Text, int Position, double Number = 0)
{
    public bool Is(TokenKind kind, string text) =>
        Kind == kind && string.Equals(Text, text, StringComparison.OrdinalIgnoreCase);

    public bool IsKeyword(string keyword) => Is(TokenKind.Keyword, keyword);

    public bool IsSymbol(string symbol) => Kind == TokenKind.Symbol && Text == symbol;
}

/// <summary>Splits Cosmos DB SQL text into tokens.</summary>
internal static class SqlLexer
{
    private static readonly HashSet<string> Keywords = new(StringComparer.OrdinalIgnoreCase)
    {
        "SELECT", "TOP", "VALUE", "DISTINCT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "BETWEEN",
        "ORDER", "BY", "ASC", "DESC", "AS", "JOIN", "GROUP", "OFFSET", "LIMIT", "TRUE", "FALSE", "NULL",
        "UNDEFINED", "LIKE", "ESCAPE", "EXISTS", "ARRAY", "UDF", "RANK", "HAVING",
    };

    // Longest first, so that "<=" wins over "<".
    private static readonly string[] Symbols =
    [
        "!=", "<>", "<=", ">=", "||", "??", ",", ".", "(", ")", "[", "]", "{", "}", ":", "*", "+", "-", "/", "%",
        "=", "<", ">", "?", "&", "|", "^", "~",
    ];

    public static bool IsKeyword(string word) => Keywords.Contains(word);

    public static List<Token> Tokenize(string text)
    {
        var tokens = new List<Token>();
        var i = 0;
        while (true)
        {
            while (i < text.Length && char.IsWhiteSpace(text[i]))
            {
                i++;
            }

            if (i < text.Length - 1 && text[i] == '-' && text[i + 1] == '-')
            {
                while (i < text.Length && text[i] != '\n')
                {
                    i++;
                }

                continue;
            }

            if (i >= text.Length)
            {
                tokens.Add(new Token(TokenKind.End, string.Empty, i));
                return tokens;
            }

            var start = i;
            var c = text[i];
            if (char.IsLetter(c) || c == '_' || c == '$')
            {
                while (i < text.Length && (char.IsLetterOrDigit(text[i]) || text[i] == '_' || text[i] == '$'))
                {
                    i++;
                }

                var word = text[start..i];
                tokens.Add(new Token(Keywords.Contains(word) ? TokenKind.Keyword : TokenKind.Identifier, word, start));
            }
            else if (c == '@')
            {
                i++;
                while (i < text.Length && (char.IsLetterOrDigit(text[i]) || text[i] == '_'))
                {
                    i++;
                }

                if (i == start + 1)
                {
                    throw Syntax(text, start);
                }

                tokens.Add(new Token(TokenKind.Parameter, text[start..i], start));
            }
            else if (char.IsDigit(c) || (c == '.' && i + 1 < text.Length && char.IsDigit(text[i + 1])))
            {
                tokens.Add(ReadNumber(text, ref i));
            }
            else if (c is '\'' or '"')
            {
                tokens.Add(new Token(TokenKind.String, ReadString(text, ref i), start));
            }
            else
            {
                var symbol = Symbols.FirstOrDefault(s => string.CompareOrdinal(text, i, s, 0, s.Length) == 0)
                    ?? throw Syntax(text, start);
                i += symbol.Length;
                tokens.Add(new Token(TokenKind.Symbol, symbol, start));
            }
        }
    }

    private static string Shorten(string text) => text.Length <= 40 ? text : text[..40] + "…";

    public static QueryException Syntax(string text, int position)
    {
        var near = position < text.Length ? text[position..Math.Min(text.Length, position + 20)] : "<end of query>";
        return new QueryException($"Syntax error, incorrect syntax near '{near}' at position {position}.");
    }

    private static Token ReadNumber(string text, ref int i)
    {
        var start = i;
        if (text[i] == '0' && i + 1 < text.Length && (text[i + 1] == 'x' || text[i + 1] == 'X'))
        {
            i += 2;
            while (i < text.Length && Uri.IsHexDigit(text[i]))
            {
                i++;
            }

            if (!long.TryParse(text.AsSpan(start + 2, i - start - 2), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out var hex))
            {
                throw new QueryException(
                    $"Syntax error, the hexadecimal number '{text[start..i]}' at position {start} is empty or does not fit in 64 bits.");
            }

            return new Token(TokenKind.Number, text[start..i], start, hex);
        }

        while (i < text.Length && char.IsDigit(text[i]))
        {
            i++;
        }

        if (i < text.Length && text[i] == '.')
        {
            i++;
            while (i < text.Length && char.IsDigit(text[i]))
            {
                i++;
            }
        }

        if (i < text.Length && (text[i] == 'e' || text[i] == 'E'))
        {
            var save = i;
            i++;
            if (i < text.Length && (text[i] == '+' || text[i] == '-'))
            {
                i++;
            }

            if (i >= text.Length || !char.IsDigit(text[i]))
            {
                i = save;
            }
            else
            {
                while (i < text.Length && char.IsDigit(text[i]))
                {
                    i++;
                }
            }
        }

        var literal = text[start..i];
        var number = double.Parse(literal, NumberStyles.Float, CultureInfo.InvariantCulture);
        if (!double.IsFinite(number))
        {
            // JSON has no Infinity: such a literal could be neither returned nor compared as the service does.
            throw new QueryException($"The number '{Shorten(literal)}' at position {start} is outside the range of a double.");
        }

        return new Token(TokenKind.Number, literal, start, number);
    }

    private static string ReadString(string text, ref int i)
    {
        var quote = text[i];
        var start = i;
        i++;
        var builder = new StringBuilder();
        while (true)
        {
            if (i >= text.Length)
            {
                throw new QueryException($"Syntax error, unterminated string literal starting at position {start}.");
            }

            var c = text[i++];
            if (c == quote)
            {
                var value = builder.ToString();
                return JsonInput.IsValidUtf16(value)
                    ? value
                    : throw new QueryException($"Syntax error, the string literal at position {start} is not valid UTF-16 (an unpaired surrogate).");
            }

            if (c != '\\')
            {
                builder.Append(c);
                continue;
            }

            if (i >= text.Length)
            {
                throw new QueryException($"Syntax error, unterminated string literal starting at position {start}.");
            }

            var escaped = text[i++];
            switch (escaped)
            {
                case 'b': builder.Append('\b'); break;
                case 'f': builder.Append('\f'); break;
                case 'n': builder.Append('\n'); break;
                case 'r': builder.Append('\r'); break;
                case 't': builder.Append('\t'); break;
                case 'u':
                    if (i + 4 > text.Length || !ushort.TryParse(text.AsSpan(i, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture, out var code))
                    {
                        throw new QueryException($"Syntax error, invalid \\u escape at position {i - 2}.");
                    }

                    builder.Append((char)code);
                    i += 4;
                    break;
                default:
                    builder.Append(escaped);
                    break;
            }
        }
    }
}
