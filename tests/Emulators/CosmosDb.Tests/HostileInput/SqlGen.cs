using FsCheck;
using FsCheck.Fluent;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// A query as a case: its text, and whether it is certainly a syntax error (a valid query of the
/// supported subset broken on purpose), for which the service answers 400 "Syntax error".
/// </summary>
public sealed record SqlCase(string Text, bool SyntaxError)
{
    public override string ToString() => $"{(SyntaxError ? "syntax error " : string.Empty)}{HostileRequest.Show(Text)}";
}

/// <summary>
/// Cosmos DB SQL text: grammar-based queries (the supported subset and beyond it: JOIN, LIKE,
/// subqueries, unknown functions, keywords where names go), hostile literals (1e999, 0x overflow,
/// odd escapes), mutations (truncation, dropped or doubled tokens, unbalanced quotes and
/// parentheses), nesting deep enough to overflow a recursive parser, and over-long texts.
/// </summary>
internal static class SqlGen
{
    private static readonly string[] Paths =
    [
        "c", "c.pk", "c.n", "c.s", "c.arr", "c.obj", "c.obj.x", "c.obj.y", "c[\"s\"]", "c.arr[0]", "c.arr[2].x", "c.arr[@i]", "c.missing",
        "c.id", "c._ts", "c.value", "c[\"a b\"]", "c.big", "c.deep",
    ];

    private static readonly string[] Functions =
    [
        "IS_DEFINED", "IS_NULL", "IS_BOOL", "IS_NUMBER", "IS_STRING", "IS_ARRAY", "IS_OBJECT", "IS_PRIMITIVE", "STARTSWITH", "ENDSWITH",
        "CONTAINS", "LOWER", "UPPER", "LENGTH", "CONCAT", "SUBSTRING", "INDEX_OF", "TOSTRING", "ABS", "FLOOR", "CEILING", "ROUND",
        "ARRAY_CONTAINS", "ARRAY_LENGTH",
    ];

    private static readonly string[] Aggregates = ["COUNT", "SUM", "MIN", "MAX", "AVG"];

    private static readonly string[] HostileNumbers =
    [
        "1e308", "1.7976931348623157e308", "1e309", "1e999", "-1e999", "1e-400", "0x10", "0x7FFFFFFFFFFFFFFF", "0xFFFFFFFFFFFFFFFF",
        "0xFFFFFFFFFFFFFFFFFFFF", "0x", "0X1g", "99999999999999999999999", ".5", "5.", "1e", "1e+", "00", "2147483648", "-2147483649",
    ];

    private static readonly string[] BinaryOperators = ["+", "-", "*", "/", "%", "||", "=", "!=", "<>", "<", "<=", ">", ">=", "AND", "OR"];

    private static readonly string[] OtherOperators = ["??", "&", "|", "^", "?", ":", "LIKE", "IN", "BETWEEN", "NOT", "~", "!", "==", "=>"];

    /// <summary>Every kind of query text, with the share of syntax-error cases that are certain.</summary>
    public static Gen<SqlCase> Any =>
        HostileGen.Pick(
            (24, Query(supportedOnly: true).Select(t => new SqlCase(t, false))),
            (16, Query(supportedOnly: false).Select(t => new SqlCase(t, false))),
            (16, HostileGen.Mutated(Query(supportedOnly: false)).Select(t => new SqlCase(t, false))),
            (12, CertainSyntaxError),
            (4, Deep.Select(t => new SqlCase(t, false))),
            (1, Gen.Elements(
                "", " ", "--", "SELECT", "SELECT *", "SELECT * FROM", "FROM c", "SELECT * FROM c WHERE", "'", "\"", "@", "(", ")",
                "SELECT * FROM c --", "SELECT * FROM c -- WHERE", "SELECT VALUE 1 FROM c", new string('(', 3), "\0", "SELECT * FROM c\0")
                .Select(t => new SqlCase(t, false))),
            (4, HostileGen.Text.Select(t => new SqlCase(t, false))),
            (1, Gen.Elements(524_287, 524_288, 524_289, 600_000).Select(n => new SqlCase(
                "SELECT * FROM c WHERE c.s = '" + new string('x', Math.Max(0, n - 32)) + "'", false))));

    // A certain syntax error is only certain as generated, so it is not shrunk.
    public static Arbitrary<SqlCase> Arbitrary => Arb.From(Any, Shrink);

    public static IEnumerable<SqlCase> Shrink(SqlCase c) => c.SyntaxError ? [] : HostileGen.ShrinkText(c.Text).Select(t => c with { Text = t });

