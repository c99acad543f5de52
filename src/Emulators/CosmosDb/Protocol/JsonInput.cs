using System.Text.Json;

namespace DroneDelivery.Emulators.CosmosDb.Protocol;

/// <summary>
/// What JSON a client may send beyond what the JSON grammar allows: no object may name a property
/// twice, every string and property name must be valid UTF-16 once unescaped (no unpaired surrogate
/// such as <c>"\ud800"</c>) and every number must fit a double (not <c>1e400</c>). All three are
/// well-formed JSON, but none can be stored, hashed, compared or written back the way Cosmos DB does,
/// so they are refused at the door with a 400 naming them, instead of failing deep inside a request
/// or poisoning stored items.
/// </summary>
internal static class JsonInput
{
    /// <summary>
    /// How every JSON text a client sends is read (bodies, headers, continuations): the reader itself
    /// refuses a property named twice, naming it. Which of two equal names wins is up to each reader,
    /// and an item must mean one thing to all of them.
    /// </summary>
    public static JsonDocumentOptions DocumentOptions { get; } = new() { AllowDuplicateProperties = false };

    /// <summary>Parses client JSON with <see cref="DocumentOptions"/>; a <see cref="JsonException"/> says why it cannot be read.</summary>
    public static JsonDocument Parse(ReadOnlyMemory<byte> json) => Parse(() => JsonDocument.Parse(json, DocumentOptions));

    /// <inheritdoc cref="Parse(ReadOnlyMemory{byte})"/>
    public static JsonDocument Parse(string json) => Parse(() => JsonDocument.Parse(json, DocumentOptions));

    private static JsonDocument Parse(Func<JsonDocument> parse)
    {
        try
        {
            return parse();
        }
        catch (InvalidOperationException e)
        {
            // Comparing names to find one given twice unescapes them, and a name escaping an unpaired
            // surrogate ("\ud800") cannot be: the reader throws this instead of a JsonException.
            throw new JsonException($"a property name is not valid UTF-16 (an unpaired surrogate escape): {e.Message}", e);
        }
    }

    /// <summary>
    /// Why a value read with <see cref="DocumentOptions"/> cannot be accepted (naming the JSON path), or
    /// null when it can.
    /// </summary>
    public static string? Problem(JsonElement element) => Problem(element, "$");

    /// <summary>False when the text has an unpaired surrogate.</summary>
    public static bool IsValidUtf16(ReadOnlySpan<char> text)
    {
        for (var i = 0; i < text.Length; i++)
        {
            if (char.IsHighSurrogate(text[i]) && i + 1 < text.Length && char.IsLowSurrogate(text[i + 1]))
            {
                i++;
            }
            else if (char.IsSurrogate(text[i]))
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>The text with every unpaired surrogate replaced by U+FFFD, so that it can be written into an answer.</summary>
    public static string Printable(string text)
    {
        if (IsValidUtf16(text))
        {
            return text;
        }

        var chars = text.ToCharArray();
        for (var i = 0; i < chars.Length; i++)
        {
            if (char.IsHighSurrogate(chars[i]) && i + 1 < chars.Length && char.IsLowSurrogate(chars[i + 1]))
            {
                i++;
            }
            else if (char.IsSurrogate(chars[i]))
            {
                chars[i] = '\uFFFD';
            }
        }

        return new string(chars);
    }

    // JSON documents are at most 64 levels deep (the reader's default), so the recursion is bounded.
    private static string? Problem(JsonElement element, string path)
    {
        switch (element.ValueKind)
        {
            case JsonValueKind.Object:
                foreach (var property in element.EnumerateObject())
                {
                    string name;
                    try
                    {
                        name = property.Name;
                    }
                    catch (InvalidOperationException)
                    {
                        return $"a property name in {path} is not valid UTF-16 (an unpaired surrogate escape)";
                    }

                    if (Problem(property.Value, $"{path}.{name}") is { } problem)
                    {
                        return problem;
                    }
                }

                return null;
            case JsonValueKind.Array:
                var index = 0;
                foreach (var item in element.EnumerateArray())
                {
                    if (Problem(item, $"{path}[{index++}]") is { } problem)
                    {
                        return problem;
                    }
                }

                return null;
            case JsonValueKind.String:
                try
                {
                    element.GetString();
                    return null;
                }
                catch (InvalidOperationException)
                {
                    return $"the string at {path} is not valid UTF-16 (an unpaired surrogate escape)";
                }

            case JsonValueKind.Number:
                // The reader turns 1e400 into infinity, which JSON cannot write back.
                return element.TryGetDouble(out var number) && double.IsFinite(number)
                    ? null
                    : $"the number {element.GetRawText()} at {path} is outside the range of a double";
            default:
                return null;
        }
    }
}
