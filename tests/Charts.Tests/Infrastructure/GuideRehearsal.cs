using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using System.Text.RegularExpressions;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>What a rehearsal of a guide ended with: the shell's exit code and output, and the stand-ins' record.</summary>
public sealed record GuideRun(int ExitCode, string Output, string Commands, JsonObject State, string Workspace, string StateDirectory) : IDisposable
{
    /// <summary>
    /// Deletes the rehearsal's workspace: the links into the repository first, so nothing behind them is touched.
    /// REHEARSAL_KEEP=1 keeps it, with the stand-ins' commands.log and state.json, to see what a guide did.
    /// </summary>
    public void Dispose()
    {
        if (!Directory.Exists(Workspace) || Environment.GetEnvironmentVariable("REHEARSAL_KEEP") == "1")
        {
            return;
        }

        foreach (var link in Directory.EnumerateFileSystemEntries(Workspace).Where(e => new FileInfo(e).LinkTarget is not null))
        {
            File.Delete(link);
        }

        Directory.Delete(Path.GetDirectoryName(Workspace)!, recursive: true);
    }

    public string Describe() => $"exit code {ExitCode}\n--- output ---\n{Output}\n--- commands ---\n{Commands}";

    /// <summary>The arguments of each <c>dotnet run --project &lt;project&gt; -- ...</c> the guide ran.</summary>
    public IEnumerable<string[]> DotnetRuns(string project) =>
        (State["dotnet_runs"]?.AsArray() ?? [])
            .Where(r => r!["project"]!.GetValue<string>() == project)
            .Select(r => r!["arguments"]!.AsArray().Select(a => a!.GetValue<string>()).ToArray());
}

/// <summary>
/// Runs the <c>```bash</c> blocks of a deploy guide in order, in one <c>bash</c> under <c>set -euo pipefail</c>,
/// as a reader pasting them into one terminal would, with recording stand-ins (GuideRehearsal/standin.py) for
/// az, kubectl, helm, kind, docker, curl and dotnet first on PATH. The guide runs in a workspace of its own
/// whose folders are links to the repository's, so what it writes (values files, keys) stays there.
/// </summary>
public static partial class GuideRehearsal
{
    private static readonly TimeSpan Timeout = TimeSpan.FromMinutes(8);

    private static readonly string[] Tools = ["az", "kubectl", "helm", "kind", "docker", "curl", "dotnet"];

    private static readonly Lazy<string> Python = new(FindPython);

    /// <summary>The bash blocks of a guide's text, in order.</summary>
    public static IReadOnlyList<string> BashBlocks(string text) =>
        [.. BashBlock().Matches(text).Select(m => m.Groups[1].Value)];

    /// <summary>
    /// Rehearses <paramref name="guide"/> (a file in docs/) with the reader's <paramref name="inputs"/> (the
    /// variables the guide asks for). <paramref name="state"/> carries the stand-ins' world from an earlier
    /// rehearsal (a second run after the first one's clean-up); null starts a new one.
    /// </summary>
    public static GuideRun Run(string guide, IReadOnlyDictionary<string, string> inputs, string? state = null) =>
        RunText(File.ReadAllText(RepositoryLayout.InRepository("docs", guide)), inputs, state);