    /// <summary>A valid query of the supported subset, broken in a way that is a syntax error wherever it lands.</summary>
    public static Gen<SqlCase> CertainSyntaxError =>
        from query in Query(supportedOnly: true, withHostileLiterals: false)
        from breaking in Gen.Elements(0, 1, 2, 3)
        where HostileGen.IsValidUtf16(query)
        select new SqlCase(breaking switch
        {
            0 => query + " )",
            1 => query + " 'unterminated",
            2 => "SELEC" + query[6..],
            _ => query + " FROM",
        }, true);

    /// <summary>Nesting and chains deep enough to overflow a recursive parser or evaluator.</summary>
    public static Gen<string> Deep =>
        from depth in Gen.Elements(10, 100, 255, 256, 257, 1_000, 10_000)
        from kind in Gen.Choose(0, 9)
        select "SELECT VALUE " + kind switch
        {
            0 => HostileGen.Repeat("(", depth) + "1" + HostileGen.Repeat(")", depth),
            1 => HostileGen.Repeat("NOT ", depth) + "true",
            2 => HostileGen.Repeat("-", depth) + "1",
            3 => "1" + HostileGen.Repeat(" + 1", depth),
            4 => HostileGen.Repeat("[", depth) + HostileGen.Repeat("]", depth),
            5 => HostileGen.Repeat("{\"a\": ", depth) + "1" + HostileGen.Repeat("}", depth),
            6 => "c" + HostileGen.Repeat(".a", depth),
            7 => "c" + HostileGen.Repeat("[0]", depth),
            8 => HostileGen.Repeat("ABS(", depth) + "1" + HostileGen.Repeat(")", depth),
            _ => "true" + HostileGen.Repeat(" AND c.n = 1", depth),
        } + " FROM c";

    public static Gen<string> Query(bool supportedOnly, bool withHostileLiterals = true)
    {
        var expression = Expression(3, supportedOnly, withHostileLiterals);
        var item = from e in expression
                   from alias in HostileGen.Pick((3, Gen.Constant(string.Empty)), (1, Gen.Elements(" AS a", " AS b", " x", " AS value", " AS \"q\"")))
                   select e + (supportedOnly && alias.Contains('"', StringComparison.Ordinal) ? string.Empty : alias);
        var aggregate = from name in Gen.Elements(Aggregates) from e in expression select $"{name}({e})";
        var selectClause = HostileGen.Pick(
            (3, Gen.Constant("*")),
            (3, expression.Select(e => "VALUE " + e)),
            (3, Gen.Choose(1, 3).SelectMany(n => Gen.ArrayOf(item, n)).Select(items => string.Join(", ", items))),
            (2, aggregate.Select(a => "VALUE " + a)),
            (1, Gen.Choose(1, 3).SelectMany(n => Gen.ArrayOf(aggregate, n)).Select(a => string.Join(", ", a.Select((x, i) => $"{x} AS a{i}")))));
        var top = HostileGen.Pick((5, Gen.Constant(string.Empty)), (1, Gen.Elements("TOP 1 ", "TOP 0 ", "TOP 5 ", "TOP @n ", "TOP -1 ", "TOP 1e9 ", "TOP 1.5 ", "TOP 'x' ", "TOP 2147483648 ")),
            (withHostileLiterals ? 1 : 0, Gen.Elements("TOP 1e400 ", "TOP 0xFFFFFFFFFFFFFFFFFF ")));
        var fromClause = supportedOnly
            ? Gen.Elements("c", "root r", "c AS d", "items c")
            : Gen.Elements("c", "root r", "c AS d", "c IN c.arr", "c JOIN a IN c.arr", "c.arr", "(SELECT * FROM c) s", "c WHERE", "value", "@p", "1");
        var whereClause = HostileGen.Pick((2, Gen.Constant(string.Empty)), (5, expression.Select(e => " WHERE " + e)));
        var groupBy = HostileGen.Pick((6, Gen.Constant(string.Empty)), (1, expression.Select(e => " GROUP BY " + e)));
        var orderBy = HostileGen.Pick(
            (5, Gen.Constant(string.Empty)),
            (2, from p in Gen.Elements(Paths) from d in Gen.Elements(string.Empty, " ASC", " DESC") select " ORDER BY " + p + d),
            (1, expression.Select(e => " ORDER BY " + e)),
            (1, supportedOnly ? Gen.Elements(" ORDER BY c.n, c.s", " ORDER BY") : Gen.Elements(" ORDER BY c.n, c.s", " ORDER BY RANK c.s", " ORDER BY")));
        var offset = HostileGen.Pick((6, Gen.Constant(string.Empty)), (1, Gen.Elements(" OFFSET 1 LIMIT 2", " OFFSET @n LIMIT @n", " OFFSET -1 LIMIT 1", " OFFSET 2147483647 LIMIT 2147483647", " OFFSET 1", " LIMIT 1")),
            (withHostileLiterals ? 1 : 0, Gen.Elements(" OFFSET 1e400 LIMIT 1", " OFFSET 0x LIMIT 1")));
        return from distinct in HostileGen.Pick((5, Gen.Constant(string.Empty)), (1, Gen.Constant("DISTINCT ")))
               from t in top
               from s in selectClause
               from f in fromClause
               from w in whereClause
               from g in groupBy
               from o in orderBy
               from l in offset
               select $"SELECT {distinct}{t}{s} FROM {f}{w}{g}{o}{l}";
    }

