using System.Globalization;
using DroneDelivery.Lab.Deployment;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// The runtime settings every process the lab starts inherits, on a real process: the Cosmos DB emulator (an ASP.NET
/// Core host like every service) started in a directory with many subdirectories, as the lab's processes start in
/// the repository.
/// </summary>
public sealed class ChildRuntimeTests
{
    private const int Subdirectories = 150;

    [Fact]
    public async Task A_process_the_lab_starts_watches_no_directory_for_configuration_changes()
    {
        var directory = Directory.CreateTempSubdirectory("child-runtime-test-");
        try
        {
            for (var i = 0; i < Subdirectories; i++)
            {
                Directory.CreateDirectory(Path.Combine(directory.FullName, $"d{i}", "nested"));
            }

            var watches = await InotifyWatchesAsync(directory.FullName, ChildRuntime.Variables);

            // Without the setting the host watches every directory below its content root: 2 × 150 + 1 here.
            Assert.Equal(0, watches);
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    [Fact]
    public async Task Without_the_setting_the_host_would_watch_every_directory_below_where_it_starts()
    {
        // The reason for the setting, shown on the same process: the runtime's default watches recursively.
        var directory = Directory.CreateTempSubdirectory("child-runtime-test-");
        try
        {
            for (var i = 0; i < Subdirectories; i++)
            {
                Directory.CreateDirectory(Path.Combine(directory.FullName, $"d{i}"));
            }

            var defaults = ChildRuntime.Variables.Where(v => v.Key != "DOTNET_hostBuilder__reloadConfigOnChange").ToDictionary();

            Assert.True(await InotifyWatchesAsync(directory.FullName, defaults) > Subdirectories);
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    [Fact]
    public async Task A_process_the_lab_starts_compiles_each_method_once_optimised()
    {
        // The runtime's JIT names the tier of every method it compiles, one line each, as it compiles them.
        var summary = Path.Combine(Path.GetTempPath(), $"child-runtime-jit-{Guid.NewGuid():N}.txt");
        var variables = ChildRuntime.Variables.ToDictionary(v => v.Key, v => (string?)v.Value);
        variables["DOTNET_JitDisasmSummary"] = "1";
        variables["DOTNET_JitStdOutFile"] = summary;
        try
        {
            string[] compiled;
            await using (var emulator = await StartEmulatorAsync(variables))
            {
                // Past the 30 calls after which a tiered runtime recompiles a method: what serves requests
                // here is what would be recompiled.
                using var http = new HttpClient { BaseAddress = new Uri(emulator.RecentOutput.Single(line => line.StartsWith(ReadyLine, StringComparison.Ordinal))[ReadyLine.Length..]) };
                for (var i = 0; i < 100; i++)
                {
                    using var response = await http.GetAsync(new Uri("/", UriKind.Relative));
                }

                compiled = await ReadSharedAsync(summary);
            }

            Assert.Contains(compiled, line => line.Contains("[FullOpts", StringComparison.Ordinal));

            // With the runtime's defaults over 500 methods have run unoptimised (Tier0) by the time the emulator is
            // ready, each to be compiled again in the background once called 30 times (Tier1).
            Assert.DoesNotContain(compiled, line => line.Contains("[Tier0", StringComparison.Ordinal) || line.Contains("[Tier1", StringComparison.Ordinal) || line.Contains("Instrumented", StringComparison.Ordinal) || line.Contains("[MinOpts", StringComparison.Ordinal));
        }
        finally
        {
            File.Delete(summary);
        }
    }

    private const string ReadyLine = "Cosmos DB emulator ready on ";

    /// <summary>The Cosmos DB emulator (an ASP.NET Core host like every service) with these variables, once ready.</summary>
    private static Task<LocalProcess> StartEmulatorAsync(IReadOnlyDictionary<string, string?> variables, string? workingDirectory = null) =>
        LocalProcess.StartAsync(
            LocalProcessSpec.ForProject("cosmos-emulator", "DroneDelivery.Emulators.CosmosDb", "--port", "0") with
            {
                WorkingDirectory = workingDirectory,
                Environment = variables,
                IsReadyLine = line => line.StartsWith(ReadyLine, StringComparison.Ordinal),
            });

    /// <summary>The lines of a file another process is still writing.</summary>
    private static async Task<string[]> ReadSharedAsync(string path)
    {
        if (!File.Exists(path))
        {
            return [];
        }

        await using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite);
        using var reader = new StreamReader(stream);
        return (await reader.ReadToEndAsync()).Split('\n');
    }

    /// <summary>The inotify watches the started emulator holds once it is ready (Linux: its file descriptors' fdinfo).</summary>
    private static async Task<int> InotifyWatchesAsync(string workingDirectory, IReadOnlyDictionary<string, string> variables)
    {
        await using var emulator = await StartEmulatorAsync(variables.ToDictionary(v => v.Key, v => (string?)v.Value), workingDirectory);
        var descriptors = $"/proc/{emulator.ProcessId.ToString(CultureInfo.InvariantCulture)}/fd";
        var watches = 0;
        foreach (var descriptor in Directory.EnumerateFileSystemEntries(descriptors))
        {
            if (new FileInfo(descriptor).LinkTarget == "anon_inode:inotify")
            {
                var info = await File.ReadAllLinesAsync($"/proc/{emulator.ProcessId.ToString(CultureInfo.InvariantCulture)}/fdinfo/{Path.GetFileName(descriptor)}");
                watches += info.Count(line => line.StartsWith("inotify ", StringComparison.Ordinal));
            }
        }

        return watches;
    }
}
