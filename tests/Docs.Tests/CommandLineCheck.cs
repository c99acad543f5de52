using System.CommandLine;
using System.Text;
using System.Text.RegularExpressions;
using DroneDelivery.LoadDriver.Cli;

namespace DroneDelivery.Docs.Tests;

/// <summary>A program of this repository as the docs run it: <c>dotnet run --project &lt;folder&gt; -- …</c>.</summary>
public sealed record DocumentedProgram(string Folder, string Assembly, Func<Command> CommandLine, string? Verb = null);

/// <summary>One command a document shows, with the arguments after <c>--</c>.</summary>
public sealed record DocumentedCommand(DocumentedProgram Program, IReadOnlyList<string> Arguments, int Line, bool InCodeBlock)
{
    /// <summary>A synopsis (<c>&lt;port&gt;</c>, <c>[--host …]</c>, <c>$VALUE</c>) names flags; a concrete command parses whole.</summary>
    public bool IsSynopsis => Arguments.Any(a => a.IndexOfAny(['<', '>', '[', ']', '|', '$', '…']) >= 0 || a.Contains("...", StringComparison.Ordinal));

    public override string ToString() => $"dotnet run --project {Program.Folder} -- {string.Join(' ', Arguments)}";
}

/// <summary>
/// Every command line a document shows parses with the program's own System.CommandLine parser: a concrete command
/// without errors, a synopsis with every flag it names known. In a document about one program, a table row that opens
/// with a flag (<c>| `--target URL` |</c>) or one of the program's commands (<c>| `soak --step B5 …` |</c>) names
/// only that program's flags.
/// </summary>
public static partial class CommandLineCheck
{
    private static readonly CliConsole Quiet = new(TextWriter.Null, TextWriter.Null, IsTerminal: false);

    public static IReadOnlyList<DocumentedProgram> Programs { get; } =
    [
        new("src/Tools/Lab", "DroneDelivery.Lab", DroneDelivery.Lab.LabCommands.Root),
        new("src/Tools/LoadDriver", "DroneDelivery.LoadDriver", () => LoadDriverCommand.Build(Quiet)),
        new("src/Services/DroneScheduler", "DroneDelivery.DroneScheduler", () => DroneDelivery.DroneScheduler.Seeding.SeedCommand.Build(TextWriter.Null, TextWriter.Null), Verb: "seed"),
        new("src/Emulators/CosmosDb", "DroneDelivery.Emulators.CosmosDb", DroneDelivery.Emulators.CosmosDb.CommandLine.Build),
        new("src/Emulators/ServiceBus/Emulator", "DroneDelivery.Emulators.ServiceBus", DroneDelivery.Emulators.ServiceBus.CommandLine.Build),
        new("tests/Benchmarks/CosmosDb", "DroneDelivery.Benchmarks.CosmosDb", DroneDelivery.Benchmarks.CosmosDb.BenchmarkCommand.Build),
        new("tests/Benchmarks/GatewayAuth", "DroneDelivery.Benchmarks.GatewayAuth", DroneDelivery.Benchmarks.GatewayAuth.Settings.Command),
        new("tests/Benchmarks/ServiceBus", "DroneDelivery.Benchmarks.ServiceBus", DroneDelivery.Benchmarks.ServiceBus.BenchmarkCommand.Build),
    ];

    /// <summary>The program whose flags a document about one program names in its inline code.</summary>
    public static IReadOnlyDictionary<string, DocumentedProgram> DocumentFor { get; } = new Dictionary<string, DocumentedProgram>(StringComparer.Ordinal)
    {
        ["docs/lab.md"] = Programs[0],
        ["docs/load-driver.md"] = Programs[1],
        ["docs/emulators/cosmos-db.md"] = Programs[3],
        ["docs/emulators/service-bus.md"] = Programs[4],
    };

    public static IReadOnlyList<string> Problems(MarkdownDocument document)
    {
        var problems = new List<string>();
        foreach (var command in Commands(document))
        {
            var (root, arguments) = Root(command);
            if (root is null)
            {
                problems.Add($"{document.Path}:{command.Line}: '{command}': the program has no command '{command.Arguments.FirstOrDefault()}'");
                continue;
            }

            if (command.IsSynopsis)
            {
                var known = Flags(root);
                problems.AddRange(FlagsNamed(string.Join(' ', arguments))
                    .Where(flag => !known.Contains(flag))
                    .Select(flag => $"{document.Path}:{command.Line}: '{command}': {flag} is no option of {command.Program.Folder}"));
            }
            else if (root.Parse(arguments.ToArray()) is { Errors.Count: > 0 } parse)
            {
                problems.Add($"{document.Path}:{command.Line}: '{command}' does not parse: {string.Join(" ", parse.Errors.Select(e => e.Message))}");
            }
        }

        if (DocumentFor.TryGetValue(document.Path, out var program))
        {
            var root = program.CommandLine();
            var known = Flags(root);
            var verbs = root.Subcommands.Select(c => c.Name).ToHashSet(StringComparer.Ordinal);
            foreach (var span in document.FirstCells.Where(s => s.Text.StartsWith('-') || verbs.Contains(s.Text.Split(' ')[0])))
            {
                problems.AddRange(FlagsNamed(span.Text)
                    .Where(flag => !known.Contains(flag))
                    .Select(flag => $"{document.Path}:{span.Line}: '{span.Text}': {flag} is no option of {program.Folder}"));
            }
        }

        return problems;
    }