    /// <summary>Rehearses a guide's text: the tests of the rehearsal itself give it variants with a known mistake.</summary>
    public static GuideRun RunText(string guide, IReadOnlyDictionary<string, string> inputs, string? state = null)
    {
        var workspace = Directory.CreateTempSubdirectory("guide-rehearsal-").FullName;
        state ??= Path.Combine(workspace, "state");
        Directory.CreateDirectory(state);
        var checkout = Directory.CreateDirectory(Path.Combine(workspace, "checkout")).FullName;
        foreach (var entry in Directory.EnumerateFileSystemEntries(RepositoryLayout.Root))
        {
            var name = Path.GetFileName(entry);
            if (name != "artifacts")
            {
                File.CreateSymbolicLink(Path.Combine(checkout, name), entry);
            }
        }

        var bin = Directory.CreateDirectory(Path.Combine(workspace, "bin")).FullName;
        var standin = Path.Combine(AppContext.BaseDirectory, "GuideRehearsal", "standin.py");
        foreach (var tool in Tools)
        {
            var wrapper = Path.Combine(bin, tool);
            File.WriteAllText(wrapper, $"#!/usr/bin/env bash\nexec \"$REHEARSAL_PYTHON\" \"$REHEARSAL_STANDIN\" {tool} \"$@\"\n");
            if (!OperatingSystem.IsWindows())
            {
                File.SetUnixFileMode(wrapper, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
            }
        }

        var script = Path.Combine(workspace, "guide.sh");
        File.WriteAllText(script, Script(guide));
        var environment = new Dictionary<string, string>
        {
            ["PATH"] = $"{bin}{Path.PathSeparator}{Environment.GetEnvironmentVariable("PATH")}",
            ["HOME"] = Directory.CreateDirectory(Path.Combine(workspace, "home")).FullName,
            ["TMPDIR"] = Directory.CreateDirectory(Path.Combine(workspace, "tmp")).FullName,
            ["REHEARSAL_STATE"] = state,
            ["REHEARSAL_PYTHON"] = Python.Value,
            ["REHEARSAL_STANDIN"] = standin,
            ["REHEARSAL_REAL_HELM"] = ExternalTool.Helm,
            ["REHEARSAL_KUBECONFORM"] = ExternalTool.Kubeconform,
            ["REHEARSAL_KUBERNETES_SCHEMAS"] = ExternalTool.KubernetesSchemas,
            ["REHEARSAL_CRD_SCHEMAS"] = Kubeconform.CrdSchemas,
            ["REHEARSAL_CHART"] = Chart.Directory,
            ["REHEARSAL_AZ_OUTPUTS"] = WriteAzureOutputs(workspace),
            ["REHEARSAL_REAL_DOTNET"] = RealDotnet(),
            ["REHEARSAL_LOADDRIVER"] = RepositoryLayout.ProjectAssembly("DroneDelivery.LoadDriver"),
        };
        foreach (var (name, value) in inputs)
        {
            environment[name] = value;
        }

        var result = RunBash(script, checkout, environment);
        var stateFile = Path.Combine(state, "state.json");
        var commands = Path.Combine(state, "commands.log");
        return new GuideRun(
            result.ExitCode,
            result.StandardOutput + result.StandardError,
            File.Exists(commands) ? File.ReadAllText(commands) : string.Empty,
            File.Exists(stateFile) ? JsonNode.Parse(File.ReadAllText(stateFile))!.AsObject() : [],
            checkout,
            state);
    }

    /// <summary>
    /// The guide as one script: strict mode, each block announced (so a failure names its block), and at the end
    /// a check that the guide defines no shell function under the name of a command, which would hide it.
    /// </summary>
    private static string Script(string text)
    {
        var script = new StringBuilder();
        script.AppendLine("set -euo pipefail");
        script.AppendLine("__rehearsal_block=0");
        script.AppendLine("trap 'echo \"rehearsal: bash block $__rehearsal_block of the guide failed at: $BASH_COMMAND\" >&2' ERR");
        foreach (var (block, index) in BashBlocks(text).Select((b, i) => (b, i + 1)))
        {
            script.AppendLine(CultureInfo.InvariantCulture, $"__rehearsal_block={index}");
            script.AppendLine(block);
        }

        script.AppendLine("""
            for __f in $(compgen -A function); do
              if [ "${__f#__}" = "$__f" ] && type -P "$__f" >/dev/null; then
                echo "rehearsal: the guide defines the shell function $__f, which hides the command $(type -P "$__f")" >&2
                exit 97
              fi
            done
            echo "rehearsal: every block ran"
            """);
        return script.ToString();
    }

    /// <summary>
    /// infra/main.bicep's outputs as the stand-in az answers them: every output the template declares (compiled
    /// with the real Bicep CLI), with a value of the right shape; and its parameters, which a deployment may set.
    /// </summary>
    private static string WriteAzureOutputs(string workspace)
    {
        var arm = Bicep.Compile("main.bicep");
        var services = Bicep.Compile("modules/identities.bicep").GetProperty("parameters").GetProperty("services").GetProperty("defaultValue")
            .EnumerateArray().Select(s => s.GetString()!).ToList();
        var outputs = new JsonObject();
        foreach (var output in arm.GetProperty("outputs").EnumerateObject())
        {
            outputs[output.Name] = output.Name switch
            {
                "clientIds" => new JsonObject(services.Select(s => KeyValuePair.Create(s, (JsonNode?)Guid(s)))),
                "aksName" => "dronedlv-aks",
                "registryLoginServer" => "dronedlvacr4b2c1d.azurecr.io",
                "tenantId" => Guid("tenant"),
                "cosmosAccountEndpoint" => "https://dronedlv4b2c1d-cosmos.documents.azure.com:443/",
                "cosmosAccountName" => "dronedlv4b2c1d-cosmos",
                "serviceBusFullyQualifiedNamespace" => "dronedlv4b2c1d-bus.servicebus.windows.net",
                "keyVaultName" => "dronedlvkv4b2c1dx7yz",
                _ when output.Value.GetProperty("type").GetString() == "string" => Guid(output.Name),
                _ => throw new InvalidOperationException($"The rehearsal has no value for main.bicep's output {output.Name}: add one."),
            };
        }

        var document = new JsonObject
        {
            ["outputs"] = outputs,
            ["keyVaultName"] = outputs["keyVaultName"]!.GetValue<string>(),
            ["parameters"] = new JsonArray([.. arm.GetProperty("parameters").EnumerateObject().Select(p => (JsonNode)p.Name)]),
        };
        var file = Path.Combine(workspace, "azure-outputs.json");
        File.WriteAllText(file, document.ToJsonString());
        return file;
    }

    private static string Guid(string name) =>
        new Guid(System.Security.Cryptography.SHA256.HashData(Encoding.UTF8.GetBytes(name)).AsSpan(0, 16)).ToString();

    private static ToolResult RunBash(string script, string workingDirectory, IReadOnlyDictionary<string, string> environment)
    {
        var start = new ProcessStartInfo("bash")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
            WorkingDirectory = workingDirectory,
        };
        start.ArgumentList.Add(script);
        // Only what the reader would have: none of the machine's Azure or load-test settings.
        foreach (var name in start.Environment.Keys.Where(k => k.StartsWith("AZURE_", StringComparison.Ordinal) || k.StartsWith("DRONEDELIVERY_", StringComparison.Ordinal)).ToList())
        {
            start.Environment.Remove(name);
        }

        foreach (var (name, value) in environment)
        {
            start.Environment[name] = value;
        }

        using var process = Process.Start(start) ?? throw new InvalidOperationException("Cannot start bash.");
        process.StandardInput.Close();
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        if (!process.WaitForExit(Timeout))
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"The rehearsal did not finish within {Timeout}: {output.Result}{error.Result}");
        }

        return new ToolResult(process.ExitCode, output.Result, error.Result);
    }

    private static string RealDotnet() =>
        Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } host && File.Exists(host)
            ? host
            : (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(Path.PathSeparator).Select(d => Path.Combine(d, "dotnet")).FirstOrDefault(File.Exists)
              ?? throw new InvalidOperationException("The rehearsal runs the load driver's token command with dotnet, which it cannot find (DOTNET_HOST_PATH, PATH).");

    /// <summary>A python3 that has PyYAML (the stand-ins read the guides' YAML): Debian's, then the one on PATH.</summary>
    private static string FindPython()
    {
        var candidates = new[] { "/usr/bin/python3" }
            .Concat((Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(Path.PathSeparator).Select(d => Path.Combine(d, "python3")))
            .Where(File.Exists)
            .Distinct();
        foreach (var candidate in candidates)
        {
            if (ExternalTool.Run(candidate, ["-c", "import yaml"]).ExitCode == 0)
            {
                return candidate;
            }
        }

        throw new InvalidOperationException(
            "The guide rehearsal's stand-ins need python3 with PyYAML and cannot find one: install Debian's python3-yaml (.ci/setup does).");
    }

    [GeneratedRegex(@"```bash\n(.*?)```", RegexOptions.Singleline)]
    private static partial Regex BashBlock();
}
