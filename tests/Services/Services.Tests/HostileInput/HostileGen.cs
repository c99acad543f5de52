using System.Globalization;
using System.Text;
using System.Text.Json;
using FsCheck;
using FsCheck.Fluent;

namespace DroneDelivery.Services.Tests.HostileInput;

/// <summary>
/// Generators of hostile input for the public endpoints: strings that have broken parsers before, random
/// text, JSON of every shape (deep, huge numbers, wrong types, invalid Unicode), bodies that are nearly
/// valid, and Authorization headers from random text to correctly signed tokens with claims of the wrong type.
/// </summary>
internal static class HostileGen
{
    private static readonly string[] Classics =
    [
        "", " ", "null", "undefined", "true", "0", "-1", "-0", "1e309", "-1e309", "NaN", "Infinity", "2147483648", "-2147483649",
        "9223372036854775808", "0x1F", "1,5", "١٢", "2025", "12", "13", "0", "1999", "2101",
        "../../etc/passwd", "..%2f..%2f", "%00", "%", "%%", "%zz", "\0", "a\0b", "\t", "\r\n", "' OR '1'='1", "\"", "\\", "/", "//", "?", "#", "&", "=",
        "<script>alert(1)</script>", "${jndi:ldap://x/a}", "{{7*7}}", "{0}", "%s%s%s",
        "owner-0001", "owner-0002", "owner-0001/../owner-0002", "owner:0001", "a.b.c", "x-1", "d-1", ".", "..",
        "💥", "\uD800", "\uDFFF", "\uFFFF", "\uFEFF", "ＡＢＣ", "İ", "ß", "\u202Eevil",
        new string('a', 64), new string('a', 65), new string('9', 400), new string('x', 5000),
        "2025-13-40T25:61:61Z", "9999-12-31T23:59:59+14:00", "0001-01-01T00:00:00Z", "2025-03-01", "yesterday",
        "47.64,-122.13", "91,0", "-90.0000001,180", "47.64;-122.13", "NaN,NaN", "1e400,0", ",", "47.64,", "Small", "Huge", "FingerPrint", "Retina",
    ];

    /// <summary>Text that breaks parsers: classics, random Unicode, id-like text and long runs.</summary>
    public static Gen<string> Text { get; } = Gen.Frequency(
        (4, Gen.Elements(Classics)),
        (4, ArbMap.Default.GeneratorFor<string>().Select(s => s ?? string.Empty)),
        (2, Gen.Elements("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".ToCharArray()).ArrayOf().Select(chars => new string(chars))),
        (1, Gen.Choose(60, 3000).Select(n => new string('z', n))));

    /// <summary>Printable ASCII only: what an HTTP client may put in a header.</summary>
    public static Gen<string> HeaderText { get; } = Gen.Frequency(
        (3, Gen.Choose(0x20, 0x7E).Select(c => (char)c).ArrayOf().Select(chars => new string(chars))),
        (1, Gen.Elements(Classics).Select(AsciiOnly)));

    /// <summary>A JSON number, including the ones that do not fit any .NET number.</summary>
    public static Gen<string> JsonNumber { get; } = Gen.Frequency(
        (3, ArbMap.Default.GeneratorFor<int>().Select(i => i.ToString(CultureInfo.InvariantCulture))),
        (2, ArbMap.Default.GeneratorFor<NormalFloat>().Select(f => f.Get.ToString("R", CultureInfo.InvariantCulture))),
        (1, Gen.Elements("1e999", "-1e999", "0.000000000000000000000000001", "123456789012345678901234567890", "-0", "0e0", "1E+2", "2.5", "1000.0001", "2025", "12")));

    /// <summary>Any JSON scalar.</summary>
    public static Gen<string> JsonScalar { get; } = Gen.Frequency(
        (1, Gen.Elements("null", "true", "false")),
        (2, JsonNumber),
        (4, Text.Select(Quote)));

    /// <summary>Any JSON value, nested up to <paramref name="depth"/> levels.</summary>
    public static Gen<string> JsonValue(int depth) => depth <= 0
        ? JsonScalar
        : Gen.Frequency(
            (6, JsonScalar),
            (1, Gen.Choose(0, 5).SelectMany(n => JsonValue(depth - 1).ListOf(n)).Select(items => "[" + string.Join(",", items) + "]")),
            (1, Gen.Choose(0, 5).SelectMany(n => Gen.Zip(Text, JsonValue(depth - 1)).ListOf(n)).Select(pairs => "{" + string.Join(",", pairs.Select(p => Quote(p.Item1) + ":" + p.Item2)) + "}")));

    /// <summary>Whole bodies that are not what the endpoint reads: JSON of another shape, broken JSON, deep nesting, not JSON at all.</summary>
    public static Gen<string> Garbage { get; } = Gen.Frequency(
        (3, JsonValue(3)),
        (1, Text),
        (1, Gen.Choose(1, 200).Select(n => new string('[', n) + new string(']', n))),
        (1, Gen.Choose(1, 200).Select(n => string.Concat(Enumerable.Repeat("{\"a\":", n)) + "1" + new string('}', n))),
        (1, Gen.Elements("{", "}", "{\"ownerId\":", "{\"ownerId\":\"o\"", "[1,2", "{'ownerId':'o'}", "{\"ownerId\":\"o\",}", "\u00ef\u00bb\u00bf{}", "{\"a\":1}{\"b\":2}", "nul", "tru")));

