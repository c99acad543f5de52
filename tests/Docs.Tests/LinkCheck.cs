namespace DroneDelivery.Docs.Tests;

/// <summary>
/// A document's links stay inside the repository and resolve: a relative path to a file or folder that exists,
/// and an anchor to a heading of the document it names. Web links (http, https, mailto) are not followed.
/// </summary>
public static class LinkCheck
{
    public static IReadOnlyList<string> Problems(MarkdownDocument document, string repositoryRoot, Func<string, MarkdownDocument> load)
    {
        var problems = new List<string>();
        var directory = Path.GetDirectoryName(Path.Combine(repositoryRoot, document.Path))!;
        foreach (var link in document.Links)
        {
            var target = link.Text;
            if (target.StartsWith("http://", StringComparison.Ordinal) || target.StartsWith("https://", StringComparison.Ordinal) || target.StartsWith("mailto:", StringComparison.Ordinal))
            {
                continue;
            }

            var hash = target.IndexOf('#', StringComparison.Ordinal);
            var path = hash < 0 ? target : target[..hash];
            var anchor = hash < 0 ? null : target[(hash + 1)..];
            var where = $"{document.Path}:{link.Line}: '{target}'";
            if (path.Length == 0)
            {
                if (!document.Anchors.Contains(anchor!, StringComparer.Ordinal))
                {
                    problems.Add($"{where}: no heading of this document has the anchor #{anchor}");
                }

                continue;
            }

            if (path.StartsWith('/') || path.Contains("://", StringComparison.Ordinal))
            {
                problems.Add($"{where}: an absolute path; link inside the repository with a relative one");
                continue;
            }

            var full = Path.GetFullPath(Path.Combine(directory, Uri.UnescapeDataString(path)));
            var root = Path.GetFullPath(repositoryRoot).TrimEnd(Path.DirectorySeparatorChar) + Path.DirectorySeparatorChar;
            if (!full.StartsWith(root, StringComparison.Ordinal) && full + Path.DirectorySeparatorChar != root)
            {
                problems.Add($"{where}: leads outside the repository");
                continue;
            }

            if (!File.Exists(full) && !Directory.Exists(full))
            {
                problems.Add($"{where}: no such file or folder");
                continue;
            }

            if (anchor is not null && full.EndsWith(".md", StringComparison.Ordinal) &&
                !load(Path.GetRelativePath(repositoryRoot, full).Replace('\\', '/')).Anchors.Contains(anchor, StringComparer.Ordinal))
            {
                problems.Add($"{where}: no heading of {Path.GetRelativePath(repositoryRoot, full)} has the anchor #{anchor}");
            }
        }

        return problems;
    }
}
