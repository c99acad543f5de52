using System.Text;
using System.Text.RegularExpressions;

namespace DroneDelivery.Docs.Tests;

/// <summary>A piece of a document and the line it starts on, for messages that point at it.</summary>
public sealed record Located(string Text, int Line);

/// <summary>
/// One Markdown document as the checks read it: its path relative to the repository root (forward slashes), its
/// headings' anchors (as GitHub makes them), its link and image targets outside code, the contents of its inline
/// code spans outside fenced blocks, the inline code that opens a table row (<c>| `--target URL` | …</c>: what the
/// table is about), and the contents of its fenced code blocks; each piece with its line.
/// </summary>
public sealed partial record MarkdownDocument(
    string Path,
    IReadOnlyList<string> Anchors,
    IReadOnlyList<Located> Links,
    IReadOnlyList<Located> CodeSpans,
    IReadOnlyList<Located> FencedBlocks,
    IReadOnlyList<Located> FirstCells)
{
    public static MarkdownDocument Parse(string path, string text)
    {
        var anchors = new List<string>();
        var seen = new Dictionary<string, int>(StringComparer.Ordinal);
        var links = new List<Located>();
        var spans = new List<Located>();
        var blocks = new List<Located>();
        var firstCells = new List<Located>();
        var lines = text.Replace("\r\n", "\n", StringComparison.Ordinal).Split('\n');
        StringBuilder? block = null;
        var blockLine = 0;
        string? fence = null;
        for (var i = 0; i < lines.Length; i++)
        {
            var line = lines[i];
            var trimmed = line.TrimStart();
            if (fence is not null)
            {
                if (trimmed.StartsWith(fence, StringComparison.Ordinal) && trimmed.Trim() == fence)
                {
                    blocks.Add(new Located(block!.ToString(), blockLine));
                    fence = null;
                    block = null;
                }
                else
                {
                    block!.Append(line).Append('\n');
                }

                continue;
            }

            if (Fence().Match(trimmed) is { Success: true } opening)
            {
                fence = opening.Groups[1].Value;
                block = new StringBuilder();
                blockLine = i + 2;
                continue;
            }

            if (Heading().Match(line) is { Success: true } heading)
            {
                var slug = Slug(heading.Groups[1].Value);
                var count = seen.GetValueOrDefault(slug);
                anchors.Add(count == 0 ? slug : $"{slug}-{count}");
                seen[slug] = count + 1;
            }

            if (FirstCell().Match(line) is { Success: true } cell)
            {
                firstCells.Add(new Located(cell.Groups[1].Value, i + 1));
            }

            foreach (Match span in CodeSpan().Matches(line))
            {
                spans.Add(new Located(span.Groups[1].Value, i + 1));
            }

            var prose = CodeSpan().Replace(line, "");
            foreach (Match link in Link().Matches(prose))
            {
                links.Add(new Located(link.Groups[1].Value, i + 1));
            }

            foreach (Match explicitAnchor in HtmlAnchor().Matches(prose))
            {
                anchors.Add(explicitAnchor.Groups[1].Value);
            }
        }

        return new MarkdownDocument(path, anchors, links, spans, blocks, firstCells);
    }

    /// <summary>The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen.</summary>
    public static string Slug(string heading)
    {
        var text = MarkdownLink().Replace(heading.Trim(), "$1").Replace("`", "", StringComparison.Ordinal).Replace("*", "", StringComparison.Ordinal);
        text = NotInSlug().Replace(text.ToLowerInvariant(), "");
        return text.Replace(' ', '-');
    }

    [GeneratedRegex(@"^(`{3,}|~{3,})")]
    private static partial Regex Fence();

    [GeneratedRegex(@"^#{1,6}\s+(.+?)\s*#*\s*$")]
    private static partial Regex Heading();

    [GeneratedRegex(@"^\s*\|\s*`([^`]+)`")]
    private static partial Regex FirstCell();

    [GeneratedRegex(@"`([^`]+)`")]
    private static partial Regex CodeSpan();

    [GeneratedRegex(@"\]\(\s*<?([^)\s>]+)>?(?:\s+""[^""]*"")?\s*\)")]
    private static partial Regex Link();

    [GeneratedRegex(@"<a\s+(?:name|id)=""([^""]+)""")]
    private static partial Regex HtmlAnchor();

    [GeneratedRegex(@"\[([^\]]*)\]\([^)]*\)")]
    private static partial Regex MarkdownLink();

    [GeneratedRegex(@"[^\p{L}\p{Nd} _-]")]
    private static partial Regex NotInSlug();
}
