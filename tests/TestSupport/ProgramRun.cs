using System.Diagnostics;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.TestSupport;

/// <summary>What a program that ran to its end printed, and how it ended.</summary>
public sealed record ProgramResult(int ExitCode, string Output, string Error)
{
    /// <summary>Standard output, then standard error.</summary>
    public string AllOutput => Output + Error;
}

/// <summary>Runs a program to its end, reading all it prints; a program still running after the time-out is killed and fails the run.</summary>
public static class ProgramRun
{
    /// <summary>The built program of one of the repository's projects (<c>dotnet artifacts/bin/…/Project.dll</c>).</summary>
    public static ProcessStartInfo Project(string projectName, IEnumerable<string> arguments, string? workingDirectory = null)
    {
        var start = new ProcessStartInfo("dotnet") { WorkingDirectory = workingDirectory ?? Environment.CurrentDirectory };
        start.ArgumentList.Add(RepositoryLayout.ProjectAssembly(projectName));
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        return start;
    }

    public static async Task<ProgramResult> RunAsync(ProcessStartInfo start, TimeSpan timeout)
    {
        start.RedirectStandardOutput = true;
        start.RedirectStandardError = true;
        using var process = Process.Start(start)!;
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        using var cancel = new CancellationTokenSource(timeout);
        try
        {
            await process.WaitForExitAsync(cancel.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"'{start.FileName} {string.Join(' ', start.ArgumentList)}' did not end within {timeout.TotalSeconds} s.");
        }

        return new ProgramResult(process.ExitCode, await output, await error);
    }
}
