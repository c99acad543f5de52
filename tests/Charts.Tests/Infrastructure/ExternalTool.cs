using System.Diagnostics;
using System.Text;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>The result of running a command-line tool to completion.</summary>
public sealed record ToolResult(int ExitCode, string StandardOutput, string StandardError)
{
    public string Describe() => $"exit code {ExitCode}\n--- stdout ---\n{StandardOutput}\n--- stderr ---\n{StandardError}";
}

/// <summary>
/// helm and kubeconform: found through an environment variable (HELM, KUBECONFORM), then PATH,
/// then the shared tool folder beside the checkout (CI) or /work/shared/bin. Missing tools FAIL
/// the tests with a message saying what to install or set: chart tests that silently skip would
/// let a broken chart through.
/// </summary>
public static class ExternalTool
{
    // A bound for a hung tool, not a speed requirement: on a machine whose cores are busy with other work a
    // Bicep build that takes 5 s alone has taken over a minute.
    private static readonly TimeSpan Timeout = TimeSpan.FromMinutes(5);

    public static string Helm { get; } = Locate("helm", "HELM");

    public static string Kubeconform { get; } = Locate("kubeconform", "KUBECONFORM");

    /// <summary>
    /// The Bicep CLI: BICEP, else the package the test project restores (Azure.Bicep.CommandLine.linux-x64).
    /// NuGet does not keep a file's execute bit, so it is set here.
    /// </summary>
    public static string Bicep { get; } = LocateBicep();

    /// <summary>Kubernetes 1.33 standalone-strict JSON schemas (KUBERNETES_SCHEMAS overrides).</summary>
    public static string KubernetesSchemas { get; } = LocateSchemas();

    public static string[] SharedFolders(params string[] parts) =>
    [
        Path.GetFullPath(Path.Combine([RepositoryLayout.Root, "..", "shared", .. parts])),
        Path.Combine(["/work/shared", .. parts]),
    ];

    public static ToolResult Run(string tool, IEnumerable<string> arguments, string? workingDirectory = null, IReadOnlyDictionary<string, string>? environment = null)
    {
        var start = new ProcessStartInfo(tool)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
            WorkingDirectory = workingDirectory ?? RepositoryLayout.Root,
        };
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        using var process = Process.Start(start) ?? throw new InvalidOperationException($"Cannot start {tool}.");
        var stdout = new StringBuilder();
        var stderr = new StringBuilder();
        process.OutputDataReceived += (_, e) => { if (e.Data is not null) { lock (stdout) { stdout.Append(e.Data).Append('\n'); } } };
        process.ErrorDataReceived += (_, e) => { if (e.Data is not null) { lock (stderr) { stderr.Append(e.Data).Append('\n'); } } };
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        if (!process.WaitForExit(Timeout))
        {
            process.Kill(entireProcessTree: true);
            throw new TimeoutException($"{Path.GetFileName(tool)} {string.Join(' ', start.ArgumentList)} did not finish within {Timeout.TotalSeconds} s.");
        }

        process.WaitForExit();
        return new ToolResult(process.ExitCode, stdout.ToString(), stderr.ToString());
    }

    private static string Locate(string name, string variable)
    {
        if (Configured(variable) is { } configured)
        {
            return configured;
        }

        var candidates = (Environment.GetEnvironmentVariable("PATH") ?? string.Empty)
            .Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .Select(dir => Path.Combine(dir, name))
            .Concat(SharedFolders("bin", name));
        return candidates.FirstOrDefault(File.Exists)
            ?? throw new InvalidOperationException(
                $"The chart tests need '{name}' and cannot find it: set {variable} to its path, put it on PATH, " +
                $"or provide {string.Join(" or ", SharedFolders("bin", name))}.");
    }

    /// <summary>The tool path an environment variable names, if set; a path that does not exist is an error.</summary>
    private static string? Configured(string variable)
    {
        var configured = Environment.GetEnvironmentVariable(variable);
        if (string.IsNullOrWhiteSpace(configured))
        {
            return null;
        }

        return File.Exists(configured)
            ? configured
            : throw new InvalidOperationException($"{variable} is set to '{configured}', which does not exist.");
    }

    private static string LocateBicep()
    {
        if (Configured("BICEP") is { } configured)
        {
            return configured;
        }

        var restored = typeof(ExternalTool).Assembly
            .GetCustomAttributes(typeof(System.Reflection.AssemblyMetadataAttribute), inherit: false)
            .Cast<System.Reflection.AssemblyMetadataAttribute>()
            .FirstOrDefault(a => a.Key == "BicepCli")?.Value;
        if (restored is null || !File.Exists(restored))
        {
            throw new InvalidOperationException(
                $"The infrastructure tests need the Bicep CLI and cannot find it at '{restored}': restore the test project " +
                "(it downloads Azure.Bicep.CommandLine.linux-x64) or set BICEP to a bicep executable.");
        }

        if (!OperatingSystem.IsWindows())
        {
            File.SetUnixFileMode(restored, File.GetUnixFileMode(restored) | UnixFileMode.UserExecute | UnixFileMode.GroupExecute | UnixFileMode.OtherExecute);
        }

        return restored;
    }

    private static string LocateSchemas()
    {
        const string folder = "v1.33.0-standalone-strict";
        var configured = Environment.GetEnvironmentVariable("KUBERNETES_SCHEMAS");
        if (!string.IsNullOrWhiteSpace(configured))
        {
            return Directory.Exists(configured)
                ? configured
                : throw new InvalidOperationException($"KUBERNETES_SCHEMAS is set to '{configured}', which does not exist.");
        }

        return SharedFolders("k8s-schemas", folder).FirstOrDefault(Directory.Exists)
            ?? throw new InvalidOperationException(
                $"The chart tests need the Kubernetes 1.33 JSON schemas ({folder}) for kubeconform and cannot find them: " +
                $"set KUBERNETES_SCHEMAS or provide {string.Join(" or ", SharedFolders("k8s-schemas", folder))}.");
    }
}
