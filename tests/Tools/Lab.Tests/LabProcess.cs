using System.Diagnostics;
using System.Text;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The lab as a user runs it: <c>dotnet DroneDelivery.Lab.dll …</c> in its own process, tagged with
/// an environment variable every process it starts inherits, so a test can find any it left behind.
/// A sentinel ends the lab when the test host ends, even when the test host is killed.
/// </summary>
internal sealed class LabProcess : IDisposable
{
    private const string MarkerVariable = "DRONEDELIVERY_LAB_TEST_RUN";
    private readonly Process _process;
    private readonly Process _sentinel;
    private readonly StringBuilder _output = new();
    private readonly string _marker = Guid.NewGuid().ToString("N");

    /// <summary>How long a Ctrl-C'd lab gets to stop its services before it is killed.</summary>
    private static readonly TimeSpan StopGrace = TimeSpan.FromSeconds(60);

    public LabProcess(params string[] arguments)
    {
        // Through env, which restores SIGINT's default action before it becomes the lab: a test host
        // started as a background job of a non-interactive shell (a CI script's `cmd &`) inherits
        // SIGINT ignored, the runtime keeps an inherited "ignore", and Ctrl-C would then do nothing.
        var start = new ProcessStartInfo("env")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("--default-signal=INT");
        start.ArgumentList.Add("dotnet");
        start.ArgumentList.Add(RepositoryLayout.ProjectAssembly("DroneDelivery.Lab"));
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        start.Environment[MarkerVariable] = _marker;
        _process = new Process { StartInfo = start };
        _process.OutputDataReceived += (_, e) => Append(e.Data);
        _process.ErrorDataReceived += (_, e) => Append(e.Data);
        _process.Start();
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        _sentinel = StartSentinel(Environment.ProcessId, _process.Id);
    }

    public int Id => _process.Id;

    /// <summary>The lab's exit code, once it has exited (by itself or stopped by a time-out).</summary>
    public int ExitCode => _process.ExitCode;

    /// <summary>The value of the variable every process the lab starts inherits, to find them (<see cref="Leftovers(string)"/>).</summary>
    public string Marker => _marker;

    public string Output
    {
        get
        {
            lock (_output)
            {
                return _output.ToString();
            }
        }
    }

    /// <summary>Waits for the lab to exit by itself; stops it (and fails) after <paramref name="timeout"/>.</summary>
    public async Task<int> ExitCodeAsync(TimeSpan timeout)
    {
        using var deadline = new CancellationTokenSource(timeout);
        try
        {
            await _process.WaitForExitAsync(deadline.Token);
        }
        catch (OperationCanceledException)
        {
            Stop();
            throw new TimeoutException($"The lab did not finish within {timeout}. Output:{Environment.NewLine}{Output}");
        }

        _process.WaitForExit(); // flushes the redirected output
        return _process.ExitCode;
    }

    /// <summary>Ctrl-C, as a user at a terminal would press it.</summary>
    public void Interrupt()
    {
        using var kill = Process.Start("kill", ["-INT", _process.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]);
        kill.WaitForExit();
    }

    /// <summary>Processes still alive that the lab (or anything it started) started.</summary>
    public IReadOnlyList<string> Leftovers() => Leftovers(_marker);

    /// <summary>
    /// Ends the lab and everything it started. Ctrl-C first, so the lab stops its services itself:
    /// killing the tree at once can miss a replica the lab is starting at that moment, which then
    /// keeps running with no parent. What still carries the run's marker after that is killed.
    /// </summary>
    private void Stop()
    {
        if (!_process.HasExited)
        {
            Interrupt();
            if (!_process.WaitForExit(StopGrace))
            {
                _process.Kill(entireProcessTree: true);
            }
        }

        foreach (var pid in LeftoverIds(_marker))
        {
            try
            {
                using var leftover = Process.GetProcessById(pid);
                leftover.Kill(entireProcessTree: true);
            }
            catch (Exception e) when (e is ArgumentException or InvalidOperationException or System.ComponentModel.Win32Exception)
            {
                // Gone meanwhile.
            }
        }
    }

