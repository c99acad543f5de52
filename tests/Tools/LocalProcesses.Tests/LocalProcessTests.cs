using System.Diagnostics;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

namespace DroneDelivery.LocalProcesses.Tests;

public class LocalProcessTests
{
    [Fact]
    public async Task Start_waits_for_the_ready_line()
    {
        await using var process = await LocalProcess.StartAsync(new LocalProcessSpec
        {
            Name = "ready-later",
            FileName = "/bin/sh",
            Arguments = ["-c", "sleep 0.3; echo warming; echo now listening; sleep 30"],
            IsReadyLine = line => line.Contains("listening", StringComparison.Ordinal),
        });

        Assert.Contains("warming", process.RecentOutput);
        Assert.True(process.ProcessId > 0);
        Assert.False(process.Exited.IsCompleted);
    }

    [Fact]
    public async Task A_program_that_exits_before_ready_fails_start_with_its_output()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => LocalProcess.StartAsync(new LocalProcessSpec
        {
            Name = "crasher",
            FileName = "/bin/sh",
            Arguments = ["-c", "echo 'bad setting Foo'; exit 3"],
            IsReadyLine = _ => false,
        }));

        Assert.Contains("exited with code 3", error.Message);
        Assert.Contains("bad setting Foo", error.Message);
    }

    [Fact]
    public async Task A_program_that_never_gets_ready_times_out_and_is_stopped()
    {
        var marker = Path.Combine(Path.GetTempPath(), $"never-ready-{Guid.NewGuid():N}");
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => LocalProcess.StartAsync(new LocalProcessSpec
        {
            Name = "never-ready",
            FileName = "/bin/sh",
            Arguments = ["-c", $"echo $$ > {marker}; exec sleep 60"],
            IsReadyLine = _ => false,
            // Long enough for a shell to start and write its pid on a busy machine; the test proves the
            // time-out ends a program that never gets ready, not how quickly.
            ReadyTimeout = TimeSpan.FromSeconds(5),
        }));

        Assert.Contains("not ready after", error.Message);
        // The shell writes its pid first thing, but on a busy machine the file may appear only now.
        Assert.True(
            await Eventually.TrueAsync(() => File.Exists(marker) && File.ReadAllText(marker).EndsWith('\n'), TimeSpan.FromSeconds(15)),
            "The program never wrote its pid.");
        var pid = int.Parse(File.ReadAllText(marker).Trim());
        Assert.True(await Eventually.TrueAsync(() => !IsAlive(pid), TimeSpan.FromSeconds(15)));
    }

    [Fact]
    public async Task Dispose_stops_the_program()
    {
        var process = await LocalProcess.StartAsync(new LocalProcessSpec
        {
            Name = "sleeper",
            FileName = "/bin/sleep",
            Arguments = ["60"],
        });
        var pid = process.ProcessId;
        Assert.True(IsAlive(pid));

        await process.DisposeAsync();

        Assert.True(process.Exited.IsCompleted);
        Assert.False(IsAlive(pid));
    }

    [Fact]
    public async Task Dispose_also_stops_what_the_program_started()
    {
        var pidFile = Path.Combine(Path.GetTempPath(), $"grandchild-{Guid.NewGuid():N}");
        var process = await LocalProcess.StartAsync(new LocalProcessSpec
        {
            Name = "parent-of-sleeper",
            FileName = "/bin/sh",
            Arguments = ["-c", $"sleep 120 & echo $! > {pidFile}; echo started; wait"],
            IsReadyLine = line => line == "started",
        });
        var grandchild = int.Parse((await File.ReadAllTextAsync(pidFile)).Trim());

        await process.DisposeAsync();

        Assert.True(await Eventually.TrueAsync(() => !IsAlive(grandchild), TimeSpan.FromSeconds(5)), "the grandchild outlived the stop");
    }

    [Fact]
    public async Task The_child_dies_when_its_parent_is_killed()
    {
        // A parent shell plays the part of a lab that is SIGKILLed: it runs the real watchdog
        // script around a sleeper and is then killed, so none of our cleanup code runs.
        var pidFile = Path.Combine(Path.GetTempPath(), $"orphan-{Guid.NewGuid():N}");
        var scriptFile = Path.Combine(Path.GetTempPath(), $"watchdog-{Guid.NewGuid():N}.sh");
        await File.WriteAllTextAsync(scriptFile, LocalProcess.WatchdogScript);
        var parentScript = $"/bin/sh {scriptFile} $$ /bin/sh -c 'echo $$ > {pidFile}; exec sleep 120' & sleep 120";
        using var parent = Process.Start(new ProcessStartInfo("/bin/sh", ["-c", parentScript]) { RedirectStandardError = true })!;
        Assert.True(await Eventually.TrueAsync(() => File.Exists(pidFile) && File.ReadAllText(pidFile).Trim().Length > 0, TimeSpan.FromSeconds(10)));
        var child = int.Parse(File.ReadAllText(pidFile).Trim());
        Assert.True(IsAlive(child));

        parent.Kill();

        Assert.True(await Eventually.TrueAsync(() => !IsAlive(child), TimeSpan.FromSeconds(10)), "the child outlived its parent");
    }

    [Fact]
    public async Task A_stop_at_any_moment_of_the_watchdogs_start_leaves_no_command_running()
    {
        // The trap must be in place before the command starts: a TERM between the two ended the shell by
        // default and left the command running with no one to stop it.
        var script = LocalProcess.WatchdogScript;
        Assert.True(script.IndexOf("trap stop", StringComparison.Ordinal) < script.IndexOf("setsid", StringComparison.Ordinal), script);

        // And the behaviour, at stops spread over the shell's first milliseconds.
        var marker = $"{Random.Shared.Next(100, 999)}.{Environment.ProcessId}{Random.Shared.Next(1000, 9999)}";
        for (var i = 0; i < 12; i++)
        {
            var start = new ProcessStartInfo("/bin/sh") { RedirectStandardError = true, RedirectStandardOutput = true };
            foreach (var argument in new[] { "-c", LocalProcess.WatchdogScript, "watchdog", Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture), "sleep", marker })
            {
                start.ArgumentList.Add(argument);
            }

            using var watchdog = Process.Start(start)!;
            Thread.SpinWait(i * 6_000);
            _ = kill(watchdog.Id, 15);
            Assert.True(watchdog.WaitForExit(TimeSpan.FromSeconds(20)), $"the watchdog did not end after a TERM at attempt {i}");
        }

        Assert.True(await Eventually.TrueAsync(() => Sleepers(marker).Count == 0, TimeSpan.FromSeconds(15)), $"left running: {string.Join(", ", Sleepers(marker))}");
    }

    private static List<int> Sleepers(string marker) =>
        [.. Directory.EnumerateDirectories("/proc")
            .Select(d => int.TryParse(Path.GetFileName(d), out var pid) ? pid : -1)
            .Where(pid => pid > 0 && CommandLine(pid).Contains(marker, StringComparison.Ordinal))];

    private static string CommandLine(int pid)
    {
        try
        {
            return File.ReadAllText($"/proc/{pid}/cmdline").Replace('\0', ' ');
        }
        catch (IOException)
        {
            return string.Empty;
        }
        catch (UnauthorizedAccessException)
        {
            return string.Empty;
        }
    }

    [System.Runtime.InteropServices.DllImport("libc", SetLastError = true)]
#pragma warning disable SA1300, IDE1006 // libc's name
    private static extern int kill(int pid, int signal);
#pragma warning restore SA1300, IDE1006

    private static bool IsAlive(int pid)
    {
        try
        {
            using var p = Process.GetProcessById(pid);
            return !p.HasExited && !File.ReadAllText($"/proc/{pid}/stat").Contains(") Z ", StringComparison.Ordinal);
        }
        catch (Exception e) when (e is ArgumentException or InvalidOperationException or IOException)
        {
            return false;
        }
    }
}
