using System.Text.Json.Nodes;

namespace DroneDelivery.Docs.Tests;

/// <summary>The checks fail on what they are for: a document with a broken link, an unknown setting or an unknown flag.</summary>
public sealed class ChecksTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("docs-checks-").FullName;

    public ChecksTests()
    {
        Directory.CreateDirectory(Path.Combine(_root, "docs"));
        File.WriteAllText(Path.Combine(_root, "docs", "other.md"), "# Other\n\n## The model decides: the scale, and the CPU budget\n");
    }

    public void Dispose() => Directory.Delete(_root, recursive: true);

    [Fact]
    public void Links_to_files_and_headings_that_exist_pass()
    {
        var document = Doc("""
            # Guide
            See [other](other.md#the-model-decides-the-scale-and-the-cpu-budget), [the folder](../docs/),
            [below](#guide) and [the articles](https://learn.microsoft.com/azure/architecture/performance/backend-services).
            """);

        Assert.Empty(Links(document));
    }

    [Theory]
    [InlineData("[gone](missing.md)", "no such file or folder")]
    [InlineData("[gone](other.md#no-such-heading)", "has the anchor #no-such-heading")]
    [InlineData("[gone](#nowhere)", "no heading of this document has the anchor #nowhere")]
    [InlineData("[outside](../../shared/docs/tuning-scenarios.md)", "leads outside the repository")]
    [InlineData("[absolute](/work/shared/docs/tuning-scenarios.md)", "an absolute path")]
    public void A_broken_link_fails(string link, string problem)
    {
        var problems = Links(Doc($"# Guide\n\nSee {link}.\n"));

        Assert.Contains(problems, p => p.Contains(problem, StringComparison.Ordinal));
    }

    [Fact]
    public void A_link_inside_code_is_not_followed() =>
        Assert.Empty(Links(Doc("# Guide\n\n`[x](missing.md)`\n\n```\n[x](missing.md)\n```\n")));

    [Fact]
    public void A_path_that_moved_fails()
    {
        Directory.CreateDirectory(Path.Combine(_root, "src", "Tools", "Lab"));
        var document = Doc("`src/Tools/Lab`, `src/Lab/Steps/ValuesTree.cs`, `src/Services/<service>/Apis`, `charts/p99.svg`\n");

        Assert.Equal(["docs/guide.md:1: 'src/Lab/Steps/ValuesTree.cs': src/Lab/Steps/ValuesTree.cs does not exist"], PathCheck.Problems(document, _root));
    }

    [Fact]
    public void Settings_of_a_settings_class_or_the_charts_schema_pass()
    {
        var document = Doc("""
            `Processor:PrefetchCount`, `Processor__MaxConcurrentCalls`, `Backends:Delivery:Timeout`, `HttpClient:PooledConnectionLifetime`,
            `workflow.settings.Processor.PrefetchCount=0`, `cosmosDb.containers.<id>.throughput`, `values.yaml`

            ```
            lab run B --set workflow.settings.Processor.PrefetchCount=100
            ```
            """);

        Assert.Empty(SettingKeyCheck.Problems(document, Catalog()));
    }

    [Theory]
    [InlineData("`Http:PooledConnectionLifetime`", "Http:PooledConnectionLifetime")]
    [InlineData("`Processor__PrefetchCounts`", "Processor:PrefetchCounts")]
    [InlineData("`workflow.settings.Processor.Prefetch=3000`", "workflow.settings.Processor.Prefetch")]
    [InlineData("```\nrun B --set workflow.replica=2\n```", "workflow.replica")]
    public void An_unknown_setting_fails(string text, string named)
    {
        var problems = SettingKeyCheck.Problems(Doc(text), Catalog());

        Assert.Contains(problems, p => p.Contains(named, StringComparison.Ordinal));
    }

    [Fact]
    public void The_repository_catalog_knows_the_settings_classes_and_the_schema()
    {
        var catalog = SettingsCatalog.Repository;

        Assert.True(catalog.HasServiceSetting(["HttpClient", "PooledConnectionLifetime"]));
        Assert.True(catalog.HasServiceSetting(["Utilization", "MaxConcurrency"]));
        Assert.False(catalog.HasServiceSetting(["Http", "PooledConnectionLifetime"]));
        Assert.True(catalog.HasChartValue(["serviceBus", "queues", "deliveryrequests", "lockDuration"]));
        Assert.False(catalog.HasChartValue(["serviceBus", "queues", "deliveryrequests", "lockTime"]));
    }

    [Fact]
    public void Commands_that_parse_pass()
    {
        var document = Doc("""
            ```
            dotnet run -c Release --no-build --project src/Tools/Lab -- run B --steps B4 --set workflow.settings.Processor.PrefetchCount=100
            TOKEN=$(dotnet run -c Release --project src/Tools/LoadDriver -- token \
              --signing-key-file key --operator)
            dotnet run --project src/Emulators/CosmosDb -- --port <port> [--host <address>] [--https]
            ```
            `dotnet run --project src/Services/DroneScheduler -- seed --load-only --account-endpoint <endpoint>`
            """);

        Assert.Empty(CommandLineCheck.Problems(document));
    }

    [Theory]
    [InlineData("```\ndotnet run --project src/Tools/LoadDriver -- invoice --targt http://127.0.0.1:5000\n```", "does not parse")]
    [InlineData("```\ndotnet run --project src/Tools/LoadDriver -- invoice \\\n  --completed-stage Created\n```", "does not parse")]
    [InlineData("`dotnet run --project src/Emulators/ServiceBus/Emulator -- --port <port> [--metrics-port <port>]`", "--metrics-port is no option")]
    [InlineData("`dotnet run --project src/Services/DroneScheduler -- sow --owners 2`", "has no command 'sow'")]
    [InlineData("```\ndotnet run --project src/Tools/Lab -- up --step A4 --quik\n```", "does not parse")]
    public void An_unknown_flag_fails(string text, string problem)
    {
        var problems = CommandLineCheck.Problems(Doc(text));

        Assert.Contains(problems, p => p.Contains(problem, StringComparison.Ordinal));
    }

    [Fact]
    public void In_a_document_about_one_program_a_flag_in_inline_code_must_be_its()
    {
        var problems = CommandLineCheck.Problems(MarkdownDocument.Parse(
            "docs/load-driver.md",
            "| `--target URL` | … |\n| `--target-url URL` | … |\n| `token --owner ID --scopes S` | … |\n\nhelm's `--filter name=x` is not the driver's\n"));

        Assert.Equal(
            [
                "docs/load-driver.md:2: '--target-url URL': --target-url is no option of src/Tools/LoadDriver",
                "docs/load-driver.md:3: 'token --owner ID --scopes S': --scopes is no option of src/Tools/LoadDriver",
            ],
            problems);
    }

    [Fact]
    public async Task A_quick_command_that_fails_is_reported()
    {
        var command = CommandLineCheck.Commands(Doc("```\ndotnet run --project src/Tools/LoadDriver -- token --signing-key-file key --owner owner-1 --operator\n```\n")).Single();

        Assert.True(QuickCommands.IsQuick(command));
        Assert.Contains("exited with 1", await QuickCommands.ProblemAsync(command, "here"));
    }

    [Fact]
    public async Task A_quick_command_that_works_passes()
    {
        var command = CommandLineCheck.Commands(Doc("```\ndotnet run --project src/Tools/LoadDriver -- token --signing-key-file key --owner owner-1\n```\n")).Single();

        Assert.Null(await QuickCommands.ProblemAsync(command, "here"));
    }

    private MarkdownDocument Doc(string text) => MarkdownDocument.Parse("docs/guide.md", text);

    private IReadOnlyList<string> Links(MarkdownDocument document) =>
        LinkCheck.Problems(document, _root, path => MarkdownDocument.Parse(path, File.ReadAllText(Path.Combine(_root, path))));

    private static SettingsCatalog Catalog() => SettingsCatalog.Repository;
}
