using DroneDelivery.LocalSystem;

namespace DroneDelivery.Charts.Tests;

/// <summary>What the deploy guides say about what CI does not check stays true.</summary>
public sealed class DeployGuideTests
{
    [Fact]
    public void The_AKS_guide_lists_the_registry_build_with_the_classic_builder_as_not_checked()
    {
        var text = File.ReadAllText(RepositoryLayout.InRepository("docs", "deploy-aks.md"));

        var section = Section(text, "## What is checked without Azure");
        var notChecked = section[section.IndexOf("Not checked:", StringComparison.Ordinal)..];
        Assert.Contains("`az acr build`", notChecked, StringComparison.Ordinal);
        Assert.Contains("classic builder", notChecked, StringComparison.Ordinal);
    }

    private static string Section(string text, string heading)
    {
        var start = text.IndexOf(heading, StringComparison.Ordinal);
        Assert.True(start >= 0, $"no section '{heading}'");
        var end = text.IndexOf("\n## ", start + heading.Length, StringComparison.Ordinal);
        return end < 0 ? text[start..] : text[start..end];
    }
}
