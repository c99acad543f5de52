using System.Text.RegularExpressions;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>The metric names a PromQL expression selects.</summary>
public static partial class PromQl
{
    private static readonly HashSet<string> Keywords = new(StringComparer.Ordinal)
    {
        "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan",
    };

    public static IReadOnlySet<string> MetricNames(string expression)
    {
        var text = Strings().Replace(expression, "\"\"");
        text = Variables().Replace(text, " ");
        text = Matchers().Replace(text, " ");
        text = Ranges().Replace(text, " ");
        text = Groupings().Replace(text, " ");
        return Identifiers().Matches(text)
            .Where(m => !IsFunctionCall(text, m) && !Keywords.Contains(m.Value.ToLowerInvariant()))
            .Select(m => m.Value)
            .ToHashSet(StringComparer.Ordinal);
    }

    private static bool IsFunctionCall(string text, Match match)
    {
        var next = match.Index + match.Length;
        while (next < text.Length && char.IsWhiteSpace(text[next]))
        {
            next++;
        }

        return next < text.Length && text[next] == '(' || Keywords.Contains(NextWord(text, next));
    }

    private static string NextWord(string text, int start)
    {
        var end = start;
        while (end < text.Length && (char.IsLetterOrDigit(text[end]) || text[end] == '_'))
        {
            end++;
        }

        return text[start..end];
    }

    [GeneratedRegex("\"(?:[^\"\\\\]|\\\\.)*\"")]
    private static partial Regex Strings();

    [GeneratedRegex(@"\$\{[^}]*\}|\$\w+")]
    private static partial Regex Variables();

    [GeneratedRegex(@"\{[^}]*\}")]
    private static partial Regex Matchers();

    [GeneratedRegex(@"\[[^\]]*\]")]
    private static partial Regex Ranges();

    [GeneratedRegex(@"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")]
    private static partial Regex Groupings();

    [GeneratedRegex(@"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*")]
    private static partial Regex Identifiers();
}
