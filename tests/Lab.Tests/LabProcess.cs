using System.Diagnostics;
using System.Text;
using DroneDelivery.LocalSystem;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The lab as a user runs it: <c>dotnet DroneDelivery.Lab.dll …</c> in its own process, tagged with
/// an environment variable every process it starts inherits, so a test can find any it left behind.
/// </summary>
internal sealed class LabProcess : IDisposable
{
    private const string MarkerVariable = "DRONEDELIVERY_LAB_TEST_RUN";
    private readonly Process _process;
    private readonly StringBuilder _output = new();
    private readonly string _marker = Guid.NewGuid().ToString("N");

    public LabProcess(params string[] arguments)
    {
        var start = new ProcessStartInfo("dotnet")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
        };
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
    }

    public int Id => _process.Id;

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

    /// <summary>Waits for the lab to exit by itself; kills it (and fails) after <paramref name="timeout"/>.</summary>
    public async Task<int> ExitCodeAsync(TimeSpan timeout)
    {
        using var deadline = new CancellationTokenSource(timeout);
        try
        {
            await _process.WaitForExitAsync(deadline.Token);
        }
        catch (OperationCanceledException)
        {
            _process.Kill(entireProcessTree: true);
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
    public IReadOnlyList<string> Leftovers()
    {
        var found = new List<string>();
        var needle = Encoding.ASCII.GetBytes($"{MarkerVariable}={_marker}");
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
                    found.Add($"{pid}: {File.ReadAllText(Path.Combine(directory, "cmdline")).Replace('\0', ' ')}");
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
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
        }

        _process.Dispose();
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