    private static Gen<string> Expression(int depth, bool supportedOnly, bool hostileLiterals)
    {
        var literal = HostileGen.Pick(
            (3, Gen.Elements("0", "1", "-1", "2.5", "42", "1e3", "-0")),
            (hostileLiterals ? 2 : 0, Gen.Elements(HostileNumbers)),
            (3, HostileGen.Text.Select(t => "'" + t.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("'", "\\'", StringComparison.Ordinal) + "'")),
            (hostileLiterals ? 1 : 0, Gen.Elements(HostileGen.JsonEscapes).Select(e => "'" + e.Replace("'", string.Empty, StringComparison.Ordinal) + "'")),
            (1, HostileGen.Text.Select(t => HostileGen.JsonLiteral(t, asciiOnly: true))),
            (2, Gen.Elements("true", "false", "null", "undefined")),
            (2, Gen.Elements("@p0", "@p1", "@n", "@s", "@i", "@arr", "@obj", "@nothing")));
        var leaf = HostileGen.Pick(
            (4, Gen.Elements(Paths)),
            (4, literal),
            (supportedOnly ? 0 : 1, Gen.Elements("d.x", "c.select", "c.FROM", "x", "c..a", "c.", "c[", "c[]", "@", "$", "_")));
        if (depth == 0)
        {
            return leaf;
        }

        var inner = Expression(depth - 1, supportedOnly, hostileLiterals);
        var binary = from l in inner from op in Gen.Elements(BinaryOperators) from r in inner select $"{l} {op} {r}";
        var call = from name in HostileGen.Pick((5, Gen.Elements(Functions)), (1, Gen.Elements(Aggregates)), (supportedOnly ? 0 : 1, Gen.Elements("FOO", "UDF.f", "ST_DISTANCE", "StringToNumber", "lower")))
                   from n in Gen.Choose(0, 4)
                   from args in Gen.ArrayOf(inner, n)
                   select $"{name}({string.Join(", ", args)})";
        var other = HostileGen.Pick(
            (3, inner.Select(e => $"({e})")),
            (2, inner.Select(e => "NOT " + e)),
            (2, inner.Select(e => "- " + e)),
            (2, from v in inner from n in Gen.Choose(0, 4) from items in Gen.ArrayOf(inner, n) select $"{v} {(n % 2 == 0 ? "NOT IN" : "IN")} ({string.Join(", ", items)})"),
            (2, from v in inner from a in inner from b in inner select $"{v} BETWEEN {a} AND {b}"),
            (2, Gen.Choose(0, 3).SelectMany(n => Gen.ArrayOf(inner, n)).Select(items => $"[{string.Join(", ", items)}]")),
            (2, Gen.Choose(0, 3).SelectMany(n => Gen.ArrayOf(inner, n)).Select(items => "{" + string.Join(", ", items.Select((e, i) => $"\"k{i % 2}\": {e}")) + "}")));
        var unsupported = HostileGen.Pick(
            (1, from l in inner from op in Gen.Elements(OtherOperators) from r in inner select $"{l} {op} {r}"),
            (1, inner.Select(e => $"EXISTS(SELECT VALUE {e} FROM c)")),
            (1, inner.Select(e => $"ARRAY(SELECT VALUE {e} FROM c)")),
            (1, inner.Select(e => $"(SELECT VALUE {e})")),
            (1, from k in Gen.Elements(HostileGen.SqlKeywords) from e in inner select $"{e} {k}"),
            (1, from e in inner from w in HostileGen.Word select $"{e}{w}"));
        return HostileGen.Pick((6, leaf), (4, binary), (3, call), (4, other), (supportedOnly ? 0 : 2, unsupported));
    }
}