    /// <summary>
    /// An object with the given fields, each mostly valid, else hostile, absent or duplicated, sometimes with an
    /// unknown field: every field is hostile in some cases, and enough cases are valid to reach what follows validation.
    /// </summary>
    public static Gen<string> NearlyValidObject(params (string Name, Gen<string> Valid)[] fields) =>
        Gen.CollectToArray(fields.Select(field => Gen.Frequency(
                (16, field.Valid.Select(value => $"\"{field.Name}\":{value}")),
                (3, JsonValue(2).Select(value => $"\"{field.Name}\":{value}")),
                (1, Gen.Constant(string.Empty)),
                (1, Gen.Zip(field.Valid, JsonValue(1)).Select(both => $"\"{field.Name}\":{both.Item1},\"{field.Name}\":{both.Item2}")))))
            .SelectMany(parts => Gen.Frequency(
                (5, Gen.Constant(string.Empty)),
                (1, Gen.Zip(Text, JsonValue(1)).Select(extra => Quote(extra.Item1) + ":" + extra.Item2))),
                (parts, extra) => "{" + string.Join(",", parts.Append(extra).Where(p => p.Length > 0)) + "}");

    public static Gen<string> ValidLocation { get; } = Gen.Zip(Gen.Choose(-89, 89), Gen.Choose(-179, 179))
        .Select(p => Quote($"{p.Item1}.5,{p.Item2}.25"));

    public static Gen<string> ValidTime(int dayOffset) => Gen.Choose(0, 20).Select(h => Quote(new DateTimeOffset(2025, 6, 1 + dayOffset, h, 0, 0, TimeSpan.Zero).ToString("O", CultureInfo.InvariantCulture)));

    public static Gen<string> ValidId { get; } = Gen.Choose(0, 9999).Select(i => Quote($"id-{i}"));

    /// <summary>A delivery request body: mostly nearly valid (so validation is reached), sometimes garbage.</summary>
    public static Gen<string> DeliveryRequestBody(Gen<string> owner) => Gen.Frequency(
        (5, NearlyValidObject(
            ("ownerId", owner),
            ("pickupLocation", ValidLocation),
            ("dropoffLocation", ValidLocation),
            ("pickupTime", ValidTime(0)),
            ("deadline", ValidTime(1)),
            ("expedited", Gen.Elements("true", "false")),
            ("confirmationRequired", Gen.Elements("\"None\"", "\"FingerPrint\"", "\"Picture\"", "\"Voice\"")),
            ("packageInfo", NearlyValidObject(
                ("packageId", ValidId),
                ("size", Gen.Elements("\"Small\"", "\"Medium\"", "\"Large\"")),
                ("weight", Gen.Choose(1, 999).Select(w => w.ToString(CultureInfo.InvariantCulture))),
                ("tag", Text.Select(Quote)))))),
        (1, Garbage));

    /// <summary>A reschedule body: some of the four fields, nearly valid, or garbage.</summary>
    public static Gen<string> RescheduleBody { get; } = Gen.Frequency(
        (5, NearlyValidObject(
            ("pickupLocation", ValidLocation),
            ("dropoffLocation", ValidLocation),
            ("pickupTime", ValidTime(0)),
            ("deadline", ValidTime(1)))),
        (1, Garbage));

    public static Gen<string> ContentType { get; } = Gen.Frequency(
        (12, Gen.Constant("application/json")),
        (1, Gen.Elements("application/json; charset=utf-8", "text/plain", "application/xml", "application/x-www-form-urlencoded", "application/json; charset=utf-16", "multipart/form-data", "")));

    /// <summary>Base64url of arbitrary text.</summary>
    public static string Segment(string text) => Microsoft.IdentityModel.Tokens.Base64UrlEncoder.Encode(Encoding.UTF8.GetBytes(text));

    /// <summary>A JSON string literal of <paramref name="text"/> (lone surrogates kept as escapes: invalid Unicode in valid JSON syntax).</summary>
    public static string Quote(string text) => JsonSerializer.Serialize(text, new JsonSerializerOptions { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping });

    /// <summary>A path segment: the UTF-8 bytes of <paramref name="text"/> percent-encoded (lone surrogates become U+FFFD).</summary>
    public static string PathSegment(string text)
    {
        var builder = new StringBuilder();
        foreach (var b in Encoding.UTF8.GetBytes(text))
        {
            var c = (char)b;
            builder.Append(char.IsAsciiLetterOrDigit(c) || c is '-' or '_' or '.' or '~' ? c : $"%{b:X2}");
        }

        return builder.ToString();
    }

    private static string AsciiOnly(string text) => new([.. text.Where(c => c is >= ' ' and <= '~')]);
}
