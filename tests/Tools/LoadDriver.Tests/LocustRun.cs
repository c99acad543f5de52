using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;
using DroneDelivery.TestSupport;

namespace DroneDelivery.LoadDriver.Tests;

/// <summary>
/// One headless run of Locust (Debian's python3-locust; LOCUST overrides where it is found) with
/// loadtests/AzureLoadTesting/locustfile.py, its statistics read from the summary it prints at the end. A machine
/// without Locust FAILS the tests that need it, with what to install: a script nobody ran would pass
/// them silently.
/// </summary>
internal sealed partial record LocustRun(int ExitCode, string Output, IReadOnlyDictionary<string, LocustStats> Stats, IReadOnlyList<int> UserCounts)
{
    private static readonly TimeSpan Timeout = TimeSpan.FromMinutes(2);

    public static string Script { get; } = DroneDelivery.LocalProcesses.RepositoryLayout.InRepository("loadtests", "AzureLoadTesting", "locustfile.py");

    public static string Executable { get; } = Locate();

    public LocustStats this[string name] =>
        Stats.TryGetValue(name, out var stats) ? stats : throw new InvalidOperationException($"Locust recorded no '{name}'; it recorded {string.Join(", ", Stats.Keys)}.\n{Output}");

    /// <summary>Runs the script against <paramref name="host"/> with exactly <paramref name="environment"/> of the script's settings.</summary>
    public static async Task<LocustRun> StartAsync(Uri host, IReadOnlyDictionary<string, string> environment)
    {
        var directory = Directory.CreateTempSubdirectory("locust-run-");
        try
        {
            var start = new ProcessStartInfo(Executable) { WorkingDirectory = directory.FullName };
            foreach (var argument in new[] { "-f", Script, "--headless", "--host", host.AbsoluteUri.TrimEnd('/'), "--only-summary" })
            {
                start.ArgumentList.Add(argument);
            }

            // Only the settings given: none of the machine's AZURE_* or DRONEDELIVERY_* leak into a run.
            foreach (var name in start.Environment.Keys.Where(k => k.StartsWith("AZURE_", StringComparison.Ordinal) || k.StartsWith("DRONEDELIVERY_", StringComparison.Ordinal) || k.StartsWith("LOCUST_", StringComparison.Ordinal)).ToList())
            {
                start.Environment.Remove(name);
            }

            foreach (var (name, value) in environment)
            {
                start.Environment[name] = value;
            }

            var result = await ProgramRun.RunAsync(start, Timeout);
            var text = result.AllOutput;
            return new LocustRun(result.ExitCode, text, ReadSummary(text), [.. ShapeUpdate().Matches(text).Select(m => int.Parse(m.Groups[1].Value, CultureInfo.InvariantCulture))]);
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    /// <summary>
    /// The request statistics of the summary table Locust prints when it stops (its CSV files are written
    /// once a second and can miss the last one): "TYPE  NAME  # reqs  # fails(%) | ...".
    /// </summary>
    private static Dictionary<string, LocustStats> ReadSummary(string output)
    {
        var table = output.Split("Response time percentiles")[0];
        return SummaryRow().Matches(table).ToDictionary(
            m => m.Groups["name"].Value,
            m => new LocustStats(long.Parse(m.Groups["requests"].Value, CultureInfo.InvariantCulture), long.Parse(m.Groups["failures"].Value, CultureInfo.InvariantCulture)),
            StringComparer.Ordinal);
    }

    [GeneratedRegex(@"^\S+ +(?<name>\S.*?) +(?<requests>\d+) +(?<failures>\d+)\(\d+\.\d+%\) +\|", RegexOptions.Multiline)]
    private static partial Regex SummaryRow();

    /// <summary>
    /// Each user count the shape asked for, from Locust's log ("Shape test updating to N users"): its CSV
    /// history is flushed only every 10 s and loses the end of a short run.
    /// </summary>
    [GeneratedRegex(@"Shape test updating to (\d+) users")]
    private static partial Regex ShapeUpdate();

    private static string Locate()
    {
        if (Environment.GetEnvironmentVariable("LOCUST") is { Length: > 0 } configured)
        {
            return File.Exists(configured) ? configured : throw new InvalidOperationException($"LOCUST is set to '{configured}', which does not exist.");
        }

        return (Environment.GetEnvironmentVariable("PATH") ?? string.Empty)
            .Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .Select(dir => Path.Combine(dir, "locust"))
            .FirstOrDefault(File.Exists)
            ?? throw new InvalidOperationException(
                "The Azure Load Testing script's tests need Locust and cannot find it: install Debian's python3-locust " +
                "(.ci/setup does), put locust on PATH, or set LOCUST to its path.");
    }
}

/// <summary>One line of Locust's statistics.</summary>
internal sealed record LocustStats(long Requests, long Failures);
