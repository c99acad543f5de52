using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>What the deploy guides say stays true: what CI does not check, and the files they name.</summary>
public sealed partial class DeployGuideTests
{
    [Fact]
    public void The_AKS_guide_lists_the_registry_build_with_the_classic_builder_as_not_checked()
    {
        var text = File.ReadAllText(RepositoryLayout.InRepository("docs", "deploy-aks.md"));

        var section = Section(text, "## What could not be tried here");
        var notChecked = section[section.IndexOf("Not tried, and why:", StringComparison.Ordinal)..];
        Assert.Contains("`az acr build`", notChecked, StringComparison.Ordinal);
        Assert.Contains("classic builder", notChecked, StringComparison.Ordinal);
    }

    public static TheoryData<string> DeployDocuments => new(
        "docs/deploy-kind.md", "docs/deploy-aks.md", "docs/configuration.md", "k8s/README.md", "infra/README.md", "loadtests/AzureLoadTesting/README.md");

    [Theory]
    [MemberData(nameof(DeployDocuments))]
    public void A_deploy_document_names_only_files_of_the_repository(string document)
    {
        // A reader of a checkout has the repository and nothing else: a path outside it, or to a file it
        // no longer has, leaves them stuck. steps/<step>.yaml is the chart's folder, as the guides say.
        var text = File.ReadAllText(RepositoryLayout.InRepository(document.Split('/')));
        var folder = Path.GetDirectoryName(RepositoryLayout.InRepository(document.Split('/')))!;
        var named = FilePath().Matches(text).Select(m => m.Groups["code"].Success ? m.Groups["code"].Value : m.Groups["link"].Value)
            .Where(p => !p.Contains('<', StringComparison.Ordinal) && !p.Contains('*', StringComparison.Ordinal) && !p.Contains('$', StringComparison.Ordinal))
            .Distinct(StringComparer.Ordinal)
            .ToList();

        Assert.NotEmpty(named);
        foreach (var path in named)
        {
            Assert.False(Path.IsPathRooted(path), $"{document} points outside the repository: {path}");
            if (path.Contains('/', StringComparison.Ordinal))
            {
                Assert.True(
                    new[] { RepositoryLayout.Root, folder, Chart.Directory }.Any(root => File.Exists(Path.Combine(root, path)) || Directory.Exists(Path.Combine(root, path))),
                    $"{document} names {path}, which the repository does not have");
            }
        }
    }

    private static string Section(string text, string heading)
    {
        var start = text.IndexOf(heading, StringComparison.Ordinal);
        Assert.True(start >= 0, $"no section '{heading}'");
        var end = text.IndexOf("\n## ", start + heading.Length, StringComparison.Ordinal);
        return end < 0 ? text[start..] : text[start..end];
    }

    /// <summary>A file path in backticks or a link target: something with a file name extension the repository uses.</summary>
    [GeneratedRegex(@"`(?<code>[^`\s]+\.(md|ya?ml|json|sh|bicep|bicepparam|py|cs|csproj))`|\]\((?<link>[^)\s#:]+\.(md|ya?ml|json|sh|bicep|py))[)#]")]
    private static partial Regex FilePath();
}
