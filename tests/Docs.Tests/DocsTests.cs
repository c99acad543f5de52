using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Docs.Tests;

/// <summary>Every document of the repository, checked against the repository and the code.</summary>
public sealed class DocsTests
{
    public static TheoryData<string> EachDocument => Documents.Each();

    [Fact]
    public void The_guides_are_found() =>
        Assert.Superset(new HashSet<string> { "README.md", "docs/lab.md", "docs/case-studies.md", "k8s/README.md" }, Documents.All.ToHashSet());

    [Theory]
    [MemberData(nameof(EachDocument))]
    public void Every_relative_link_and_anchor_resolves(string path) =>
        AssertNone(LinkCheck.Problems(Documents.Load(path), RepositoryLayout.Root, Documents.Load));

    [Theory]
    [MemberData(nameof(EachDocument))]
    public void Every_repository_path_named_exists(string path) =>
        AssertNone(PathCheck.Problems(Documents.Load(path), RepositoryLayout.Root));

    [Theory]
    [MemberData(nameof(EachDocument))]
    public void Every_setting_named_exists(string path) =>
        AssertNone(SettingKeyCheck.Problems(Documents.Load(path), SettingsCatalog.Repository));

    [Theory]
    [MemberData(nameof(EachDocument))]
    public void Every_command_line_parses_with_its_programs_parser(string path) =>
        AssertNone(CommandLineCheck.Problems(Documents.Load(path)));

    [Theory]
    [MemberData(nameof(EachDocument))]
    public async Task Every_quick_command_of_a_code_block_runs(string path)
    {
        var problems = new List<string>();
        foreach (var command in CommandLineCheck.Commands(Documents.Load(path)).Where(QuickCommands.IsQuick))
        {
            if (await QuickCommands.ProblemAsync(command, $"{path}:{command.Line}") is { } problem)
            {
                problems.Add(problem);
            }
        }

        AssertNone(problems);
    }

    [Fact]
    public void The_docs_show_quick_commands_to_run() =>
        Assert.Contains(Documents.All.SelectMany(p => CommandLineCheck.Commands(Documents.Load(p))), QuickCommands.IsQuick);

    private static void AssertNone(IReadOnlyList<string> problems)
    {
        Assert.True(problems.Count == 0, string.Join(Environment.NewLine, problems));
    }
}
