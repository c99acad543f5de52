using System.Text.RegularExpressions;

namespace DroneDelivery.Docs.Tests;

/// <summary>
/// A path of the repository a document names in inline code (<c>src/Tools/Lab/Steps/ValuesTree.cs</c>) exists. Paths
/// with a placeholder (<c>&lt;id&gt;</c>, <c>*</c>, <c>…</c>) are patterns, and <c>charts/</c> also names a lab report's
/// own folder, so neither is checked.
/// </summary>
public static partial class PathCheck
{
    public static IReadOnlyList<string> Problems(MarkdownDocument document, string repositoryRoot) =>
        document.CodeSpans
            .Select(span => (span, path: RepositoryPath().Match(span.Text.Trim())))
            .Where(x => x.path.Success)
            .Select(x => (x.span, path: x.path.Groups["path"].Value.TrimEnd('.', ',', ';', ')')))
            .Where(x => !File.Exists(Path.Combine(repositoryRoot, x.path)) && !Directory.Exists(Path.Combine(repositoryRoot, x.path)))
            .Select(x => $"{document.Path}:{x.span.Line}: '{x.span.Text}': {x.path} does not exist")
            .ToList();

    [GeneratedRegex(@"^(?<path>(?:src|tests|docs|k8s|infra|loadtests|\.ci)/[A-Za-z0-9_./-]*)(?::\d+)?$")]
    private static partial Regex RepositoryPath();
}
