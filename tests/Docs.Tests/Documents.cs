using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Docs.Tests;

/// <summary>Every Markdown document of the repository: the README, the guides and the READMEs beside the files they describe.</summary>
public static class Documents
{
    private static readonly HashSet<string> Skipped = new(StringComparer.Ordinal) { ".git", "artifacts", "node_modules", "bin", "obj", "TestResults" };

    /// <summary>Paths relative to the repository root, with forward slashes.</summary>
    public static IReadOnlyList<string> All { get; } = Find(RepositoryLayout.Root).Order(StringComparer.Ordinal).ToList();

    public static MarkdownDocument Load(string relativePath) =>
        MarkdownDocument.Parse(relativePath, File.ReadAllText(RepositoryLayout.InRepository(relativePath.Split('/'))));

    public static TheoryData<string> Each()
    {
        var data = new TheoryData<string>();
        foreach (var path in All)
        {
            data.Add(path);
        }

        return data;
    }

    private static IEnumerable<string> Find(string root)
    {
        var pending = new Stack<string>([root]);
        while (pending.TryPop(out var directory))
        {
            foreach (var file in Directory.EnumerateFiles(directory, "*.md"))
            {
                yield return Path.GetRelativePath(root, file).Replace('\\', '/');
            }

            foreach (var child in Directory.EnumerateDirectories(directory).Where(d => !Skipped.Contains(Path.GetFileName(d))))
            {
                pending.Push(child);
            }
        }
    }
}
