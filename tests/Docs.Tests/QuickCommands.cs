using System.Security.Cryptography;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Docs.Tests;

/// <summary>
/// The commands of the docs' code blocks that run locally in seconds and start nothing: any program's <c>--help</c>,
/// the lab's <c>calibration</c> (its built-in profiles), and the load driver's <c>token</c>. Each runs on the built
/// program in a folder of its own, where a <c>--signing-key-file</c> it names holds a fresh development key.
/// </summary>
public static class QuickCommands
{
    private static readonly TimeSpan Timeout = TimeSpan.FromMinutes(2);

    public static bool IsQuick(DocumentedCommand command)
    {
        if (!command.InCodeBlock || command.IsSynopsis)
        {
            return false;
        }

        var arguments = command.Arguments;
        return arguments.Contains("--help") ||
               (command.Program.Folder == "src/Tools/Lab" && arguments is ["calibration"] or ["calibration", "default" or "no-latency"]) ||
               (command.Program.Folder == "src/Tools/LoadDriver" && arguments.FirstOrDefault() == "token");
    }

    /// <summary>Runs the command; a problem when it exits with anything but 0 or prints nothing.</summary>
    public static async Task<string?> ProblemAsync(DocumentedCommand command, string where)
    {
        var directory = Directory.CreateTempSubdirectory("docs-command-").FullName;
        try
        {
            var arguments = command.Arguments.ToList();
            var keyFile = arguments.IndexOf("--signing-key-file");
            if (keyFile >= 0 && keyFile + 1 < arguments.Count)
            {
                var path = Path.Combine(directory, arguments[keyFile + 1]);
                Directory.CreateDirectory(Path.GetDirectoryName(path)!);
                await File.WriteAllTextAsync(path, Convert.ToBase64String(RandomNumberGenerator.GetBytes(32)));
            }

            ProgramResult result;
            try
            {
                result = await ProgramRun.RunAsync(ProgramRun.Project(command.Program.Assembly, arguments, directory), Timeout);
            }
            catch (TimeoutException e)
            {
                return $"{where}: {e.Message}";
            }

            return result.ExitCode != 0 || result.Output.Trim().Length == 0
                ? $"{where}: '{command}' exited with {result.ExitCode}: {result.AllOutput}"
                : null;
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }
}