    /// <summary>The commands a document shows, in code blocks (continuation lines joined) and in inline code.</summary>
    public static IEnumerable<DocumentedCommand> Commands(MarkdownDocument document)
    {
        foreach (var block in document.FencedBlocks)
        {
            // A line continued with a backslash is one command; it is reported at the line it starts on.
            var line = block.Line;
            var continued = new StringBuilder();
            var start = line;
            foreach (var text in block.Text.Split('\n'))
            {
                continued.Append(text.TrimEnd('\\')).Append(' ');
                if (!text.EndsWith('\\'))
                {
                    foreach (var command in Parse(continued.ToString(), start, inCodeBlock: true))
                    {
                        yield return command;
                    }

                    continued.Clear();
                    start = line + 1;
                }

                line++;
            }
        }

        foreach (var span in document.CodeSpans)
        {
            foreach (var command in Parse(span.Text, span.Line, inCodeBlock: false))
            {
                yield return command;
            }
        }
    }

    private static IEnumerable<DocumentedCommand> Parse(string text, int line, bool inCodeBlock)
    {
        foreach (Match run in DotnetRun().Matches(text))
        {
            var folder = run.Groups["project"].Value.TrimEnd('/');
            var program = Programs.FirstOrDefault(p => p.Folder == folder);
            if (program is null)
            {
                continue;
            }

            var arguments = new List<string>();
            foreach (var token in Tokens(run.Groups["arguments"].Value))
            {
                if (token is ">" or ">>" or "|" or "||" or "&&" or ";" or "&" or "2>" or "2>&1" || token.StartsWith('#') || token.StartsWith('>'))
                {
                    break;
                }

                var closing = token.EndsWith(')') && run.Index >= 2 && text[..run.Index].EndsWith("$(", StringComparison.Ordinal);
                arguments.Add(closing ? token[..^1] : token);
                if (closing)
                {
                    break;
                }
            }

            arguments.RemoveAll(a => a.Length == 0);
            yield return new DocumentedCommand(program, arguments, line, inCodeBlock);
        }
    }

    /// <summary>The command that parses the arguments (the program's, or its verb's), and the arguments it parses.</summary>
    public static (Command? Root, IReadOnlyList<string> Arguments) Root(DocumentedCommand command)
    {
        var arguments = command.Arguments;
        if (command.Program.Verb is { } verb)
        {
            if (arguments.FirstOrDefault() != verb)
            {
                return (null, arguments);
            }

            arguments = arguments.Skip(1).ToList();
        }

        return (command.Program.CommandLine(), arguments);
    }

    /// <summary>Every option name and alias of a command and its subcommands, with the help and version options.</summary>
    public static IReadOnlySet<string> Flags(Command command)
    {
        var flags = new HashSet<string>(StringComparer.Ordinal) { "--help", "-h", "-?", "--version" };
        var pending = new Stack<Command>([command]);
        while (pending.TryPop(out var next))
        {
            foreach (var option in next.Options)
            {
                flags.Add(option.Name);
                flags.UnionWith(option.Aliases);
            }

            foreach (var sub in next.Subcommands)
            {
                pending.Push(sub);
            }
        }

        return flags;
    }

    private static IEnumerable<string> FlagsNamed(string text) => Flag().Matches(text).Select(m => m.Groups[1].Value);

    /// <summary>Whitespace-separated words, with single- and double-quoted text kept together (quotes removed).</summary>
    private static IEnumerable<string> Tokens(string text)
    {
        var token = new StringBuilder();
        char? quote = null;
        foreach (var c in text)
        {
            if (quote is not null)
            {
                if (c == quote)
                {
                    quote = null;
                }
                else
                {
                    token.Append(c);
                }
            }
            else if (c is '\'' or '"')
            {
                quote = c;
            }
            else if (char.IsWhiteSpace(c))
            {
                if (token.Length > 0)
                {
                    yield return token.ToString();
                    token.Clear();
                }
            }
            else
            {
                token.Append(c);
            }
        }

        if (token.Length > 0)
        {
            yield return token.ToString();
        }
    }

    [GeneratedRegex(@"dotnet run\b[^\n]*?--project\s+(?<project>\S+)[^\n]*?\s--(?:\s+(?<arguments>[^\n]*))?")]
    private static partial Regex DotnetRun();

    [GeneratedRegex(@"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z?])(?![\w-])")]
    private static partial Regex Flag();
}