    /// <summary>Processes still alive that carry <paramref name="marker"/>: a lab and everything it started.</summary>
    public static IReadOnlyList<string> Leftovers(string marker) =>
        [.. LeftoverIds(marker).Select(pid => $"{pid}: {CommandLine(pid)}")];

    /// <summary>
    /// The processes the lab started so far whose environment lacks one of <paramref name="assignments"/> (<c>NAME=value</c>);
    /// the lab itself aside (it sets what its processes inherit), and those gone meanwhile. A process that still
    /// shows the lab's own command line is a child the lab has forked but not yet exec'd: until its exec it
    /// carries the lab's environment, not the one it was given, so it is left aside too (the lab never starts a
    /// copy of itself). On a busy machine that window lasts long enough to be seen.
    /// </summary>
    public IReadOnlyList<string> StartedWithout(IReadOnlyCollection<string> assignments)
    {
        // The command line is read before the environment: once it differs from the lab's, the exec has happened
        // and the environment read next is the process's own.
        var lab = CommandLine(_process.Id);
        return [.. LeftoverIds(_marker)
            .Where(pid => pid != _process.Id)
            .Select(pid => (pid, commandLine: CommandLine(pid)))
            .Where(process => process.commandLine != lab
                && EnvironmentOf(process.pid) is { Length: > 0 } variables && !assignments.All(variables.Contains))
            .Select(process => $"{process.pid}: {process.commandLine}")];
    }

    private static string[] EnvironmentOf(int pid)
    {
        try
        {
            return File.ReadAllText($"/proc/{pid}/environ").Split('\0');
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return [];
        }
    }

    private static string CommandLine(int pid)
    {
        try
        {
            return File.ReadAllText($"/proc/{pid}/cmdline").Replace('\0', ' ');
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return "(gone)";
        }
    }

    private static List<int> LeftoverIds(string marker)
    {
        var found = new List<int>();
        var needle = Encoding.ASCII.GetBytes($"{MarkerVariable}={marker}");
        foreach (var directory in Directory.EnumerateDirectories("/proc"))
        {
            if (!int.TryParse(Path.GetFileName(directory), out var pid) || pid == Environment.ProcessId)
            {
                continue;
            }

            try
            {
                var environment = File.ReadAllBytes(Path.Combine(directory, "environ"));
                if (environment.AsSpan().IndexOf(needle) >= 0)
                {
                    found.Add(pid);
                }
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                // Gone meanwhile, or not ours.
            }
        }

        return found;
    }

    public void Dispose()
    {
        Stop();
        _process.Dispose();
        if (!_sentinel.HasExited)
        {
            _sentinel.Kill();
        }

        _sentinel.Dispose();
    }

    /// <summary>
    /// A shell that polls the test host and the lab once a second and stops the lab (TERM, then KILL)
    /// when the test host is gone; the lab's own watchdogs then stop everything it started. It is a
    /// separate process so that the lab stays a direct child of the test host: a shell's background
    /// job ignores SIGINT, and the tests press Ctrl-C. It does not carry the run's marker, so it is
    /// never counted as a leftover.
    /// </summary>
    private static Process StartSentinel(int testHost, int lab)
    {
        const string script = """
            while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
            if kill -0 "$2" 2>/dev/null; then
              kill -TERM "$2"; i=0
              while kill -0 "$2" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
              kill -KILL "$2" 2>/dev/null
            fi
            """;
        var start = new ProcessStartInfo("/bin/sh") { UseShellExecute = false, RedirectStandardInput = true };
        foreach (var argument in new[] { "-c", script, "lab-test-sentinel", testHost.ToString(System.Globalization.CultureInfo.InvariantCulture), lab.ToString(System.Globalization.CultureInfo.InvariantCulture) })
        {
            start.ArgumentList.Add(argument);
        }

        return Process.Start(start) ?? throw new InvalidOperationException("Cannot start the lab's sentinel.");
    }

    private void Append(string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (_output)
        {
            _output.AppendLine(line);
        }
    }
}
