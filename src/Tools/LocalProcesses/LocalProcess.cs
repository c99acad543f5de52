using System.Diagnostics;
using System.Runtime.InteropServices;

namespace DroneDelivery.LocalProcesses;

/// <summary>What to run as a local process and how to tell it is ready.</summary>
public sealed record LocalProcessSpec
{
    /// <summary>A short name for logs and errors, e.g. <c>gateway-1</c>.</summary>
    public required string Name { get; init; }

    public required string FileName { get; init; }

    public IReadOnlyList<string> Arguments { get; init; } = [];

    /// <summary>Extra environment variables; a null value removes the variable.</summary>
    public IReadOnlyDictionary<string, string?> Environment { get; init; } = new Dictionary<string, string?>();

    public string? WorkingDirectory { get; init; }

    /// <summary>Recognises the output line that says the process is ready; null means ready once started.</summary>
    public Func<string, bool>? IsReadyLine { get; init; }

    public TimeSpan ReadyTimeout { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>When set, every output line is also appended to this file.</summary>
    public string? LogFile { get; init; }

    /// <summary>A process running the built entry assembly of one of this repository's projects.</summary>
    public static LocalProcessSpec ForProject(string name, string projectName, params IEnumerable<string> arguments)
    {
        var assembly = RepositoryLayout.ProjectAssembly(projectName);
        if (!File.Exists(assembly))
        {
            throw new FileNotFoundException(
                $"'{assembly}' does not exist. Build the solution first (dotnet build DroneDelivery.sln).", assembly);
        }

        return new LocalProcessSpec { Name = name, FileName = "dotnet", Arguments = [assembly, .. arguments] };
    }
}

/// <summary>
/// A child process that cannot outlive its parent. It runs under a small POSIX shell watchdog that
/// stops it when this process disappears (even on SIGKILL, where no cleanup code of ours runs) and
/// that turns a stop request into SIGTERM, then SIGKILL after a grace period. Output lines are kept
/// for diagnostics and readiness is recognised from a line the program prints.
/// </summary>
public sealed class LocalProcess : IAsyncDisposable
{
    private const string ChildPidMarker = "__local_process_child_pid__=";
    private const int RecentLineCapacity = 200;
    private const int SigTerm = 15;
    private const int SigKill = 9;

    // $1 = parent pid, rest = the command. The command runs in its own session (setsid) so that
    // stopping it also stops anything it started. The script prints the command's pid, relays
    // TERM/INT/HUP to its process group, polls the parent once a second and exits with the
    // command's status. The poll's sleep is killed on the way out so that none outlives the script.
    // The trap is set before the command starts, so that no stop can end the shell by the signal's
    // default action and leave the command running with no one to stop it (and its output pipe open,
    // so that the parent's wait for the shell's exit would never end). A stop before the command
    // starts ends the script without starting it; one just after finds it in $!.
    internal const string WatchdogScript = """
        parent=$1; shift
        child=
        sleeper=
        stop() {
          [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null
          [ -n "$child" ] || child=$!
          [ -n "$child" ] || exit 143
          kill -TERM "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
          i=0
          while kill -0 "$child" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
          kill -KILL "-$child" 2>/dev/null
        }
        trap stop TERM INT HUP
        setsid "$@" &
        child=$!
        echo "__local_process_child_pid__=$child" >&2
        while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1 >/dev/null 2>&1 & sleeper=$!; wait $sleeper; done
        kill -0 "$child" 2>/dev/null && stop
        wait "$child"
        status=$?
        kill -KILL "-$child" 2>/dev/null
        exit $status
        """;

    private readonly Process _watchdog;
    private readonly LocalProcessSpec _spec;
    private readonly Queue<string> _recent = new();
    private readonly TaskCompletionSource<int> _childPid = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource<int> _exited = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly StreamWriter? _log;
    private readonly Lock _sync = new();
    private int _disposed;

    private LocalProcess(LocalProcessSpec spec, Process watchdog, StreamWriter? log)
    {
        _spec = spec;
        _watchdog = watchdog;
        _log = log;
    }

    public string Name => _spec.Name;

    /// <summary>The pid of the program itself (not of its watchdog).</summary>
    public int ProcessId => _childPid.Task.IsCompletedSuccessfully ? _childPid.Task.Result : -1;

    /// <summary>Completes with the exit code when the program has exited.</summary>
    public Task<int> Exited => _exited.Task;

    /// <summary>Raised for every output line (stdout and stderr), on a background thread.</summary>
    public event Action<string>? OutputLine;

    /// <summary>The last lines the program printed, oldest first.</summary>
    public IReadOnlyList<string> RecentOutput
    {
        get
        {
            lock (_sync)
            {
                return [.. _recent];
            }
        }
    }

    /// <summary>Starts the program and waits until it prints its ready line.</summary>
    /// <exception cref="InvalidOperationException">It exited or did not become ready in time; the message holds its last output.</exception>
    public static async Task<LocalProcess> StartAsync(LocalProcessSpec spec, CancellationToken cancellationToken = default)
    {
        var startInfo = new ProcessStartInfo("/bin/sh")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
            WorkingDirectory = spec.WorkingDirectory ?? Directory.GetCurrentDirectory(),
        };
        startInfo.ArgumentList.Add("-c");
        startInfo.ArgumentList.Add(WatchdogScript);
        startInfo.ArgumentList.Add("local-process-watchdog");
        startInfo.ArgumentList.Add(System.Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture));
        startInfo.ArgumentList.Add(spec.FileName);
        foreach (var argument in spec.Arguments)
        {
            startInfo.ArgumentList.Add(argument);
        }

