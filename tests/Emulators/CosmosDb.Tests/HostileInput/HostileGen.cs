using System.Globalization;
using System.Text;
using System.Text.Json;
using FsCheck;
using FsCheck.Fluent;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// Building blocks for hostile input: odd strings (control characters, lone surrogates, quotes,
/// very long runs), numbers JSON can write but a double cannot hold, JSON that is valid but nasty
/// (deep, duplicate keys, odd escapes) and the mutations that turn valid text into near-valid text
/// (truncation, a character dropped or doubled, a token slipped in, unbalanced brackets).
/// </summary>
internal static class HostileGen
{
    public static readonly string[] SqlKeywords =
    [
        "SELECT", "FROM", "WHERE", "VALUE", "TOP", "DISTINCT", "ORDER", "BY", "GROUP", "OFFSET", "LIMIT", "AND", "OR", "NOT",
        "IN", "BETWEEN", "LIKE", "JOIN", "EXISTS", "ARRAY", "UDF", "AS", "ASC", "DESC", "NULL", "TRUE", "FALSE", "UNDEFINED",
        "RANK", "HAVING", "ESCAPE",
    ];

    /// <summary>Characters and short runs that break naive parsers, escaping and routing.</summary>
    public static readonly string[] OddPieces =
    [
        "\0", "\u0001", "\u001f", "\u007f", "\t", "\n", "\r\n", "\u00a0", "\u2028", "\u202e", "\ufeff", "\uffff", "\ud800", "\udc00",
        "\udc00\ud800", "😀", "é", "中文", "ﬀ", "'", "''", "\"", "\\", "\\\\", "\\u", "\\x41", "/", "?", "#", "%", "%2F", "%00", "..", "--",
        "/*", "*/", "@", "$", "{", "}", "[", "]", "(", ")", ",", ":", ";", " ", "  ", "=", "<>", "||", "&&", "null", "undefined",
    ];

    /// <summary>Numbers as JSON writes them, including ones no double holds (1e400) and ones outside JSON's grammar (NaN).</summary>
    public static readonly string[] ValidJsonNumbers =
    [
        "0", "-0", "1", "-1", "1.5", "-2.25", "42", "1e308", "1.7976931348623157e308", "-1.7976931348623157e308", "4.9e-324", "1e-400",
        "1e400", "-1e400", "123456789012345678901234567890123456789", "9007199254740993", "2147483648", "-2147483649", "0.1e1",
        "1E+2", "2147483647", "9223372036854775807", "18446744073709551616", "1" + new string('0', 400),
    ];

    public static readonly string[] InvalidJsonNumbers = ["NaN", "Infinity", "-Infinity", "+1", "01", ".5", "5.", "1e", "0x1F", "--1", "1_000"];

    /// <summary>Escape sequences as they appear inside a JSON string literal, valid or not.</summary>
    public static readonly string[] JsonEscapes =
    [
        "\\n", "\\\"", "\\\\", "\\/", "\\u0000", "\\u0041", "\\ud800", "\\udc00", "\\udc00\\ud800", "\\ud83d\\ude00", "\\uD800x", "\\x41",
        "\\u12", "\\uZZZZ", "\\", "\\a", "\\'",
    ];

    /// <summary><see cref="Gen.Frequency{T}(ValueTuple{int, Gen{T}}[])"/> without the choices whose weight is 0.</summary>
    public static Gen<T> Pick<T>(params (int Weight, Gen<T> Gen)[] choices) => Gen.Frequency([.. choices.Where(c => c.Weight > 0)]);

    public static Gen<string> OddPiece => Gen.Elements(OddPieces);

    public static Gen<int> Size(int max) => Gen.Sized(size => Gen.Choose(0, Math.Max(0, Math.Min(max, size))));

    /// <summary>A word: plain letters, an SQL keyword, an odd piece or a run of them.</summary>
    public static Gen<string> Word =>
        Gen.Frequency(
            (4, Gen.Elements("a", "b", "x", "pk", "id", "n", "s", "arr", "obj", "tenant", "user", "seed-1", "p0", "c", "root", "_rid", "_ts")),
            (2, Gen.Elements(SqlKeywords)),
            (3, OddPiece),
            (1, Gen.Choose(1, 4).SelectMany(n => Gen.ArrayOf(OddPiece, n)).Select(parts => string.Concat(parts))));

    /// <summary>A string of odd pieces, now and then around the 255-character id limit or a kilobyte long.</summary>
    public static Gen<string> Text =>
        Gen.Frequency(
            (16, Size(12).SelectMany(n => Gen.ArrayOf(Word, n)).Select(parts => string.Concat(parts))),
            (1, Gen.Elements(254, 255, 256, 300, 1024).SelectMany(n => Gen.Elements("a", "é", "😀", "\ud800").Select(c => Repeat(c, n)))),
            (2, Gen.Constant(string.Empty)));