        foreach (var (key, value) in spec.Environment)
        {
            if (value is null)
            {
                startInfo.Environment.Remove(key);
            }
            else
            {
                startInfo.Environment[key] = value;
            }
        }

        StreamWriter? log = null;
        if (spec.LogFile is not null)
        {
            Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(spec.LogFile))!);
            log = new StreamWriter(spec.LogFile, append: true) { AutoFlush = true };
        }

        var process = new Process { StartInfo = startInfo, EnableRaisingEvents = true };
        var local = new LocalProcess(spec, process, log);
        process.OutputDataReceived += (_, e) => local.OnLine(e.Data);
        process.ErrorDataReceived += (_, e) => local.OnLine(e.Data);
        process.Exited += (_, _) => local.OnExited();
        process.Start();
        process.StandardInput.Close();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        if (spec.IsReadyLine is null)
        {
            local._ready.TrySetResult();
        }

        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(spec.ReadyTimeout);
            var first = await Task.WhenAny(local._ready.Task, local._exited.Task).WaitAsync(timeout.Token).ConfigureAwait(false);
            if (first == local._exited.Task)
            {
                throw new InvalidOperationException(
                    $"{spec.Name} exited with code {local._exited.Task.Result} before it was ready. Last output:{Environment.NewLine}{local.Tail()}");
            }

            await local._childPid.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
            return local;
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            await local.DisposeAsync().ConfigureAwait(false);
            throw new InvalidOperationException(
                $"{spec.Name} was not ready after {spec.ReadyTimeout.TotalSeconds:0} s. Last output:{Environment.NewLine}{local.Tail()}");
        }
        catch
        {
            await local.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>CPU time the program has used so far, read from /proc; zero once it has exited.</summary>
    public TimeSpan TotalProcessorTime
    {
        get
        {
            var pid = ProcessId;
            if (pid <= 0)
            {
                return TimeSpan.Zero;
            }

            try
            {
                using var process = Process.GetProcessById(pid);
                return process.TotalProcessorTime;
            }
            catch (Exception e) when (e is ArgumentException or InvalidOperationException)
            {
                return TimeSpan.Zero;
            }
        }
    }

    /// <summary>
    /// Kills the program and everything it started at once (SIGKILL to its process group), as a node's
    /// <c>kill -9</c> or an out-of-memory kill would: none of its shutdown code runs. <see cref="Exited"/>
    /// completes when it is gone; <see cref="DisposeAsync"/> is still needed to release the watchdog.
    /// </summary>
    public void Kill()
    {
        var pid = ProcessId;
        if (pid > 0 && !_exited.Task.IsCompleted)
        {
            _ = kill(-pid, SigKill);
        }
    }

    /// <summary>Asks the program to stop (SIGTERM, SIGKILL after 10 s) and waits for it.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 1)
        {
            return;
        }

        if (!_exited.Task.IsCompleted)
        {
            _ = kill(_watchdog.Id, SigTerm);
            var stopped = await Task.WhenAny(_exited.Task, Task.Delay(TimeSpan.FromSeconds(15))).ConfigureAwait(false) == _exited.Task;
            if (!stopped)
            {
                if (ProcessId > 0)
                {
                    _ = kill(ProcessId, SigKill);
                }

                _ = kill(_watchdog.Id, SigKill);
                await Task.WhenAny(_exited.Task, Task.Delay(TimeSpan.FromSeconds(5))).ConfigureAwait(false);
            }
        }

        _watchdog.Dispose();
        lock (_sync)
        {
            _log?.Dispose();
        }
    }

    private string Tail() => string.Join(Environment.NewLine, RecentOutput.TakeLast(40));

    private void OnLine(string? line)
    {
        if (line is null)
        {
            return;
        }

        if (line.StartsWith(ChildPidMarker, StringComparison.Ordinal))
        {
            if (int.TryParse(line.AsSpan(ChildPidMarker.Length), out var pid))
            {
                _childPid.TrySetResult(pid);
            }

            return;
        }

        lock (_sync)
        {
            _recent.Enqueue(line);
            if (_recent.Count > RecentLineCapacity)
            {
                _recent.Dequeue();
            }

            if (_disposed == 0 || !_exited.Task.IsCompleted)
            {
                try
                {
                    _log?.WriteLine(line);
                }
                catch (ObjectDisposedException)
                {
                    // Late output after disposal is dropped.
                }
            }
        }

        if (!_ready.Task.IsCompleted && _spec.IsReadyLine?.Invoke(line) == true)
        {
            _ready.TrySetResult();
        }

        OutputLine?.Invoke(line);
    }

    private void OnExited()
    {
        // WaitForExit() without a timeout also drains the redirected output.
        _watchdog.WaitForExit();
        _exited.TrySetResult(_watchdog.ExitCode);
    }

    [DllImport("libc", SetLastError = true)]
#pragma warning disable SA1300, IDE1006 // libc's name
    private static extern int kill(int pid, int signal);
#pragma warning restore SA1300, IDE1006
}