    /// <summary>
    /// <see cref="Text"/>, and now and then a run of 4 K or 64 K characters. Only for top-level values:
    /// nested in structures, such sizes multiply and make cases slow without making them harder.
    /// </summary>
    public static Gen<string> LongText =>
        Gen.Frequency(
            (10, Text),
            (1, Gen.Elements(4_096, 65_536).SelectMany(n => Gen.Elements("a", "'", "\\", "(", "é").Select(c => Repeat(c, n)))));

    /// <summary>A JSON string literal: properly escaped, raw, or with hostile escapes.</summary>
    public static Gen<string> JsonString =>
        Gen.Frequency(
            (5, Text.Select(t => JsonLiteral(t, asciiOnly: true))),
            (2, Text.Select(t => "\"" + t.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\"", "\\\"", StringComparison.Ordinal) + "\"")),
            (2, Size(4).SelectMany(n => Gen.ArrayOf(Gen.OneOf(Gen.Elements(JsonEscapes), Word), n)).Select(parts => "\"" + string.Concat(parts).Replace("\"", string.Empty, StringComparison.Ordinal) + "\"")));

    /// <summary>The text as a JSON string literal (an unpaired surrogate becomes a <c>\\ud800</c> escape).</summary>
    public static string JsonSafe(string text) => JsonLiteral(text, asciiOnly: false);

    /// <summary>
    /// A JSON string literal of any text, unpaired surrogates included (as <c>\\uXXXX</c> escapes, which
    /// JSON's grammar allows); with <paramref name="asciiOnly"/> every non-ASCII character is escaped too.
    /// </summary>
    public static string JsonLiteral(string text, bool asciiOnly)
    {
        var builder = new StringBuilder(text.Length + 2).Append('"');
        for (var i = 0; i < text.Length; i++)
        {
            var c = text[i];
            var paired = char.IsHighSurrogate(c) && i + 1 < text.Length && char.IsLowSurrogate(text[i + 1]);
            if (c == '"' || c == '\\')
            {
                builder.Append('\\').Append(c);
            }
            else if (c < ' ' || (asciiOnly && c > '~') || (char.IsSurrogate(c) && !paired && !(char.IsLowSurrogate(c) && i > 0 && char.IsHighSurrogate(text[i - 1]))))
            {
                builder.Append(CultureInfo.InvariantCulture, $"\\u{(int)c:x4}");
            }
            else
            {
                builder.Append(c);
            }
        }

        return builder.Append('"').ToString();
    }

    public static Gen<string> JsonNumber => Gen.Elements(ValidJsonNumbers);

    /// <summary>A syntactically valid JSON value of at most <paramref name="depth"/> levels, with hostile contents.</summary>
    public static Gen<string> JsonValue(int depth)
    {
        var scalar = Gen.Frequency(
            (3, JsonString),
            (3, JsonNumber),
            (1, Gen.Elements("true", "false", "null")));
        if (depth <= 0)
        {
            return scalar;
        }

        var inner = JsonValue(depth - 1);
        var array = Size(5).SelectMany(n => Gen.ArrayOf(inner, n)).Select(items => "[" + string.Join(",", items) + "]");
        var property = from name in Gen.Frequency((4, Gen.Elements("\"a\"", "\"id\"", "\"pk\"", "\"n\"", "\"_rid\"", "\"\"")), (1, JsonString))
                       from value in inner
                       select name + ":" + value;
        // Duplicate names are legal JSON; which one wins is up to the reader.
        var obj = Size(5).SelectMany(n => Gen.ArrayOf(property, n)).Select(items => "{" + string.Join(",", items) + "}");
        return Gen.Frequency((3, scalar), (2, array), (2, obj));
    }

    /// <summary>Brackets nested past any sensible depth: <c>[[[…]]]</c> or <c>{"a":{"a":…}}</c>, closed or not.</summary>
    public static Gen<string> DeepJson =>
        from depth in Gen.Elements(63, 64, 65, 200, 1_000, 100_000)
        from kind in Gen.Choose(0, 2)
        select kind switch
        {
            0 => Repeat("[", depth) + Repeat("]", depth),
            1 => Repeat("{\"a\":", depth) + "1" + Repeat("}", depth),
            _ => Repeat("[", depth),
        };

    /// <summary>JSON text: valid, valid with mutations, deeply nested, or not JSON at all.</summary>
    public static Gen<string> JsonText(Gen<string> valid) =>
        Gen.Frequency(
            (5, valid),
            (5, Mutated(valid)),
            (1, DeepJson),
            (1, Gen.Elements(InvalidJsonNumbers)),
            (1, Gen.Elements(string.Empty, " ", "\ufeff{}", "{}", "[]", "null", "\"\"", "{\"a\":1,}", "[1,]", "{'a':1}", "{a:1}", "/*c*/{}", "{\"a\":1}{\"b\":2}")));

    /// <summary>The text with one to three mutations applied.</summary>
    public static Gen<string> Mutated(Gen<string> valid) =>
        from text in valid
        from count in Gen.Choose(1, 3)
        from seeds in Gen.ArrayOf(Gen.Choose(0, int.MaxValue), count * 3)
        select Mutate(text, seeds);

    public static string Mutate(string text, int[] seeds)
    {
        for (var i = 0; i + 2 < seeds.Length; i += 3)
        {
            var position = text.Length == 0 ? 0 : seeds[i + 1] % (text.Length + 1);
            var token = MutationTokens[seeds[i + 2] % MutationTokens.Length];
            text = (seeds[i] % 7) switch
            {
                0 => text[..position],
                1 => text.Length == 0 ? token : text.Remove(Math.Min(position, text.Length - 1), 1),
                2 => text.Insert(position, token),
                3 => text.Insert(position, text[position..Math.Min(text.Length, position + 1 + (seeds[i + 2] % 16))]),
                4 => text.Length == 0 ? token : text.Remove(Math.Min(position, text.Length - 1), 1).Insert(Math.Min(position, text.Length - 1), token),
                5 => text + token,
                _ => token + text,
            };
        }

        return text;
    }

    private static readonly string[] MutationTokens =
    [
        ",", ":", "{", "}", "[", "]", "\"", "'", "\\", "\\x", "\\u12", "\\ud800", "NaN", "Infinity", "-Infinity", "1e400", "-", "//c\n", "/*",
        "\0", "\ufeff", "\ud800", "😀", "(", ")", " AND ", " OR ", " SELECT ", " FROM ", "@", "*", "null", "true", "\"id\":", "\"pk\":", "[{}]",
    ];

    /// <summary>Random bytes: the body a broken or malicious client sends.</summary>
    public static Gen<byte[]> Bytes =>
        Gen.Frequency(
            (4, Size(64).SelectMany(n => Gen.ArrayOf(Gen.Choose(0, 255).Select(b => (byte)b), n))),
            (1, Gen.Choose(1_000, 20_000).Select(n =>
            {
                var bytes = new byte[n];
                new Random(n).NextBytes(bytes);
                return bytes;
            })));

    /// <summary>A body: JSON text as UTF-8 mostly, random bytes (invalid UTF-8 included) now and then.</summary>
    public static Gen<byte[]> Body(Gen<string> json) =>
        Gen.Frequency((9, JsonText(json).Select(t => Encoding.UTF8.GetBytes(t))), (1, Bytes));

    private static readonly UTF8Encoding StrictUtf8 = new(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);

    /// <summary>False for text with an unpaired surrogate, which no UTF-8 request can carry.</summary>
    public static bool IsValidUtf16(string text)
    {
        try
        {
            StrictUtf8.GetByteCount(text);
            return true;
        }
        catch (EncoderFallbackException)
        {
            return false;
        }
    }

    /// <summary>Text as it can travel in an HTTP header: non-ASCII and control characters as JSON <c>\uXXXX</c> escapes.</summary>
    public static string HeaderSafe(string text)
    {
        var builder = new StringBuilder(text.Length);
        foreach (var c in text)
        {
            if (c is < ' ' or > '~')
            {
                builder.Append(CultureInfo.InvariantCulture, $"\\u{(int)c:x4}");
            }
            else
            {
                builder.Append(c);
            }
        }

        return builder.ToString();
    }

    public static string Repeat(string piece, int count) => new StringBuilder(piece.Length * count).Insert(0, piece, count).ToString();

    public static string Number(int value) => value.ToString(CultureInfo.InvariantCulture);

    /// <summary>
    /// Shrinks text towards a minimal failing input: halves first, then ever smaller chunks removed,
    /// a bounded number of candidates per step so that shrinking a 100 K string stays quick.
    /// </summary>
    public static IEnumerable<string> ShrinkText(string text) => ShrinkItems(text.ToCharArray()).Select(c => new string(c));

    public static IEnumerable<byte[]> ShrinkBytes(byte[] bytes) => ShrinkItems(bytes);

    private static IEnumerable<T[]> ShrinkItems<T>(T[] items)
    {
        if (items.Length == 0)
        {
            yield break;
        }

        yield return [];
        for (var chunk = items.Length / 2; chunk >= 1; chunk /= 2)
        {
            var step = Math.Max(chunk, items.Length / 32);
            for (var start = 0; start + chunk <= items.Length; start += step)
            {
                yield return [.. items[..start], .. items[(start + chunk)..]];
            }
        }
    }
}
